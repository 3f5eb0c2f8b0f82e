"""A connection pool that stays cheap with many connections: shards of small httpx pools.

Used by `lmreg-nb watch`, whose rounds call hundreds of registered models at once.

httpcore's pool (1.0.x) rescans every connection, and for each idle one counts
them all again, whenever a request starts or ends: its cost grows with the
square of the pool size, and at 128 connections it dominated the CPU time of the
load test that once ran on httpx. This transport splits the connections over shards of at
most ``SHARD`` (8) connections, each an ordinary ``httpx.AsyncHTTPTransport`` (so
connection handling, TLS and error mapping stay httpx's own), and sends each
request to the shard with the fewest requests in flight. With at most
``max_connections`` requests in flight, that shard always has a free connection.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import httpx

from ..._tls import tls_context

__all__ = ["SHARD", "ShardedTransport", "pooled_transport"]

#: Connections per shard; small enough that httpcore's rescans stay cheap.
SHARD = 8


class _Tracked(httpx.AsyncByteStream):
    """A response body that reports when it is closed (the request leaves its shard)."""

    def __init__(self, stream: httpx.AsyncByteStream, done: Callable[[], None]) -> None:
        self._stream = stream
        self._done: Callable[[], None] | None = done

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()
        finally:
            done, self._done = self._done, None
            if done is not None:
                done()


class ShardedTransport(httpx.AsyncBaseTransport):
    """``max_connections`` connections as shards of ordinary httpx transports."""

    def __init__(self, max_connections: int) -> None:
        count = max(1, -(-max_connections // SHARD))
        size = -(-max_connections // count)
        limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
        self._shards = [
            httpx.AsyncHTTPTransport(limits=limits, verify=tls_context()) for _ in range(count)
        ]
        self._busy = [0] * count

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` through the least busy shard."""
        busy = self._busy
        index = busy.index(min(busy))
        busy[index] += 1

        def done() -> None:
            busy[index] -= 1

        try:
            response = await self._shards[index].handle_async_request(request)
        except BaseException:
            done()
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _Tracked(response.stream, done)
        return response

    async def aclose(self) -> None:
        """Close every shard's connections."""
        for shard in self._shards:
            await shard.aclose()


def pooled_transport(max_connections: int) -> httpx.AsyncBaseTransport:
    """A plain httpx transport for a small pool, a sharded one for a large pool."""
    if max_connections <= SHARD:
        limits = httpx.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        )
        return httpx.AsyncHTTPTransport(limits=limits, verify=tls_context())
    return ShardedTransport(max_connections)
