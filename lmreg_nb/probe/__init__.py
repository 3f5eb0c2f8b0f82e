"""Live-test a school's chat endpoint: conformance checks, streaming figures, load test.

```python
report = check_endpoint(url, api_key, model, requests=50, concurrency=8)
report.ok; report.checks_frame(); report.summary; report.figure()
for piece in stream_chat(url, api_key, model, "Hello"): print(piece, end="")

target = registered_target(settings, "campus-llm")        # as the platform will call it
report = check_endpoint(target.url, target.api_key, target.model,
                        also_name=target.registered_name, chat_prompt="Hello")
report.chat_reply; report.chat_error                      # the reply, streamed meanwhile
```

Modules: ``shapes`` (the OpenAI reply shapes), ``sse`` (event-stream decoder),
``exchange`` (one recorded request), ``reasons`` (why a connection failed),
``checks`` (the conformance rows), ``golive`` and ``tls`` (the go-live rows),
``suite`` (every request at once, then the rows), ``chat`` (one streamed chat
reply: ``stream_chat``), ``registered`` (the model as registered), ``metrics``,
``load``, ``plots``, ``report`` (this package's public face).
"""

from __future__ import annotations

from .chat import ChatEndpointError, stream_chat
from .checks import CheckResult
from .registered import ChatTarget, registered_target
from .report import EndpointReport, check_endpoint, check_endpoint_async, format_report
from .sse import ServerSentEvent, SSEDecoder

__all__ = [
    "ChatEndpointError",
    "ChatTarget",
    "CheckResult",
    "EndpointReport",
    "SSEDecoder",
    "ServerSentEvent",
    "check_endpoint",
    "check_endpoint_async",
    "format_report",
    "registered_target",
    "stream_chat",
]
