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

from .checks.conformance import CheckResult
from .report import EndpointReport, check_endpoint, check_endpoint_async, format_report
from .target import Target
from .wire.chat import ChatEndpointError, stream_chat
from .wire.reply import Reply
from .wire.sse import ServerSentEvent, SSEDecoder

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
