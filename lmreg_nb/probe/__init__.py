"""Live-test a school's chat endpoint: conformance checks, streaming figures, load test.

```python
report = check_endpoint(url, api_key, model, requests=50, concurrency=8)
report.ok; report.checks_frame(); report.summary; report.figure()
for piece in stream_chat(url, api_key, model, "Hello"): print(piece, end="")
```

Modules: ``sse`` (event-stream decoder), ``exchange`` (one recorded request),
``checks`` (the conformance rows), ``metrics`` (figures), ``load`` (the load
test), ``plots`` (figures), ``report`` (this package's public face).
"""

from __future__ import annotations

from .checks import CheckResult
from .report import (
    ChatEndpointError,
    EndpointReport,
    check_endpoint,
    check_endpoint_async,
    format_report,
    stream_chat,
)
from .sse import ServerSentEvent, SSEDecoder

__all__ = [
    "ChatEndpointError",
    "CheckResult",
    "EndpointReport",
    "SSEDecoder",
    "ServerSentEvent",
    "check_endpoint",
    "check_endpoint_async",
    "format_report",
    "stream_chat",
]
