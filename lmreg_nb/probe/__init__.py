"""Live-test a school's chat endpoint: conformance checks, streaming figures, load test.

```python
target = Target.from_settings(settings)                   # LMREG_MODEL_URL, _API_KEY, _NAME
report = check_endpoint(target, requests=50, concurrency=8)
report.ok; report.checks_frame(); report.summary; report.figure()
for piece in stream_chat(target, "Hello"): print(piece, end="")

target = Target.from_registered(settings, "campus-llm")   # as the platform will call it
report = check_endpoint(target, chat_prompt="Hello")
report.chat_reply; report.chat_error                      # the reply, streamed meanwhile
```

Modules: ``target`` (the endpoint: one value), ``shapes`` (the OpenAI reply
shapes), ``sse`` (event-stream decoder), ``reply`` (what a reply said, for every
reader), ``exchange`` (one recorded request), ``stream_client`` (the lean
client of the load test and the capacity search), ``reasons`` (why a
connection failed), ``checks`` (the conformance rows), ``golive`` and ``tls``
(the go-live rows), ``suite`` (every request at once, then the rows), ``chat``
(one streamed chat reply: ``stream_chat``), ``metrics``, ``load``, ``levels``
and ``capacity``, ``plots``, ``blocking`` (blocking twins of the coroutines),
``report`` (this package's public face).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> module that defines it: imported on first use, so importing one
# module of the package (the onboarding's first cells) does not import them all.
_EXPORTS: dict[str, str] = {
    "ChatEndpointError": "chat",
    "CheckResult": "checks",
    "EndpointReport": "report",
    "Reply": "reply",
    "SSEDecoder": "sse",
    "ServerSentEvent": "sse",
    "Target": "target",
    "check_endpoint": "report",
    "check_endpoint_async": "report",
    "format_report": "report",
    "stream_chat": "chat",
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
    from .chat import ChatEndpointError, stream_chat
    from .checks import CheckResult
    from .reply import Reply
    from .report import EndpointReport, check_endpoint, check_endpoint_async, format_report
    from .sse import ServerSentEvent, SSEDecoder
    from .target import Target
