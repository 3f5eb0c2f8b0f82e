"""Call slots shared fairly between the fleet's schools.

At most ``total`` calls are in flight at once (this machine's bound and the
connection pool's), and one school holds at most ``share`` of them: the total
divided among the schools of the round, never fewer than :data:`MIN_SHARE`.
When a slot frees and several schools wait, it goes to the school holding the
fewest (the longest waiting first among equals). So a school whose 320 models
hang holds its share and no more: the other schools' calls go on beside it.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections import deque
from collections.abc import AsyncIterator

__all__ = ["MIN_SHARE", "FairSlots"]

#: The fewest slots a school may hold at once, however many schools share the total
#: (1,000 schools at 32 slots: a school of 50 models still calls 4 at a time).
MIN_SHARE = 4


class FairSlots:
    """``async with slots.hold(school): ...``: one call slot, fairly shared."""

    def __init__(self, total: int, schools: int = 1) -> None:
        if total < 1:
            raise ValueError("total must be at least 1")
        self.total = total
        self.share = min(total, max(MIN_SHARE, math.ceil(total / max(1, schools))))
        self.used = 0
        self.in_use: dict[str, int] = {}
        self._waiting: dict[str, deque[asyncio.Future[None]]] = {}

    def _grant(self) -> None:
        while self.used < self.total:
            eligible = [k for k in self._waiting if self.in_use.get(k, 0) < self.share]
            if not eligible:
                return
            # dicts keep insertion order: among equals, the school waiting longest.
            key = min(eligible, key=lambda k: self.in_use.get(k, 0))
            queue = self._waiting.pop(key)
            future = queue.popleft()
            if queue:
                self._waiting[key] = queue  # to the back of the line
            if future.done():  # cancelled while waiting
                continue
            self.used += 1
            self.in_use[key] = self.in_use.get(key, 0) + 1
            future.set_result(None)

    async def acquire(self, key: str) -> None:
        """Wait for a slot for ``key``'s call."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(key, deque()).append(future)
        self._grant()
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release(key)  # granted as it was cancelled: pass it on
            raise

    def release(self, key: str) -> None:
        """Give back ``key``'s slot."""
        self.used -= 1
        self.in_use[key] -= 1
        if not self.in_use[key]:
            del self.in_use[key]
        self._grant()

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        """One slot for the length of the block."""
        await self.acquire(key)
        try:
            yield
        finally:
            self.release(key)
