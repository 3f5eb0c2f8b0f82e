"""Chat servers that close keep-alive connections the way real servers do (plain or TLS).

``with keepalive_peer(mode) as peer:`` serves ``POST .../v1/chat/completions``
(a short event stream, chunked, ``[DONE]`` at the end) on a free port of
127.0.0.1, one thread per connection, several requests per connection, and
closes connections as the mode says:

``close-after-each``  announces ``Keep-Alive: timeout=5, max=100`` but closes the
                      connection a moment after every reply, as llama.cpp's
                      ``llama-server`` (cpp-httplib) does after a streamed reply
``max-N``             announces ``Keep-Alive: timeout=5, max=N`` on every reply and
                      closes the connection a moment after the Nth
``connection-close``  says ``Connection: close`` on every reply and closes
``drop-reused``       announces keep-alive, answers a connection's first chat, then
                      reads the next one, works on it ``DROP_DELAY_S`` and closes without
                      a byte (the chat reached the server, which did its work for nothing)
``continue-100``      sends ``HTTP/1.1 100 Continue`` before every answer

A chat with ``"stream": false`` gets one JSON reply whose ``usage.prompt_tokens``
counts as a byte-level tokenizer does (a Chinese character is 3 tokens, as a
tiny Llama's byte fallback gives); streams carry no usage (llama-cpp-python's
server sends none).
``peer.requests`` counts the chats answered, ``peer.received`` the chats read
(answered or not), ``peer.connections`` the connections accepted. Every loop is
bounded (time, bytes, requests).
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field

#: Content pieces of every reply, and the most one connection serves.
PIECES = ("Hello", " from", " a", " peer", " 中文")
MAX_PER_CONNECTION = 1000
#: How long a closing server waits after a reply before closing: the next request is then
#: already on its way, as when llama-server closes after the client read the last chunk.
CLOSE_DELAY_S = 0.05
#: How long ``drop-reused`` works on a reused connection's chat before it drops it.
DROP_DELAY_S = 0.5


@dataclass
class Peer:
    """The address and what the server saw."""

    url: str
    requests: int = 0
    received: int = 0
    connections: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _event(obj: object) -> bytes:
    data = f"data: {json.dumps(obj, ensure_ascii=False)}\n\n".encode()
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def _byte_tokens(body: bytes) -> int:
    """usage.prompt_tokens as a byte-level tokenizer counts (a Chinese character is 3)."""
    try:
        messages = json.loads(body).get("messages", [])
        return sum(len(str(m.get("content", "")).encode()) for m in messages) + 4
    except (ValueError, AttributeError):
        return 5


def _streamed(body: bytes) -> bool:
    try:
        return json.loads(body).get("stream", True) is not False
    except (ValueError, AttributeError):
        return True


def _whole(prompt_tokens: int) -> bytes:
    message = {"role": "assistant", "content": "".join(PIECES)}
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": len(PIECES), "total_tokens": 10}
    reply = {"object": "chat.completion", "usage": usage,
             "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}  # fmt: skip
    return json.dumps(reply, ensure_ascii=False).encode()


def _reply() -> bytes:
    chunks = [
        _event({"choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]})
        for p in PIECES
    ]
    last = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}  # no usage
    done = b"data: [DONE]\n\n"
    tail = f"{len(done):x}\r\n".encode() + done + b"\r\n0\r\n\r\n"
    return b"".join(chunks) + _event(last) + tail


def _read_request(sock: socket.socket, buf: bytearray) -> bytes | None:
    """Read one request (head and Content-Length body) off ``buf``/``sock``: its body, or
    None at EOF."""
    while b"\r\n\r\n" not in buf:
        data = sock.recv(65536)
        if not data or len(buf) > 1 << 20:
            return None
        buf += data
    head, _, rest = bytes(buf).partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip() or 0)
    while len(rest) < length:
        data = sock.recv(65536)
        if not data:
            return None
        rest += data
    buf[:] = rest[length:]
    return rest[:length]


def _serve(sock: socket.socket, peer: Peer, mode: str) -> None:
    buf = bytearray()
    keep = int(mode.removeprefix("max-")) if mode.startswith("max-") else MAX_PER_CONNECTION
    for served in range(1, min(keep, MAX_PER_CONNECTION) + 1):
        body = _read_request(sock, buf)
        if body is None:
            return
        with peer.lock:
            peer.received += 1
        if mode == "drop-reused" and served > 1:
            time.sleep(DROP_DELAY_S)
            return
        if mode == "connection-close":
            conn = "Connection: close"
        elif mode.startswith("max-"):
            conn = f"Connection: keep-alive\r\nKeep-Alive: timeout=5, max={keep}"
        else:
            conn = "Connection: keep-alive\r\nKeep-Alive: timeout=5, max=100"
        if _streamed(body):
            head = "Content-Type: text/event-stream\r\nTransfer-Encoding: chunked"
            answer = _reply()
        else:
            answer = _whole(_byte_tokens(body))
            head = f"Content-Type: application/json\r\nContent-Length: {len(answer)}"
        with peer.lock:  # counted before the answer leaves: the client may be done first
            peer.requests += 1
        interim = b"HTTP/1.1 100 Continue\r\n\r\n" if mode == "continue-100" else b""
        sock.sendall(interim + f"HTTP/1.1 200 OK\r\n{head}\r\n{conn}\r\n\r\n".encode() + answer)
        if mode in ("close-after-each", "connection-close") or served == keep:
            time.sleep(CLOSE_DELAY_S)
            return


@contextmanager
def keepalive_peer(mode: str, certfile: str | None = None) -> Iterator[Peer]:
    """Serve chats in ``mode`` on a free loopback port; TLS when ``certfile`` (key inside)."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    context = None
    if certfile:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certfile)
    scheme = "https" if context else "http"
    peer = Peer(f"{scheme}://127.0.0.1:{listener.getsockname()[1]}/v1/chat/completions")
    stop = threading.Event()

    def handle(conn: socket.socket) -> None:
        with suppress(OSError), conn:
            conn.settimeout(10)
            sock = context.wrap_socket(conn, server_side=True) if context else conn
            with sock:
                _serve(sock, peer, mode)

    def accept() -> None:
        deadline = time.monotonic() + 120
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            if stop.is_set():  # the wake-up at the end: no client's, not counted
                conn.close()
                return
            with peer.lock:
                peer.connections += 1
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield peer
    finally:
        stop.set()
        # Wake the accept() at once (it polls every 0.2 s): each test's peer then ends in
        # a millisecond, not a poll's time.
        with suppress(OSError), socket.create_connection(listener.getsockname()[:2], 1):
            pass
        thread.join(2)
        listener.close()
