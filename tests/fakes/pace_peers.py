"""Chat endpoints whose replies start at once and then come too slowly for a class to read.

``with pace_server() as base:`` serves, on one free loopback port (raw sockets, a thread
per connection), a behaviour per path's first segment; each answers a whole (not
streamed) request at once with one token and a usage count, as the capacity
search's calibration asks, and streams as follows:

``/slow-decode/...`` one token every 300 ms (twice the 150 ms reading pace)
``/ping-stall/...``  one token, then only ``: ping`` comments, for two minutes
``/usage-lie/...``   5 tokens 1.5 s apart, then ``usage.completion_tokens`` 100000
``/freeze/...``      one token, 8 s of silence, then the rest at 20 ms a token

Each first token comes after 20 ms: the first-token SLO alone would call every one of
them ready for a class. Written apart from the toolkit's mock (no shared code), as a
school's server would be. Every stream is bounded (``CAP_SECONDS``) and stops when the
client goes away.
"""

from __future__ import annotations

import contextlib
import json
import socket
import socketserver
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

#: The longest any stream here lasts (the ping stall's two minutes).
CAP_SECONDS = 120.0
#: The behaviours served, by their path's first segment.
PEERS = ("slow-decode", "ping-stall", "usage-lie", "freeze")
#: What each one breaks (the capacity's ``limited_by`` for a class of 40).
LIMITED_BY = {"slow-decode": "itl", "ping-stall": "errors", "usage-lie": "itl", "freeze": "errors"}


def _event(obj: object) -> bytes:
    return f"data: {json.dumps(obj, ensure_ascii=False)}\n\n".encode()


def _piece(text: str, finish: str | None = None) -> bytes:
    return _event(
        {"id": "p", "object": "chat.completion.chunk",
         "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}
    )  # fmt: skip


def _end(completion_tokens: int, prompt_tokens: int) -> bytes:
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
             "total_tokens": prompt_tokens + completion_tokens}  # fmt: skip
    stop = {"id": "p", "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}  # fmt: skip
    tail = {"id": "p", "object": "chat.completion.chunk", "choices": [], "usage": usage}
    return _event(stop) + _event(tail) + b"data: [DONE]\n\n"


_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.settimeout(10)
        data = b""
        with contextlib.suppress(OSError):
            while b"\r\n\r\n" not in data and len(data) < 1 << 20:
                got = sock.recv(65536)
                if not got:
                    return
                data += got
            head, _, rest = data.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            headers = {k.strip().lower(): v.strip() for k, _, v in
                       (line.partition(":") for line in lines[1:])}  # fmt: skip
            length = min(int(headers.get("content-length", "0") or 0), 16 << 20)
            while len(rest) < length:
                got = sock.recv(65536)
                if not got:
                    return
                rest += got
            body = json.loads(rest) if rest[:1] == b"{" else {}
            kind = lines[0].split(" ")[1].strip("/").split("/")[0]
            text = " ".join(str(m.get("content", "")) for m in body.get("messages") or [])
            prompt = max(1, len(text))  # one token per character: good enough here
            if not body.get("stream"):
                self._whole(sock, prompt)
                return
            sock.sendall(_HEAD)
            time.sleep(0.02)
            sock.sendall(_piece("好"))
            getattr(self, "do_" + kind.replace("-", "_"))(sock, body, prompt)

    def _whole(self, sock: socket.socket, prompt: int) -> None:
        reply = {"id": "p", "object": "chat.completion",
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": "好"},
                              "finish_reason": "length"}],
                 "usage": {"prompt_tokens": prompt, "completion_tokens": 1,
                           "total_tokens": prompt + 1}}  # fmt: skip
        raw = json.dumps(reply, ensure_ascii=False).encode()
        sock.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
            + f"Content-Length: {len(raw)}\r\n\r\n".encode()
            + raw
        )

    @staticmethod
    def _tokens(sock: socket.socket, count: int, every_s: float) -> None:
        start = time.monotonic()
        for _ in range(count):
            if time.monotonic() - start > CAP_SECONDS:
                return
            time.sleep(every_s)
            sock.sendall(_piece("的"))

    def do_slow_decode(self, sock: socket.socket, body: dict, prompt: int) -> None:
        tokens = int(body.get("max_tokens") or 64)
        self._tokens(sock, tokens - 1, 0.3)
        sock.sendall(_end(tokens, prompt))

    def do_ping_stall(self, sock: socket.socket, body: dict, prompt: int) -> None:
        start = time.monotonic()
        while time.monotonic() - start < CAP_SECONDS:
            time.sleep(0.5)
            sock.sendall(b": ping\n\n")
        sock.sendall(_end(1, prompt))

    def do_usage_lie(self, sock: socket.socket, body: dict, prompt: int) -> None:
        self._tokens(sock, 4, 1.5)
        sock.sendall(_end(100_000, prompt))

    def do_freeze(self, sock: socket.socket, body: dict, prompt: int) -> None:
        tokens = int(body.get("max_tokens") or 64)
        time.sleep(8.0)
        self._tokens(sock, tokens - 1, 0.02)
        sock.sendall(_end(tokens, prompt))


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256  # a class of 40 and its margin connect at once

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)


@contextmanager
def pace_server() -> Iterator[str]:
    """Serve the behaviours above on a free loopback port; yields ``http://127.0.0.1:PORT``."""
    server = _Server()
    thread = threading.Thread(target=server.serve_forever, daemon=True, name="pace-peers")
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def url(base: str, peer: str) -> str:
    """The chat URL of one behaviour."""
    return f"{base}/{peer}/v1/chat/completions"
