"""`capacity` stops at the first level where every request got the same refusal (401, 404)
and points to `check` (found by the user pass of the fifth release).

Before: `lmreg-nb capacity http://HOST:PORT/v1` (the most common mistake) or a wrong key
sent 120 requests over three levels, drew a table of "✘" levels and ended on the raw
"status 404: Not Found" / "status 401: ...": a connection refused stopped at once
(issue 40 item 7), an answer that refuses every request alike did not.
A small HTTP server on loopback (the load client speaks to a real socket).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from lmreg_nb.probe.load.capacity import SLO, find_capacity
from lmreg_nb.probe.target import Target
from lmreg_nb.probe.text.capacity_text import verdict

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


class _Refuses(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        status = 401 if self.path.startswith("/key/") else 404
        body = b'{"error": "Unauthorized"}' if status == 401 else b'{"detail": "Not Found"}'
        # The search stops once a level was refused alike and closes its connections: a
        # reply still being written then meets a closed socket (not a failure of the test).
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    do_GET = do_POST


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refuses)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("path", ["/v1", "/key/v1/chat/completions"])
def test_one_level_then_the_pointer_to_check(base: str, path: str, lang: str) -> None:
    target = Target(base + path, "sk-refused-0123456789", "m", timeout=5)
    result = find_capacity(target, slo=SLO(), need=4, budget_s=60)
    assert len(result.levels) == 1, [lv.concurrency for lv in result.levels]
    assert result.capacity.concurrency == 0
    said = verdict(result, 4)
    assert "lmreg-nb check" in said, said
