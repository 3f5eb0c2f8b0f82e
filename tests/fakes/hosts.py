"""Addresses served in this process: servers in the client's own event loop, over a socketpair.

:func:`serve` (a protocol factory) and :func:`serve_asgi` (an ASGI app, through uvicorn's
own HTTP/1.1 protocol) give an address ``http://127.0.0.1:PORT`` whose port nothing binds.
While it is served, a connection that code in this process opens to it with asyncio
(``loop.create_connection``: httpx's async clients through anyio, the lean load client,
the TLS inspector's ``open_connection``) gets one end of a ``socket.socketpair()`` and
the server's protocol the other end, in the same event loop: the real client and the
real server, HTTP/1.1 (or TLS) on a real socket, and no port, no listening socket, no
thread, no process. The lane guard (tests/lanes.py) sees nothing to object to.

Synchronous httpx clients (the chat box's ``stream_chat``, ``httpx.post``) reach the same
servers through one event loop in a helper thread (an anyio blocking portal, the way
Starlette's TestClient runs its app), chunk by chunk, their timeouts honoured.

Every other address goes out as usual: ``127.0.0.1:9`` is still refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import socket
import ssl as _ssl
import threading
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx

__all__ = [
    "HOST",
    "asgi_factory",
    "close",
    "mock_served",
    "read_body",
    "replaying",
    "serve",
    "serve_asgi",
    "serve_dropped",
    "served",
    "stop",
]

#: The host every served address names (a port on it is only a key here).
HOST = "127.0.0.1"
_NAMES = {"127.0.0.1", "localhost"}
#: Ports handed out: below 1024, which no other user of this machine can bind, so a
#: connection that missed this routing is refused instead of reaching someone's server.
_PORTS = range(600, 1000)

Factory = Callable[[], asyncio.BaseProtocol]


@dataclass
class _Server:
    factory: Factory
    ssl: _ssl.SSLContext | None


_servers: dict[int, _Server] = {}
_next = itertools.cycle(_PORTS)
_lock = threading.Lock()
_installed = False
_portal: Any = None
_portal_cm: Any = None
_async_transports: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def serve(factory: Factory, *, ssl: _ssl.SSLContext | None = None) -> int:
    """Serve ``factory``'s protocol (one per connection) at a new port; returns the port."""
    _install()
    with _lock:
        for _ in _PORTS:
            port = next(_next)
            if port not in _servers:
                _servers[port] = _Server(factory, ssl)
                return port
    raise RuntimeError("no free in-process port left")


def _dropped() -> asyncio.BaseProtocol:
    raise AssertionError("a dropped port never connects")


def serve_dropped() -> int:
    """A port whose connections never connect (a firewall that drops the packets): an
    asyncio connection to it waits until the caller's own timeout."""
    return serve(_dropped)


def stop(port: int) -> None:
    """Stop serving ``port`` (its open connections finish on their own)."""
    with _lock:
        _servers.pop(port, None)


def asgi_factory(app: Any) -> Factory:
    """uvicorn's HTTP/1.1 protocol serving ``app`` (one instance per connection)."""
    import email.utils

    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol
    from uvicorn.server import ServerState

    # log_config=None: uvicorn leaves the logging configuration (and pytest's caplog) alone.
    config = uvicorn.Config(app, http="h11", lifespan="off", log_config=None, access_log=False)
    config.load()
    state = ServerState()
    date = email.utils.formatdate(usegmt=True).encode()
    state.default_headers = [(b"date", date), *config.encoded_headers]  # as uvicorn sends
    return lambda: H11Protocol(config, state, {})


def serve_asgi(app: Any, *, ssl: _ssl.SSLContext | None = None) -> str:
    """Serve ``app`` at a new port; returns its base URL (``https`` with ``ssl``)."""
    port = serve(asgi_factory(app), ssl=ssl)
    return f"{'https' if ssl else 'http'}://{HOST}:{port}"


@contextlib.contextmanager
def served(app: Any, *, ssl: _ssl.SSLContext | None = None) -> Iterator[str]:
    """``app`` served for the block; yields its base URL."""
    base = serve_asgi(app, ssl=ssl)
    try:
        yield base
    finally:
        stop(int(base.rsplit(":", 1)[1]))


def close() -> None:
    """Stop the portal's thread (tests/conftest.py calls it once, at the end of the session)."""
    global _portal, _portal_cm
    with _lock:
        cm, _portal, _portal_cm = _portal_cm, None, None
    if cm is not None:
        cm.__exit__(None, None, None)


def _lookup(host: object, port: object) -> _Server | None:
    if host not in _NAMES or not isinstance(port, int):
        return None
    with _lock:
        return _servers.get(port)


# -- asyncio: the server's end of a socketpair in the caller's loop ----------------------


async def _connect(
    loop: asyncio.AbstractEventLoop,
    real: Any,
    server: _Server,
    protocol_factory: Factory,
    ssl: Any,
    server_hostname: str | None,
) -> Any:
    mine, theirs = socket.socketpair()
    # The server's side as a task of its own: with TLS its handshake waits for the
    # client's, which may come with the connection (asyncio) or after it (anyio).
    accepting = loop.create_task(
        loop.connect_accepted_socket(server.factory, sock=theirs, ssl=server.ssl)
    )
    _accepting.add(accepting)
    accepting.add_done_callback(_accepted)
    try:
        return await real(
            loop, protocol_factory, sock=mine, ssl=ssl,
            server_hostname=server_hostname if ssl else None,
        )  # fmt: skip
    except BaseException:
        accepting.cancel()
        theirs.close()
        raise


#: Server sides still shaking hands (a task needs a reference until it ends).
_accepting: set[asyncio.Task[Any]] = set()


def _accepted(task: asyncio.Task[Any]) -> None:
    _accepting.discard(task)
    if not task.cancelled():
        task.exception()  # a refused handshake is the client's error: retrieved, not logged


def _install() -> None:
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    real_connect: Any = asyncio.base_events.BaseEventLoop.create_connection

    async def create_connection(
        self: asyncio.AbstractEventLoop,
        protocol_factory: Factory,
        host: str | None = None,
        port: int | None = None,
        *,
        ssl: Any = None,
        sock: socket.socket | None = None,
        server_hostname: str | None = None,
        **kwargs: Any,
    ) -> Any:
        server = None if sock is not None else _lookup(host, port)
        if server is None:
            return await real_connect(
                self, protocol_factory, host, port, ssl=ssl, sock=sock,
                server_hostname=server_hostname, **kwargs,
            )  # fmt: skip
        if server.factory is _dropped:
            await asyncio.Event().wait()  # no SYN-ACK, ever
        name = server_hostname if server_hostname is not None else host
        return await _connect(self, real_connect, server, protocol_factory, ssl, name)

    asyncio.base_events.BaseEventLoop.create_connection = create_connection  # type: ignore[method-assign]

    for module in _httpx_modules():
        _patch_sync(module)


def _httpx_modules() -> list[Any]:
    """httpx, and httpx2 (the fork the openai package uses) when it is installed."""
    import importlib

    found = [httpx]
    with contextlib.suppress(ImportError):
        found.append(importlib.import_module("httpx2"))
    return found


def _patch_sync(module: Any) -> None:
    real_sync = module.HTTPTransport.handle_request

    def handle_request(self: Any, request: Any) -> Any:
        if _lookup(request.url.host, request.url.port) is None:
            return real_sync(self, request)
        return _sync_send(module, self, request)

    module.HTTPTransport.handle_request = handle_request


# -- synchronous httpx: the same servers through a portal's event loop -------------------


def _portal_loop() -> Any:
    global _portal, _portal_cm
    with _lock:
        if _portal is None:
            from anyio.from_thread import start_blocking_portal

            _portal_cm = start_blocking_portal()
            _portal = _portal_cm.__enter__()
        return _portal


class _SyncStream:
    """An async response body read from a synchronous client, chunk by chunk."""

    def __init__(self, portal: Any, stream: Any) -> None:
        self._portal, self._stream = portal, stream

    def __iter__(self) -> Iterator[bytes]:
        chunks = self._stream.__aiter__()
        while True:
            try:
                yield self._portal.call(chunks.__anext__)
            except StopAsyncIteration:
                return

    def close(self) -> None:
        self._portal.call(self._stream.aclose)


@functools.cache
def _stream_class(module: Any) -> type[_SyncStream]:
    return type("SyncStream", (_SyncStream, module.SyncByteStream), {})


def _sync_send(module: Any, transport: Any, request: Any) -> Any:
    portal = _portal_loop()
    with _lock:
        async_transport = _async_transports.get(transport)
        if async_transport is None:
            context = transport._pool._ssl_context  # the client's own verify settings
            async_transport = _async_transports[transport] = module.AsyncHTTPTransport(
                verify=context if context is not None else True
            )
    copy = module.Request(
        request.method, request.url, headers=request.headers, content=request.read(),
        # The timeouts, not a synchronous trace callback (the async transport awaits it).
        extensions={k: v for k, v in request.extensions.items() if k != "trace"},
    )  # fmt: skip
    answer = portal.call(async_transport.handle_async_request, copy)
    stream = _stream_class(module)(portal, answer.stream)
    return module.Response(
        answer.status_code,
        headers=answer.headers,
        stream=stream,
        extensions=answer.extensions,
        request=request,
    )


@contextlib.contextmanager
def mock_served(
    config: Any, *, certfile: str | None = None, keyfile: str | None = None
) -> Iterator[str]:
    """The mock school model of ``config`` served in this process (as
    ``lmreg_nb.sandbox.school_model.serving`` serves it on a port); ``certfile`` (and
    ``keyfile``, PEM): https with that certificate. Yields its base URL."""
    from lmreg_nb.sandbox.school_model import create_app

    context = None
    if certfile is not None:
        context = _ssl.create_default_context(_ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(certfile, keyfile)
    with served(create_app(config), ssl=context) as base:
        yield base


async def read_body(receive: Any) -> bytes:
    """An ASGI request's whole body (a wrapper that looks at it before the app does)."""
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def replaying(body: bytes, receive: Any) -> Any:
    """An ASGI ``receive`` giving ``body`` once, then what the connection says (a
    disconnect): for the app behind a wrapper that read the body first."""
    replayed = False

    async def again() -> dict[str, Any]:
        nonlocal replayed
        if replayed:
            return await receive()  # type: ignore[no-any-return]
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    return again
