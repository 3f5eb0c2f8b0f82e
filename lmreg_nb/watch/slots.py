"""Call slots shared fairly between the fleet's schools.

At most ``total`` calls are in flight at once (this machine's bound and the
connection pool's). When a slot frees and several schools wait, it goes to the
school holding the fewest slots (the longest waiting first among equals), so a
school whose 320 models hang holds its share and no more: the other schools'
calls go on beside it. A slot free while nobody waits is taken at once (no
slot idles because of the shares).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator

__all__ = ["FairSlots"]


class FairSlots:
    """``async with slots.hold(school): ...``: one call slot, fairly shared."""

    def __init__(self, total: int) -> None:
        if total < 1:
            raise ValueError("total must be at least 1")
        self.total = total
        self.used = 0
        self.in_use: dict[str, int] = {}
        self._waiting: dict[str, deque[asyncio.Future[None]]] = {}

    def _take(self, key: str) -> None:
        self.used += 1
        self.in_use[key] = self.in_use.get(key, 0) + 1

    def _give_back(self, key: str) -> None:
        self.used -= 1
        self.in_use[key] -= 1
        if not self.in_use[key]:
            del self.in_use[key]
        self._grant()

    def _grant(self) -> None:
        while self.used < self.total and self._waiting:
            # dicts keep insertion order: among equals, the school waiting longest.
            key = min(self._waiting, key=lambda k: self.in_use.get(k, 0))
            queue = self._waiting[key]
            future = queue.popleft()
            if not queue:
                del self._waiting[key]
            else:  # to the back of the line among schools with as many slots
                self._waiting[key] = self._waiting.pop(key)
            if future.done():  # cancelled while waiting
                continue
            self._take(key)
            future.set_result(None)

    async def acquire(self, key: str) -> None:
        """Wait for a slot for ``key``'s call."""
        if self.used < self.total and not self._waiting:
            self._take(key)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(key, deque()).append(future)
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self._give_back(key)  # granted as it was cancelled: pass it on
            raise

    def release(self, key: str) -> None:
        """Give back ``key``'s slot."""
        self._give_back(key)

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        """One slot for the length of the block."""
        await self.acquire(key)
        try:
            yield
        finally:
            self.release(key)
