"""An ASGI app in this event loop, streamed: an httpx transport for tests of timing and streams.

httpx's own ``ASGITransport`` runs the app to its end and hands over the whole body
(encode/httpx#2186; the streaming PR #3059 is still open), so a test cannot see when
each chunk of a stream arrives, nor send a second request while the first one streams.
:class:`StreamingASGITransport` runs the app as a task of the caller's event loop and
returns the response at ``http.response.start``; its body is read chunk by chunk as the
app sends it. It honours the request's read timeout (``httpx.ReadTimeout``, as a real
transport would), and closing the response early disconnects the app's request.

No socket, no thread: the mock school model's sleeps (time to first token, time between
tokens) are the only waits, so figures are as exact as over loopback, or more.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

import httpx

Message = MutableMapping[str, Any]
ASGIApp = Callable[
    [
        MutableMapping[str, Any],
        Callable[[], Awaitable[Message]],
        Callable[[Message], Awaitable[None]],
    ],
    Awaitable[None],
]

__all__ = ["StreamingASGITransport"]


class _Body(httpx.AsyncByteStream):
    """The app's body chunks as they come; closing it stops the app's request."""

    def __init__(
        self, chunks: asyncio.Queue[bytes | BaseException | None], task: asyncio.Task[None],
        disconnected: asyncio.Event, read_timeout: float | None, request: httpx.Request,
    ) -> None:  # fmt: skip
        self._chunks, self._task, self._disconnected = chunks, task, disconnected
        self._timeout, self._request = read_timeout, request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            try:
                chunk = await asyncio.wait_for(self._chunks.get(), self._timeout)
            except TimeoutError:
                raise httpx.ReadTimeout("no body chunk in time", request=self._request) from None
            if chunk is None:
                return
            if isinstance(chunk, BaseException):
                raise httpx.RemoteProtocolError(
                    f"the app failed mid-stream: {chunk!r}", request=self._request
                ) from chunk
            yield chunk

    async def aclose(self) -> None:
        self._disconnected.set()
        if not self._task.done():
            self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task


class StreamingASGITransport(httpx.AsyncBaseTransport):
    """Send each request to ``app`` in this event loop; stream its answer back.

    ``client`` is the (host, port) the app sees as the peer. An exception the app
    raises before it answers comes back as a 500, as a server would answer it.
    """

    def __init__(self, app: ASGIApp, *, client: tuple[str, int] = ("127.0.0.1", 50000)) -> None:
        self.app = app
        self.client = client

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        scope = {
            "type": "http", "asgi": {"version": "3.0", "spec_version": "2.4"},
            "http_version": "1.1", "method": request.method,
            "headers": [(k.lower(), v) for k, v in request.headers.raw],
            "scheme": request.url.scheme, "path": request.url.path,
            "raw_path": request.url.raw_path.split(b"?")[0],
            "query_string": request.url.query, "server": (request.url.host, request.url.port),
            "client": self.client, "root_path": "",
        }  # fmt: skip
        timeout = request.extensions.get("timeout", {}).get("read")
        started: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        chunks: asyncio.Queue[bytes | BaseException | None] = asyncio.Queue()
        disconnected = asyncio.Event()
        sent_body = False

        async def receive() -> Message:
            nonlocal sent_body
            if not sent_body:
                sent_body = True
                return {"type": "http.request", "body": body, "more_body": False}
            await disconnected.wait()
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            if message["type"] == "http.response.start":
                started.set_result(message)
            elif message["type"] == "http.response.body":
                if disconnected.is_set():
                    raise OSError("the client went away")  # as a server's send would
                if message.get("body"):
                    chunks.put_nowait(bytes(message["body"]))
                if not message.get("more_body", False):
                    chunks.put_nowait(None)

        async def run() -> None:
            try:
                await self.app(scope, receive, send)
            except Exception as exc:
                if not started.done():
                    started.set_exception(exc)
                else:
                    chunks.put_nowait(exc)
            else:
                if not started.done():
                    started.set_exception(RuntimeError("the app sent no answer"))
            finally:
                chunks.put_nowait(None)  # a body never ended by the app ends here

        task = asyncio.get_running_loop().create_task(run())
        try:
            start = await asyncio.wait_for(asyncio.shield(started), timeout)
        except TimeoutError:
            disconnected.set()
            task.cancel()
            raise httpx.ReadTimeout("no answer in time", request=request) from None
        except Exception:
            return httpx.Response(500, request=request, text="Internal Server Error")
        return httpx.Response(
            start["status"],
            headers=start.get("headers", []),
            stream=_Body(chunks, task, disconnected, timeout, request),
            request=request,
        )
