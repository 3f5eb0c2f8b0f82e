"""Live-test a school's chat endpoint: conformance checks, streaming figures, load test.

```python
target = Target.from_settings(settings)                   # LMREG_MODEL_URL, _API_KEY, _NAME
report = check_endpoint(target, requests=50, concurrency=8)
report.ok; report.checks_frame(); report.performance; report.figure()
for piece in stream_chat(target, "Hello"): print(piece, end="")

target = Target.from_registered(settings, "campus-llm")   # as the platform will call it
report = check_endpoint(target, chat_prompt="Hello")
report.chat_reply; report.chat_error                      # the reply, streamed meanwhile
```

Rooms (presentation imports results, never the other way):

- ``wire/``: the bytes on the wire: ``sse`` (event-stream decoder), ``shapes``
  (OpenAI reply shapes), ``reply`` (what a reply said, for every reader),
  ``exchange`` (one recorded request), ``stream_client`` and ``keepalive`` (the
  lean client of the load test and the capacity search), ``chat``
  (``stream_chat``), ``reasons`` (why a connection failed), ``tls``, ``pool``;
- ``checks/``: the rows: ``conformance``, ``golive``, ``streams``, ``function``,
  ``context_window`` (with ``llamacpp`` and ``token_counts``), and ``suite``,
  which sends every check's request at once;
- ``load/``: the load test (``fixed``), the class workload, capacity levels,
  their settling and the search, and the capacity result;
- ``text/``: the capacity verdict, table and charts;
- at the top: ``target`` (the endpoint: one value), ``report`` (this
  package's public face) and ``blocking`` (blocking twins of the coroutines).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> module that defines it: imported on first use, so importing one
# module of the package (the onboarding's first cells) does not import them all.
_EXPORTS: dict[str, str] = {
    "ChatEndpointError": "wire.chat",
    "CheckResult": "checks.conformance",
    "EndpointReport": "report",
    "Reply": "wire.reply",
    "SSEDecoder": "wire.sse",
    "ServerSentEvent": "wire.sse",
    "Target": "target",
    "check_endpoint": "report",
    "check_endpoint_async": "report",
    "format_report": "report",
    "stream_chat": "wire.chat",
}

__all__ = [
    "ChatEndpointError",
    "CheckResult",
    "EndpointReport",
    "Reply",
    "SSEDecoder",
    "ServerSentEvent",
    "Target",
    "check_endpoint",
    "check_endpoint_async",
    "format_report",
    "stream_chat",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:
    from .checks.conformance import CheckResult
    from .report import EndpointReport, check_endpoint, check_endpoint_async, format_report
    from .target import Target
    from .wire.chat import ChatEndpointError, stream_chat
    from .wire.reply import Reply
    from .wire.sse import ServerSentEvent, SSEDecoder
