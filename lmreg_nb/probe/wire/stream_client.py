"""The lean streaming chat client of the load test and the capacity search.

One HTTP/1.1 connection per chat. The load test and the capacity search must
keep up with up to hundreds of streams on a small, busy machine: a client that
falls behind reads several chunks at once, sees them late, and turns its own
lag into the server's latency. httpx costs about 2 ms of CPU per 64-token
stream (pool, trace hooks, anyio streams); this client, an ``asyncio.Protocol``
that timestamps every network read as it arrives, costs a fraction of that. It
does only what a closed-loop chat needs: POST a JSON body on a keep-alive
connection (plain or TLS), read the status and headers, de-chunk the body, and
split the event stream into ``data:`` payloads, each handed to the reply's
accumulator (:class:`~lmreg_nb.probe.wire.reply.Reply`). Anything unusual (a
redirect, an unknown transfer encoding) is a failure of the request, named in
one line; the conformance checks, which use httpx, are where such replies are
judged. Like httpx's per-read timeout, a reply that sends no complete event
(nor keep-alive) for ``timeout`` seconds is stalled. It asks for
``Accept-Encoding: identity`` and inflates a body compressed anyway with a
bound (:mod:`lmreg_nb._decode`), so a gzip bomb stays within the 4 MiB cap.

Why not aiohttp, the library for this: measured beside aiohttp's streaming client
(``bench/bench_load.py``, the same mock and rounds, 64-token streams, load average
16-18 on two cores), this client spends 0.67-0.69 ms of CPU per request against
aiohttp's 0.82-0.89 ms (1.2-1.3x less, and it parses every chunk fully where the
aiohttp loop only takes the content), at 1.4x aiohttp's requests/s with 32 chats
and 0.9x with 128 (within that machine's noise); 9-11x the official openai
client's requests/s at a sixteenth of its CPU. It is kept for that CPU margin, which
is what lets a load generator beside the server keep its own stalls small; where
it would fall behind aiohttp, aiohttp is the one to use. Measured again on a quiet
machine (load average 2.1-2.3; aiohttp 3.14): 0.39-0.41 ms of CPU per request against
aiohttp's 0.46-0.47 ms, at 1.14x aiohttp's requests/s with 32 chats and 1.18x with
128; and a first-token error of 1.7-2.2 ms against aiohttp's 2.8-9.8 ms and
GuideLLM 0.8.1's 1.7-26.8 ms (mock truth 100 ms, 32 and 128 chats).

Keep-alive as the server means it (what httpx and browsers do): a connection
the server closed, said it would close (``Connection: close``, an HTTP/1.0
answer without keep-alive), used as often as its ``Keep-Alive: max=N`` allows
or idle past its ``timeout=T`` is not used again. A server may still close a
connection between two chats without saying so (llama.cpp's ``llama-server``
announces ``max=100`` and closes after every streamed reply), and its close
can cross the next request on the wire: a chat that fails on a reused
connection before any byte of its answer arrived is sent once more on a fresh
connection, at most once: it keeps its first try's start for every figure, is marked
``resent`` (the server may have done its work twice), and the connection reuses no
more connections (a server that does it once does it again). Interim ``1xx`` answers
(``100 Continue``) before the answer are read and skipped.

Result: an :class:`~lmreg_nb.probe.wire.exchange.Exchange` with the fields the
load test and the levels read (status, failure, times, pieces, usage, done,
finish): a 2xx answer that is not JSON is read as a stream, as the checks do.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from typing import Any

import httpx

from ..._decode import BoundedDecoder, DecodingError
from ..._tls import tls_context
from ...i18n import _, ngettext
from ...open_files import out_of_files
from ...terminal import snippet
from ..target import Target
from .exchange import MAX_BODY_BYTES, TOTAL_TIMEOUT_FACTOR, Exchange
from .keepalive import KeepAlive
from .reasons import LOCAL_LIMIT, TOO_LONG, transport_reason

__all__ = ["ChatConnection"]

_EVENT_END = b"\n\n"


class _Reader(asyncio.Protocol):
    """Collects bytes and wakes the reader; notes when each read arrived."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.arrived = 0.0  # perf_counter of the latest read
        self.received = 0  # bytes read since the request was written
        self.closed = False
        self.waiter: asyncio.Future[None] | None = None
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.arrived = time.perf_counter()
        self.received += len(data)
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
        # httpx's URL: the host IDNA-encoded, the path percent-encoded, as httpx sends them.
        url = httpx.URL(target.url)
        self.target = target
        self.tls = url.scheme == "https"
        self.host = url.raw_host.decode("ascii")
        self.port = url.port or (443 if self.tls else 80)
        self._head = (
            b"POST "
            + url.raw_path
            + b" HTTP/1.1\r\nHost: "
            + url.netloc
            + b"\r\n"
            # Visible ASCII: a Target's key is checked, so a CR LF can never inject a header.
            + f"Authorization: Bearer {target.api_key.reveal()}\r\n".encode("ascii")
            + b"Content-Type: application/json\r\nAccept: text/event-stream\r\n"
            + b"Accept-Encoding: identity\r\n"
        )
        self.request = b""
        self.use_payload(payload)
        self.reader: _Reader | None = None
        self.keep = KeepAlive()
        #: Chats sent a second time because the server had closed the reused connection.
        self.resent = 0
        #: Whether a connection may carry another chat (off once the server closed one under
        #: a chat: each chat is then re-sent at most once in the connection's life).
        self.reuse = True
        #: The request being sent (its ``times`` grow as content arrives), for a watcher.
        self.current: Exchange | None = None

    def use_payload(self, payload: bytes) -> None:
        """The body of the next :meth:`send` (a conversation's next turn), same connection."""
        self.request = self._head + f"Content-Length: {len(payload)}\r\n\r\n".encode() + payload

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
        self.keep = KeepAlive()
        return reader

    def _reusable(self) -> _Reader | None:
        """The open connection, if the server lets it serve another chat."""
        reader = self.reader
        if reader is None:
            return None
        if (
            not self.reuse
            or reader.closed
            or reader.buffer
            or not self.keep.allows(time.perf_counter())
        ):
            self.close()  # closed, or bytes nobody asked for: it cannot carry a new answer
            return None
        return reader

    async def send(self) -> Exchange:
        """POST the chat and read the streamed reply; never raises for the server's behaviour."""
        ex = self.current = Exchange(stream_requested=True)
        ex.t_begin = ex.t_start = time.perf_counter()
        reused = self._reusable()
        if reused is None or not await self._attempt(ex, reused):
            if reused is not None:  # closed under the request: once more, on a new connection
                self.resent += 1
                self.reuse = False  # this server closes kept-alive connections: no more reuse
                ex = self.current = _again(ex)
                await self._attempt(ex, None)
                ex.t_start = ex.t_begin  # every figure from the first try's start
            else:
                await self._attempt(ex, None)
        ex.t_end = time.perf_counter()
        return ex

    async def _attempt(self, ex: Exchange, reused: _Reader | None) -> bool:
        """One try of ``ex``, on ``reused`` or a new connection.

        False when the reused connection failed before any byte of the answer
        arrived: the server had closed it, and never saw the request.
        """
        timeout = self.target.timeout
        reader = reused
        try:
            if reader is None:
                async with asyncio.timeout(timeout):
                    reader = self.reader = await self._connect()
            assert reader.transport is not None  # its buffer is empty (_reusable checked)
            reader.received = 0
            # Stamped before the write, never after it: the server may start at once, and a
            # client stalled between the two would take the stall off the server's time.
            ex.t_start = time.perf_counter()
            reader.transport.write(self.request)
            async with asyncio.timeout(timeout * TOTAL_TIMEOUT_FACTOR):
                await self._exchange(reader, ex, timeout)
            return True
        except TimeoutError:
            ex.failure, ex.failure_detail = (
                "timeout",
                _("no complete reply within {seconds} s").format(seconds=f"{timeout:g}"),
            )
        except OSError as exc:
            ex.failure = "connect" if not ex.status else "transport"
            ex.failure_detail = snippet(str(exc) or type(exc).__name__, 200)
            if ex.failure == "connect" or out_of_files(exc):  # the checks' own sentence
                ex.failure_detail = transport_reason(exc, self.target.url)
            if out_of_files(exc):  # out of file descriptors here: not the server's fault
                ex.failure = LOCAL_LIMIT
        except _Broken as exc:
            ex.failure, ex.failure_detail = exc.kind, str(exc)
        except DecodingError as exc:
            ex.failure, ex.failure_detail = "transport", str(exc)
        self.close()
        unanswered = reused is not None and reused.received == 0 and ex.status is None
        return not (unanswered and ex.failure in ("connect", "transport"))

    async def _exchange(self, reader: _Reader, ex: Exchange, timeout: float) -> None:
        async with asyncio.timeout(timeout):  # the answer's start; the whole reply has longer
            version, status, headers = await _final_head(reader)
        ex.t_headers = time.perf_counter()
        ex.status = status
        ex.content_type = headers.get("content-type", "").lower()
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        length = headers.get("content-length")
        inflate = BoundedDecoder(headers.get("content-encoding", ""), MAX_BODY_BYTES)
        size = int(length) if length and length.isdigit() else None
        body = _Body(reader, chunked, size, inflate, stall=timeout)
        if not 200 <= status < 300:
            data = await body.read_all()
            ex.failure = f"status {status}"
            ex.failure_detail = _error_text(data)
        elif ex.content_type.startswith("text/event-stream") or "json" not in ex.content_type:
            # Any 2xx answer that is not JSON is read as a stream (as the checks read it).
            ex.streamed = True
            await _read_events(body, ex)
        else:
            data = await body.read_all()
            _whole(ex, data, reader.arrived)
        ex.size = body.size
        self.keep.answered(version, headers)
        if self.keep.closing or not body.complete:
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


#: Interim (1xx) answers read and skipped before the answer, at most.
_MAX_INTERIM = 16


async def _final_head(reader: _Reader) -> tuple[str, int, dict[str, str]]:
    """The answer's status line and headers, past any interim 1xx answers (``100
    Continue``, ``103 Early Hints``: RFC 9110 15.2, a client reads and skips them)."""
    for _i in range(_MAX_INTERIM):
        version, status, headers = _parse_head(await _read_head(reader))
        if not 100 <= status < 200 or status == 101:  # 101 switches protocols: no answer
            return version, status, headers
    raise _Broken("transport", _("more than {n} interim answers").format(n=_MAX_INTERIM))


def _parse_head(head: bytes) -> tuple[str, int, dict[str, str]]:
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
    return parts[0], int(parts[1]), headers


def _again(first: Exchange) -> Exchange:
    """A fresh exchange for the second try of ``first``, started when ``first`` was."""
    ex = Exchange(stream_requested=True, resent=True)
    ex.t_begin = ex.t_start = first.t_start  # when the first try was on the wire
    return ex


class _Body:
    """The response body as it arrives: de-chunked, inflated with a bound, bounded in time.

    A wait for more bytes ends at ``quiet_until`` (the loop's clock): the reader
    of events moves it on at each complete event, :meth:`read_all` at each read.
    """

    def __init__(
        self,
        reader: _Reader,
        chunked: bool,
        length: int | None,
        inflate: BoundedDecoder,
        *,
        stall: float,
    ) -> None:
        self.reader = reader
        self.chunked = chunked
        self.left = length  # bytes still due (Content-Length), or None
        self.chunk_left = 0  # bytes left of the current chunk
        self.complete = False
        self.size = 0  # bytes yielded (inflated)
        self.inflate = inflate
        self.stall = stall
        self.loop = asyncio.get_running_loop()
        self.quiet_until = self.loop.time() + stall
        self.stalled = _("stalled after {n} bytes: no data for {seconds} s")

    def alive(self) -> None:
        """The reply showed life: the next wait may last ``stall`` seconds again."""
        self.quiet_until = self.loop.time() + self.stall

    async def pieces(self) -> Any:
        """Yield body bytes as they arrive (with the read's time in ``reader.arrived``)."""
        while not self.complete:
            data = self._take()
            if data:
                data = self.inflate.feed(data)
                self.size += len(data)
                if self.size > MAX_BODY_BYTES:  # our cap, not the server's cut
                    raise _Broken(TOO_LONG, _("reply over 4 MiB: the client stopped reading"))
                if data:
                    yield data
                continue
            if self.complete:
                return
            if not await self._more():
                if self.left is None and not self.chunked:
                    self.complete = True  # a body ended by closing the connection
                    return
                raise _Broken("transport", _("the connection closed mid-reply"))

    async def _more(self) -> bool:
        try:
            async with asyncio.timeout_at(self.quiet_until):
                return await self.reader.more()
        except TimeoutError:
            detail = self.stalled.format(n=self.size, seconds=f"{self.stall:g}")
            raise _Broken("timeout", detail) from None

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
            self.alive()
        return bytes(out)


async def _read_events(body: _Body, ex: Exchange) -> None:
    """Split the stream into events; each content piece timed by the read that brought it."""
    pending = b""
    body.stalled = _("stalled after {n} bytes: no complete event for {seconds} s")
    async for data in body.pieces():
        now = body.reader.arrived
        ex.reads += 1
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        pending += data
        *events, pending = pending.split(_EVENT_END)
        if events:  # a complete event, or a keep-alive comment: the reply is alive
            body.alive()
        for event in events:
            for line in event.split(b"\n"):
                if line.startswith(b"data:"):
                    ex.take_data(_text(line[5:].strip()), now)
    _judge_stream(ex)


def _text(data: bytes) -> str | bytes:
    """An event's data as text (json.loads of a str skips its encoding sniffing: a tenth of
    a chunk's cost); bytes that are no UTF-8 stay bytes, for the reply to call not JSON."""
    try:
        return data.decode()
    except UnicodeDecodeError:
        return data


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
    elif not ex.pieces and not ex.silent_answer:  # an empty first token is no bad stream
        ex.failure, ex.failure_detail = "bad stream", _("no content in the reply")


def _whole(ex: Exchange, data: bytes, now: float) -> None:
    """A 2xx JSON answer (not an event stream): one body, the text arrives at once."""
    try:
        obj = json.loads(data)
    except ValueError:
        ex.failure, ex.failure_detail = "bad body", _("the reply was neither a stream nor JSON")
        return
    ex.take_whole(obj, now)
    if not ex.pieces:
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
