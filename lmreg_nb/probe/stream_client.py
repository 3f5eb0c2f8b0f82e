"""A lean streaming chat client for the capacity search: one HTTP/1.1 connection per chat.

The capacity search must keep up with up to hundreds of streams on a small,
busy machine: a client that falls behind reads several chunks at once, sees
them late, and turns its own lag into the server's latency. httpx costs about
2 ms of CPU per 64-token stream (pool, trace hooks, anyio streams); this
client, an ``asyncio.Protocol`` that timestamps every network read as it
arrives, costs a fraction of that. It does only what a closed-loop chat needs:
POST a JSON body on a keep-alive connection (plain or TLS), read the status
and headers, de-chunk the body, and split the event stream into ``data:``
payloads. Anything unusual (a redirect, an unknown transfer encoding) is a
failure of the request, named in one line; the conformance checks, which use
httpx, are where such replies are judged.

Result: an :class:`~lmreg_nb.probe.exchange.Exchange` with the fields the
levels read (status, failure, times, pieces, usage, done, finish), so the
levels do not care which client produced it.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from typing import Any
from urllib.parse import urlsplit

from .._tls import tls_context
from ..i18n import _, ngettext
from .exchange import MAX_BODY_BYTES, TOTAL_TIMEOUT_FACTOR, Exchange, Target, snippet
from .shapes import chunk_text, finish_reason, first_choice, is_error_object, usage_of

__all__ = ["ChatConnection"]

_EVENT_END = b"\n\n"


class _Reader(asyncio.Protocol):
    """Collects bytes and wakes the reader; notes when each read arrived."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.arrived = 0.0  # perf_counter of the latest read
        self.closed = False
        self.waiter: asyncio.Future[None] | None = None
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.arrived = time.perf_counter()
        self.buffer += data
        self._wake()

    def eof_received(self) -> bool | None:
        self.closed = True
        self._wake()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def more(self) -> bool:
        """Wait for more bytes; False when the connection closed."""
        if self.closed:
            return False
        self.waiter = asyncio.get_running_loop().create_future()
        try:
            await self.waiter
        finally:
            self.waiter = None
        return bool(self.buffer) or not self.closed


class ChatConnection:
    """One keep-alive connection to ``target``; :meth:`send` one streamed chat at a time."""

    def __init__(self, target: Target, payload: bytes) -> None:
        url = urlsplit(target.url)
        self.target = target
        self.tls = url.scheme == "https"
        self.host = url.hostname or ""
        self.port = url.port or (443 if self.tls else 80)
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        host_header = url.netloc.rpartition("@")[2]
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {host_header}\r\n"
            f"Authorization: Bearer {target.api_key}\r\n"
            "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n"
        )
        self.request = head.encode("latin-1") + payload
        self.reader: _Reader | None = None
        #: The request being sent (its ``times`` grow as content arrives), for a watcher.
        self.current: Exchange | None = None

    def close(self) -> None:
        """Close the connection (a new one opens on the next :meth:`send`)."""
        if self.reader is not None and self.reader.transport is not None:
            self.reader.transport.close()
        self.reader = None

    async def _connect(self) -> _Reader:
        loop = asyncio.get_running_loop()
        context: ssl.SSLContext | None = tls_context() if self.tls else None
        _, reader = await loop.create_connection(
            _Reader,
            self.host,
            self.port,
            ssl=context,
            server_hostname=self.host if context else None,
        )
        return reader

    async def send(self) -> Exchange:
        """POST the chat and read the streamed reply; never raises for the server's behaviour."""
        ex = self.current = Exchange(stream_requested=True)
        ex.t_begin = ex.t_start = time.perf_counter()
        timeout = self.target.timeout
        try:
            reader = self.reader
            if reader is None or reader.closed:
                async with asyncio.timeout(timeout):
                    reader = self.reader = await self._connect()
            assert reader.transport is not None
            reader.buffer.clear()
            reader.transport.write(self.request)
            ex.t_start = time.perf_counter()
            async with asyncio.timeout(timeout * TOTAL_TIMEOUT_FACTOR):
                await self._exchange(reader, ex, timeout)
        except TimeoutError:
            ex.failure, ex.failure_detail = (
                "timeout",
                _("no complete reply within {seconds} s").format(seconds=f"{timeout:g}"),
            )
            self.close()
        except OSError as exc:
            ex.failure = "connect" if not ex.status else "transport"
            ex.failure_detail = snippet(str(exc) or type(exc).__name__, 200)
            self.close()
        except _Broken as exc:
            ex.failure, ex.failure_detail = exc.kind, str(exc)
            self.close()
        ex.t_end = time.perf_counter()
        return ex

    async def _exchange(self, reader: _Reader, ex: Exchange, timeout: float) -> None:
        async with asyncio.timeout(timeout):  # the answer's start; the whole reply has longer
            head = await _read_head(reader)
        status, headers = _parse_head(head)
        ex.t_headers = time.perf_counter()
        ex.status = status
        ex.content_type = headers.get("content-type", "").lower()
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        length = headers.get("content-length")
        body = _Body(reader, chunked, int(length) if length and length.isdigit() else None)
        if not 200 <= status < 300:
            data = await body.read_all()
            ex.failure = f"status {status}"
            ex.failure_detail = _error_text(data)
        elif ex.content_type.startswith("text/event-stream"):
            ex.streamed = True
            await _read_events(body, ex)
        else:
            data = await body.read_all()
            _whole(ex, data, reader.arrived)
        if headers.get("connection", "").lower() == "close" or not body.complete:
            self.close()


class _Broken(Exception):
    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind


async def _read_head(reader: _Reader) -> bytes:
    while True:
        end = reader.buffer.find(b"\r\n\r\n")
        if end >= 0:
            head = bytes(reader.buffer[:end])
            del reader.buffer[: end + 4]
            return head
        if len(reader.buffer) > 65536:
            raise _Broken("transport", _("response headers over 64 KiB"))
        if not await reader.more():
            raise _Broken("transport", _("the server closed the connection before answering"))


def _parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise _Broken(
            "transport", _("not an HTTP/1.1 answer: {line}").format(line=snippet(lines[0], 80))
        )
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _sep, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


class _Body:
    """The response body as it arrives: de-chunked, bounded by Content-Length or close."""

    def __init__(self, reader: _Reader, chunked: bool, length: int | None) -> None:
        self.reader = reader
        self.chunked = chunked
        self.left = length  # bytes still due (Content-Length), or None
        self.chunk_left = 0  # bytes left of the current chunk
        self.complete = False
        self.size = 0

    async def pieces(self) -> Any:
        """Yield body bytes as they arrive (with the read's time in ``reader.arrived``)."""
        reader = self.reader
        while not self.complete:
            data = self._take()
            if data:
                self.size += len(data)
                if self.size > MAX_BODY_BYTES:
                    raise _Broken("transport", _("reply over 4 MiB"))
                yield data
                continue
            if self.complete:
                return
            if not await reader.more():
                if self.left is None and not self.chunked:
                    self.complete = True  # a body ended by closing the connection
                    return
                raise _Broken("transport", _("the connection closed mid-reply"))

    def _take(self) -> bytes:
        buf = self.reader.buffer
        if not self.chunked:
            if self.left is None:
                data = bytes(buf)
                buf.clear()
                return data
            data = bytes(buf[: self.left])
            del buf[: len(data)]
            self.left -= len(data)
            self.complete = self.left == 0
            return data
        out = bytearray()
        while True:  # chunk_left > 0: inside a chunk; -2: its CRLF is due; 0: a size line
            if self.chunk_left > 0:
                take = buf[: self.chunk_left]
                out += take
                del buf[: len(take)]
                self.chunk_left -= len(take)
                if self.chunk_left:
                    return bytes(out)
                self.chunk_left = -2
            if self.chunk_left == -2:
                if len(buf) < 2:
                    return bytes(out)
                del buf[:2]
                self.chunk_left = 0
            end = buf.find(b"\r\n")
            if end < 0:
                return bytes(out)
            try:
                size = int(bytes(buf[:end]).split(b";")[0].strip(), 16)
            except ValueError:
                raise _Broken("transport", _("a malformed chunk in the reply")) from None
            if size == 0:
                last = buf.find(b"\r\n\r\n")  # the last chunk, (no) trailers, a blank line
                if last < 0:
                    return bytes(out)
                del buf[: last + 4]
                self.complete = True
                return bytes(out)
            del buf[: end + 2]
            self.chunk_left = size

    async def read_all(self) -> bytes:
        out = bytearray()
        async for data in self.pieces():
            out += data
        return bytes(out)


async def _read_events(body: _Body, ex: Exchange) -> None:
    """Split the stream into events; each content piece timed by the read that brought it."""
    pending = b""
    loads = json.loads
    async for data in body.pieces():
        now = body.reader.arrived
        ex.reads += 1
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        pending += data
        *events, pending = pending.split(_EVENT_END)
        for event in events:
            for line in event.split(b"\n"):
                if not line.startswith(b"data:"):
                    continue
                payload = line[5:].strip()
                ex.events += 1
                if ex.done:
                    ex.after_done += 1
                    continue
                if payload == b"[DONE]":
                    ex.done = True
                    continue
                try:
                    obj = loads(payload)
                except ValueError:
                    ex.non_json.append(payload[:200].decode("utf-8", "replace"))
                    continue
                _take_chunk(ex, obj, now)
    _judge_stream(ex)


def _take_chunk(ex: Exchange, obj: Any, now: float) -> None:
    if not isinstance(obj, dict):
        ex.non_json.append(str(obj)[:200])
        return
    if is_error_object(obj):
        ex.error_events.append(obj.get("error", obj))
        return
    usage = usage_of(obj)
    if usage is not None:
        ex.usage = usage
    reason = finish_reason(obj)
    if reason is not None:
        ex.finish = reason
    text = chunk_text(obj)
    if text:
        ex.pieces.append(text)  # the search keeps no text: only that it came, and when
        ex.times.append(now)


def _judge_stream(ex: Exchange) -> None:
    if ex.error_events:
        ex.failure = "bad stream"
        ex.failure_detail = _("an error object inside the stream: {error}").format(
            error=snippet(json.dumps(ex.error_events[0])[:200])
        )
    elif ex.non_json:
        ex.failure, ex.failure_detail = (
            "bad stream",
            ngettext("{n} event was not JSON", "{n} events were not JSON", len(ex.non_json)).format(
                n=len(ex.non_json)
            ),
        )
    elif not ex.pieces:
        ex.failure, ex.failure_detail = "bad stream", _("no content in the reply")


def _whole(ex: Exchange, data: bytes, now: float) -> None:
    """A 2xx answer that is not an event stream: one JSON body (the text arrives at once)."""
    try:
        obj = json.loads(data)
    except ValueError:
        ex.failure, ex.failure_detail = "bad body", _("the reply was neither a stream nor JSON")
        return
    choice = first_choice(obj)
    message = choice.get("message") if choice is not None else None
    text = message.get("content") if isinstance(message, dict) else None
    reason = finish_reason(obj)
    if reason is not None:
        ex.finish = reason
    if isinstance(obj, dict) and isinstance(obj.get("usage"), dict):
        ex.usage = obj["usage"]
    if isinstance(text, str) and text:
        ex.pieces.append(text)
        ex.times.append(now)
    else:
        ex.failure, ex.failure_detail = "bad body", _("no content in the reply")


def _error_text(data: bytes) -> str:
    try:
        obj = json.loads(data)
    except ValueError:
        return snippet(data.decode("utf-8", "replace"))
    if isinstance(obj, dict):
        err = obj.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return snippet(err["message"])
        for key in ("message", "detail", "error"):
            if isinstance(obj.get(key), str):
                return snippet(obj[key])
    return snippet(data.decode("utf-8", "replace"))
