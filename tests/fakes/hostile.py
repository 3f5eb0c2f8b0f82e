"""The hostile chat endpoints of the test suite: one loopback server, one behaviour per path.

``with hostile_server() as base:`` serves every path below on a free port of
127.0.0.1 (raw sockets); a test picks a behaviour with the URL's first path
segment, and some take a variant from the second (``/canary/ehtml/v1/...``).

``/endless/...``  200 event stream of content chunks without end, as fast as it can
                  (``/endless/wide/...``: each chunk 100 times longer, so a text cap is met
                  in a hundredth of the events)
``/empty/...``    200 event stream of ``data: {}`` without end (no text: only bytes)
``/slowloris/...`` 200 event stream, then one byte a second (``/slowloris/drip/...``: one
                  every 50 ms, so bytes keep coming while no event completes)
``/silent/...``   200 event stream headers, then nothing until the client gives up
``/thinking/...`` keep-alive comments for 1.8 s, then a normal reply (``/thinking/quick/...``:
                  one every 0.1 s for 0.8 s)
``/cut/...``      two content chunks, then the connection closes (no [DONE])
``/badutf8/...``  a Chinese character's bytes split over two events (invalid per event)
``/echo/...``     a reply (stream or not) that echoes the Authorization header, split
``/e500/...``     HTTP 500 with the Authorization header in a JSON error body
``/vllm-err/...`` HTTP 200 stream with vLLM's ``{"object": "error"}`` midway
``/reasoning/...`` a reasoning model's stream: reasoning_content deltas, then content
``/gzipbomb/...``  every answer (stream, JSON, GET) gzip-encoded: 1 KiB on the wire is 1 MiB;
                   ``/gzipbomb/lessons/...`` a real short stream to a short chat, bombs to
                   the long ones (the lessons of a load test)
``/e500all/...``   HTTP 500 ``model crashed`` to every request, GET or POST (a crashed model)
``/escapes/...``   HTTP 400 to every request, its error message full of terminal escapes
``/record/...``    a short valid stream (Content-Length, then close); ``base.heads("record")``
                   holds the raw head of each request received
``/canary/WHERE/...`` echoes the Authorization header in every form of :func:`echoes`:
                   WHERE ``e500`` in a 500 JSON error, ``ehtml`` in a 502 HTML page,
                   ``ereply`` in the reply (stream or not); a GET lists one model echoing it
``/counts/chars/...`` a chat counting characters as usage.prompt_tokens, refusing over 2048 words;
                   ``/counts/one/...`` one that says 1 or 2 prompt tokens for everything;
                   ``/counts/huge/...`` a 401-digit count; ``/counts/offset30/...`` and
                   ``/counts/offset5/...`` characters plus 10**30 or 100,000 (a believable
                   slope, an absurd intercept)
``/empty200/VARIANT/...`` HTTP 200 with nothing in it (``body``, ``json`` ``{}``, ``stream``)
``/disguise/NAME/...`` streams back the Authorization key in the disguise
                   ``DISGUISES[NAME]`` (or the rendered or encoded ones), two characters per
                   event

Every request's path and raw head are kept in ``base.requests`` (at most
``CAP_REQUESTS``).

Every loop is bounded (a cap on bytes and on time), and a server stops with
its fixture.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import socket
import socketserver
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from urllib.parse import quote

#: The most a hostile stream sends, and for how long (bounded, as every test traffic).
CAP_BYTES = 64 * 1024 * 1024
CAP_SECONDS = 30.0
#: The most the server reads of one request, and how many requests it remembers.
CAP_REQUEST_BYTES = 16 * 1024 * 1024
CAP_REQUESTS = 100_000

#: The words ``/counts/chars/`` accepts (its refusal names this many tokens).
COUNTS_WINDOW = 2048

#: A behaviour's steps: bytes to send, seconds to wait, or one of these two marks.
SHUTDOWN = object()  # close the connection now
WAIT = object()  # until the client closes the connection (at most CAP_SECONDS)
Play = Iterator[bytes | float | object]

#: Terminal escapes: window title, clear screen, right-to-left override, an 8-bit CSI.
ESCAPES = "\x1b]0;pwned\x07" + "\x1b[2J\x1b[H" + "\u202e" + "\x9b31m"


def echoes(auth: str) -> str:
    """The Authorization header in every form a careless server might use (``/canary/``)."""
    key = auth.removeprefix("Bearer ").strip()
    return " | ".join(
        [
            auth,
            json.dumps({"authorization": auth}),
            quote(key, safe=""),
            base64.b64encode(key.encode()).decode(),
            key[:10],
            key[-10:],
        ]
    )


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def _pieces(text: str, size: int = 7, sep: str = " ") -> str:
    return sep.join(text[i : i + size] for i in range(0, len(text), size))


#: How ``/disguise/NAME/`` disguises the key it echoes.
DISGUISES: dict[str, Callable[[str], str]] = {
    "zero-width-space": lambda k: "\u200b".join(k),
    "word-joiner": lambda k: "\u2060".join(k),
    "variation-selectors": lambda k: "".join(c + "\ufe0f" for c in k),
    "grapheme-joiner": lambda k: "\u034f".join(k),
    "soft-hyphen": lambda k: "\u00ad".join(k),
    "combining-accents": lambda k: "".join(c + "\u0301" for c in k),
    "fullwidth": _fullwidth,
    "fullwidth-zero-width": lambda k: "\u200b".join(_fullwidth(k)),
    "7-char-pieces": _pieces,
    "7-char-pieces-lines": lambda k: _pieces(k, sep="\n"),
    "7-char-pieces-fullwidth": lambda k: _pieces(_fullwidth(k), sep=" | "),
    "bidi-isolates": lambda k: "\u2066" + "\u2069\u2066".join(_pieces(k, 4, "")) + "\u2069",
}


def _base64_halves(key: str) -> str:
    text = base64.b64encode(key.encode()).decode()
    return f"part1={text[: len(text) // 2]} part2={text[len(text) // 2 :]}"


#: Latin letters and the Cyrillic ones that look the same (TR39 confusables).
CYRILLIC = str.maketrans("seaopcxyABCEHKMOPTX3", "ѕеаорсхуАВСЕНКМОРТХЗ")

#: Disguises a reader decodes (base64, base32, hex, escapes) or reads past (look-alike
#: letters): served by ``/disguise/NAME/`` too, kept apart because the plain text holds
#: no piece of the key (the red-team pass of issue 44 found each in a record).
ENCODED_DISGUISES: dict[str, Callable[[str], str]] = {
    "base64-halves": _base64_halves,
    "base64-urlsafe-pieces": lambda k: _pieces(
        base64.urlsafe_b64encode(k.encode()).decode(), 13, " / "
    ),
    "base32": lambda k: base64.b32encode(k.encode()).decode(),
    "hex": lambda k: k.encode().hex(),
    "cyrillic": lambda k: k.translate(CYRILLIC),
    "json-escapes": lambda k: "".join(f"\\u{ord(c):04x}" for c in k),
    "html-entities": lambda k: "".join(f"&#{ord(c)};" for c in k),
    "mixed-escapes": lambda k: "".join(
        (f"%{ord(c):02X}", f"&#x{ord(c):x};", c)[i % 3] for i, c in enumerate(k)
    ),
}

#: Disguises only a renderer undoes (Jupyter's and nbconvert's ANSI colours): served by
#: ``/disguise/NAME/`` too, kept apart because plain text does not read as the key.
RENDERED_DISGUISES: dict[str, Callable[[str], str]] = {
    "ansi-reset": lambda k: "\x1b[0m".join(k),
    "ansi-colours": lambda k: "".join(f"\x1b[3{i % 8}m{c}" for i, c in enumerate(k)) + "\x1b[0m",
    "osc-title": lambda k: "\x1b]0;x\x07".join(k),
}


def _chunk(text: str) -> bytes:
    body = {"id": "h", "object": "chat.completion.chunk", "choices": [
        {"index": 0, "delta": {"content": text}, "finish_reason": None}]}  # fmt: skip
    return f"data: {json.dumps(body, ensure_ascii=False)}\n\n".encode()


def _head(
    ctype: str = "text/event-stream",
    status: str = "200 OK",
    length: int | None = None,
    extra: tuple[str, ...] = (),
) -> bytes:
    lines = [f"HTTP/1.1 {status}", f"Content-Type: {ctype}", "Connection: close"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    lines += extra
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


@cache
def gzip_bomb(mib: int = 1024) -> bytes:
    """One gzip member that inflates to ``mib`` MiB of zeros (about 1 KiB per MiB).

    A MiB of zeros is deflated once, ending in a full flush (which forgets the history,
    so every MiB deflates to the same bytes), and repeated: not 1 GiB deflated (4 s)."""
    block = bytes(1 << 20)
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)  # raw deflate: the gzip frame by hand
    piece = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    last = packer.flush()  # the final, empty block
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(block, crc)
    head = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"  # gzip, deflate, no name, mtime 0
    return head + piece * mib + last + struct.pack("<II", crc, (mib << 20) & 0xFFFFFFFF)


class _Behaviours:
    """One generator per path: what the server does, as bytes to send, seconds to wait,
    :data:`SHUTDOWN` (close the connection) and :data:`WAIT` (until the client closes)."""

    def __init__(self, method: str, variant: str) -> None:
        self.method, self.variant = method, variant

    def do_endless(self, headers: dict, body: dict) -> Play:
        yield _head()
        words = "endless reply text " * (100 if self.variant == "wide" else 1)
        block = _chunk(words) * 256
        yield from self._pour(block)

    def do_empty(self, headers: dict, body: dict) -> Play:
        yield _head()
        yield from self._pour(b"data: {}\n\n" * 4096)

    def _pour(self, block: bytes) -> Play:
        sent, start = 0, time.monotonic()
        while sent < CAP_BYTES and time.monotonic() - start < CAP_SECONDS:
            yield block
            sent += len(block)

    def do_slowloris(self, headers: dict, body: dict) -> Play:
        yield _head()
        line = _chunk("slow")
        gap = 0.05 if self.variant == "drip" else 1.0
        start = time.monotonic()
        for byte in line * 10:
            if time.monotonic() - start > CAP_SECONDS:
                break
            yield bytes([byte])
            yield gap

    def do_silent(self, headers: dict, body: dict) -> Play:
        yield _head()
        yield WAIT  # until the client closes the connection

    def do_thinking(self, headers: dict, body: dict) -> Play:
        yield _head()
        # 1.8 s of keep-alive comments before the first token (quick: 0.8 s)
        count, gap = (8, 0.1) if self.variant == "quick" else (6, 0.3)
        for _ in range(count):
            yield b": keep-alive\n\n"
            yield gap
        last = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        yield _chunk("thought ") + _chunk("hard") + last + b"data: [DONE]\n\n"

    def do_cut(self, headers: dict, body: dict) -> Play:
        yield _head() + _chunk("half ") + _chunk("a reply")
        yield 0.05
        yield SHUTDOWN

    def do_badutf8(self, headers: dict, body: dict) -> Play:
        char = "图".encode()
        events = [
            b'data: {"choices":[{"index":0,"delta":{"content":"' + char[:2] + b'"}}]}\n\n',
            b'data: {"choices":[{"index":0,"delta":{"content":"' + char[2:] + b'"}}]}\n\n',
            _chunk("书馆"),
            b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
            b"data: [DONE]\n\n",
        ]
        yield _head() + b"".join(events)

    def do_echo(self, headers: dict, body: dict) -> Play:
        auth = headers.get("authorization", "")
        if not body.get("stream"):
            reply = {"id": "e", "object": "chat.completion", "choices": [{"index": 0,
                     "message": {"role": "assistant", "content": f"you sent {auth}"},
                     "finish_reason": "stop"}], "usage": {"completion_tokens": 3}}  # fmt: skip
            raw = json.dumps(reply).encode()
            yield _head("application/json", length=len(raw)) + raw
            return
        key = auth.removeprefix("Bearer ")
        pieces = ["you sent ", key[:5], key[5:13], key[13:], " and ", json.dumps(key), " done"]
        last = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        yield _head() + b"".join(_chunk(p) for p in pieces) + last + b"data: [DONE]\n\n"

    def do_e500(self, headers: dict, body: dict) -> Play:
        auth = headers.get("authorization", "")
        raw = json.dumps({"error": {"message": f"bad request from {auth}"}}).encode()
        yield _head("application/json", "500 Internal Server Error", len(raw)) + raw

    def do_vllm_err(self, headers: dict, body: dict) -> Play:
        err = {"object": "error", "message": "CUDA out of memory", "type": "InternalServerError",
               "param": None, "code": 500}  # fmt: skip
        yield _head() + _chunk("par") + f"data: {json.dumps(err)}\n\n".encode()

    def do_reasoning(self, headers: dict, body: dict) -> Play:
        def delta(**fields: str) -> bytes:
            chunk = {"choices": [{"index": 0, "delta": fields, "finish_reason": None}]}
            return f"data: {json.dumps(chunk)}\n\n".encode()

        last = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 4}}  # fmt: skip
        yield _head() + delta(role="assistant", content="")
        for piece in (delta(reasoning_content="Let me "), delta(reasoning_content="think."),
                      delta(content="Hello"), delta(content=" there")):  # fmt: skip
            yield 0.02  # each piece in its own read, at its own time
            yield piece
        yield f"data: {json.dumps(last)}\n\ndata: [DONE]\n\n".encode()

    def do_gzipbomb(self, headers: dict, body: dict) -> Play:
        if self.variant == "lessons" and len(json.dumps(body)) < 4096:
            # A short chat gets a real reply, so the checks' stream answers and the load
            # test (whose lesson prompts are long) runs into the bombs.
            raw = _chunk("a short reply") + b"data: [DONE]\n\n"
            yield _head("text/event-stream", length=len(raw)) + raw
            return
        ctype = "text/event-stream" if body.get("stream") else "application/json"
        bomb = gzip_bomb()
        head = _head(ctype, length=len(bomb)).replace(
            b"\r\n\r\n", b"\r\nContent-Encoding: gzip\r\n\r\n"
        )
        yield head + bomb

    def do_e500all(self, headers: dict, body: dict) -> Play:
        raw = b'{"error": {"message": "model crashed", "type": "server_error"}}'
        yield _head("application/json", "500 Internal Server Error", len(raw)) + raw

    def do_escapes(self, headers: dict, body: dict) -> Play:
        message = "System role not supported" + ESCAPES + "\r\nFAKE: ok"
        raw = json.dumps({"error": {"message": message, "type": "invalid_request"}}).encode()
        yield _head("application/json", "400 Bad Request", len(raw)) + raw

    def do_record(self, headers: dict, body: dict) -> Play:
        chunk = {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}
        raw = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
        yield _head(length=len(raw)) + raw

    def do_canary(self, headers: dict, body: dict) -> Play:
        auth = headers.get("authorization", "")
        echoed = echoes(auth)

        def send(status: str, ctype: str, raw: bytes) -> Play:
            x_echo = "X-Echo: " + auth[:200]
            yield _head(ctype, status, len(raw), (x_echo,)) + raw

        if self.method == "GET":
            models = {"object": "list",
                      "data": [{"id": "echo-llm", "object": "model", "note": echoed}]}  # fmt: skip
            yield from send("200 OK", "application/json", json.dumps(models).encode())
        elif self.variant == "e500":
            error = {"error": {"message": f"rejected {echoed}", "type": "server_error"}}
            yield from send(
                "500 Internal Server Error", "application/json", json.dumps(error).encode()
            )
        elif self.variant == "ehtml":
            page = f"<html><head><title>502 {auth}</title></head><body>{echoed}</body></html>"
            yield from send("502 Bad Gateway", "text/html", page.encode())
        elif body.get("stream"):
            words = ["you", " sent ", echoed[:40], echoed[40:]]
            last = {"id": "h", "object": "chat.completion.chunk",
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}  # fmt: skip
            yield (
                _head()
                + b"".join(_chunk(w) for w in words)
                + f"data: {json.dumps(last)}\n\ndata: [DONE]\n\n".encode()
            )
        else:
            said = f"you sent {echoed}"
            reply = {"id": "cmpl-echo", "object": "chat.completion",
                     "model": body.get("model", ""),
                     "choices": [{"index": 0, "message": {"role": "assistant", "content": said},
                                  "text": said, "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": 3, "completion_tokens": 3,
                               "total_tokens": 6}}  # fmt: skip
            yield from send("200 OK", "application/json", json.dumps(reply).encode())

    def do_disguise(self, headers: dict, body: dict) -> Play:
        key = headers.get("authorization", "").removeprefix("Bearer ")
        disguised = {**DISGUISES, **RENDERED_DISGUISES, **ENCODED_DISGUISES}[self.variant](key)
        # Two characters per event: a piece never arrives whole in one chunk.
        chunks = [disguised[i : i + 2] for i in range(0, len(disguised), 2)]
        stop = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        yield (
            _head()
            + _chunk("echo: ")
            + b"".join(_chunk(c) for c in chunks)
            + _chunk(" done")
            + stop
            + b"data: [DONE]\n\n"
        )

    def do_counts(self, headers: dict, body: dict) -> Play:
        """A chat whose usage.prompt_tokens is not a token count: ``chars`` counts characters
        (and the model refuses over 2048 words), ``one`` says 1 or 2 for every prompt."""
        text = " ".join(str(m.get("content", "")) for m in body.get("messages") or [])
        words = len(text.split())
        if self.variant == "chars" and words > COUNTS_WINDOW:
            refusal = f"This model's maximum context length is {COUNTS_WINDOW} tokens"
            raw = json.dumps({"error": {"message": refusal, "type": "BadRequestError"}}).encode()
            yield _head("application/json", "400 Bad Request", len(raw)) + raw
            return
        said = {
            "chars": len(text),
            "huge": 10**400,
            "offset30": 10**30 + len(text),
            "offset5": 100_000 + len(text),
        }.get(self.variant, 1 + (words > 100))
        usage = {"prompt_tokens": said,
                 "completion_tokens": 1, "total_tokens": 2}  # fmt: skip
        if body.get("stream"):
            last = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                    "usage": usage}  # fmt: skip
            tail = f"data: {json.dumps(last)}\n\ndata: [DONE]\n\n".encode()
            yield _head() + _chunk("ok") + tail
            return
        reply = {"id": "c", "object": "chat.completion", "choices": [{"index": 0,
                 "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
                 "usage": usage}  # fmt: skip
        raw = json.dumps(reply).encode()
        yield _head("application/json", length=len(raw)) + raw

    def do_empty200(self, headers: dict, body: dict) -> Play:
        """HTTP 200 and nothing: ``body`` no bytes at all, ``json`` ``{}``, ``stream`` an
        event stream that ends at once (no event, no [DONE])."""
        if self.variant == "stream":
            yield _head(length=0)
            return
        raw = b"{}" if self.variant == "json" else b""
        yield _head("application/json", length=len(raw)) + raw


def _parse(data: bytes) -> tuple[str, str, dict[str, str], bytes] | None:
    """(method, path, headers, body) once ``data`` holds a whole request; None before."""
    if b"\r\n\r\n" not in data and len(data) < CAP_REQUEST_BYTES:
        return None
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path = [*lines[0].split(" "), "", ""][:2]
    headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
    length = min(int(headers.get("content-length", "0") or 0), CAP_REQUEST_BYTES)
    if len(rest) < length:
        return None
    return method, path, headers, rest


def _play(method: str, path: str, headers: dict[str, str], raw: bytes) -> Play:
    """The behaviour the path names (nothing for a path no behaviour has)."""
    body = json.loads(raw or b"{}") if raw[:1] == b"{" else {}
    kind, _, tail = path.strip("/").partition("/")
    behaviours = _Behaviours(method, tail.partition("/")[0])
    play = getattr(behaviours, "do_" + kind.replace("-", "_"), None)
    return play(headers, body) if play is not None else iter(())


class _Handler(socketserver.BaseRequestHandler):
    """A behaviour on a real socket (one thread per connection)."""

    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.settimeout(10)
        data = b""
        while (request := _parse(data)) is None:
            got = sock.recv(65536)
            if not got:
                return
            data += got
        method, path, headers, body = request
        _remember(self.server.requests, path, data)  # type: ignore[attr-defined]
        with contextlib.suppress(OSError):  # the client went away: the point of most of these
            for step in _play(method, path, headers, body):
                if isinstance(step, bytes):
                    sock.sendall(step)
                elif step is SHUTDOWN:
                    sock.shutdown(socket.SHUT_RDWR)
                elif step is WAIT:
                    sock.settimeout(CAP_SECONDS)
                    with contextlib.suppress(TimeoutError):
                        sock.recv(1)  # returns when the client closes the connection
                else:
                    assert isinstance(step, float | int)
                    time.sleep(step)


class _Protocol(asyncio.Protocol):
    """A behaviour in the client's own event loop (tests/fakes/hosts.py's socketpair)."""

    def __init__(self, requests: list[tuple[str, bytes]]) -> None:
        self.requests = requests
        self.data = b""
        self.started = False
        self.gone = asyncio.Event()
        self.writable = asyncio.Event()
        self.writable.set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self.started:
            return
        self.data += data
        request = _parse(self.data)
        if request is not None:
            self.started = True
            _remember(self.requests, request[1], self.data)
            task = asyncio.get_running_loop().create_task(self._run(*request))
            _TASKS.add(task)
            task.add_done_callback(_TASKS.discard)

    def eof_received(self) -> bool:
        self.gone.set()
        return True  # keep our side open: a behaviour may still be sending

    def connection_lost(self, exc: Exception | None) -> None:
        self.gone.set()
        self.writable.set()

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    async def _run(self, method: str, path: str, headers: dict[str, str], body: bytes) -> None:
        try:
            await self._steps(method, path, headers, body)
        except TimeoutError:
            pass
        finally:
            self.transport.close()

    async def _steps(self, method: str, path: str, headers: dict[str, str], body: bytes) -> None:
        for step in _play(method, path, headers, body):
            if self.transport.is_closing():
                return
            if isinstance(step, bytes):
                self.transport.write(step)
                # The client reads at its pace, as on a socket; one that stops reading
                # and never closes is given up after CAP_SECONDS.
                await asyncio.wait_for(self.writable.wait(), CAP_SECONDS)
            elif step is SHUTDOWN:
                return
            elif step is WAIT:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.gone.wait(), CAP_SECONDS)
            else:
                assert isinstance(step, float | int)
                await asyncio.sleep(step)


#: Behaviours running in an event loop (a task needs a reference until it ends).
_TASKS: set[asyncio.Task[None]] = set()


def _remember(requests: list[tuple[str, bytes]], path: str, data: bytes) -> None:
    if len(requests) < CAP_REQUESTS:
        requests.append((path, data.partition(b"\r\n\r\n")[0]))


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # a load test connects many at once

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[tuple[str, bytes]] = []


class Base(str):
    """The server's ``http://127.0.0.1:PORT``, and what it has received."""

    requests: list[tuple[str, bytes]]

    def heads(self, kind: str) -> list[bytes]:
        """The raw heads of the requests received on ``/KIND/...``, in order."""
        return [h for p, h in list(self.requests) if p.strip("/").split("/")[0] == kind]


@contextmanager
def hostile_server() -> Iterator[Base]:
    """Serve the hostile paths in this process; yields ``http://127.0.0.1:PORT``.

    The behaviours run in the event loop of the client that connects
    (tests/fakes/hosts.py): no port is bound and no thread serves them.
    """
    from fakes import hosts

    requests: list[tuple[str, bytes]] = []
    port = hosts.serve(lambda: _Protocol(requests))
    base = Base(f"http://{hosts.HOST}:{port}")
    base.requests = requests
    try:
        yield base
    finally:
        hosts.stop(port)


@contextmanager
def hostile_tcp_server() -> Iterator[Base]:
    """Serve the hostile paths on a free loopback port (a thread per connection), for the
    tests whose point is a real TCP socket; yields ``http://127.0.0.1:PORT``."""
    server = _Server()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = Base(f"http://127.0.0.1:{server.server_address[1]}")
    base.requests = server.requests
    try:
        yield base
    finally:
        server.shutdown()
        server.server_close()


def escapes_check_env(base: str, home: Path) -> dict[str, str]:
    """``lmreg-nb check``'s environment against ``base``'s ``/escapes`` model (every answer
    an error quoting terminal escapes), with a platform that is never called."""
    from fakes.loopback_platform import cli_env

    return cli_env(
        "http://127.0.0.1:9",
        home,
        LMREG_MODEL_URL=f"{base}/escapes/v1/chat/completions",
        LMREG_MODEL_API_KEY="sk-hostile-check-0123456789",
        LMREG_MODEL_NAME="m",
    )


class _Closing(asyncio.Protocol):
    """Closes the connection at once, or (``silent``) holds it without a byte."""

    def __init__(self, silent: bool) -> None:
        self.silent = silent

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if not self.silent:
            transport.close()


@contextmanager
def closing_server(silent: bool = False) -> Iterator[int]:
    """A port (of this process: tests/fakes/hosts.py) whose connections are closed at once
    (``silent``: held until the client gives up)."""
    from fakes import hosts

    port = hosts.serve(lambda: _Closing(silent))
    try:
        yield port
    finally:
        hosts.stop(port)


@contextmanager
def closing_tcp_server(silent: bool = False) -> Iterator[int]:
    """A loopback port that accepts connections and closes them at once (``silent``: holds
    them), for the tests whose point is a real TCP socket."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    stop = threading.Event()
    held: list[socket.socket] = []

    def run() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            if silent:
                held.append(conn)
            else:
                conn.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(2)
        for conn in held:
            conn.close()
        listener.close()
