"""The client checks itself: how late the toolkit's own event loop wakes while it measures.

A task sleeps ``TICK_MS`` at a time and notes each wake more than ``STALL_MS`` late
(contract: "The client checks itself"). Whatever held the loop then (another process
on both cores, the garbage collector, our own parsing) delayed every request's
timestamps as well: the figures taken during a stall hold the client's delay, not
only the server's. Use it around any run that measures time::

    async with LoopLag() as lag:
        ...  # send, time
    lag.result()  # ClientLag: stalls, worst_stall_ms, stalled_share, intervals

It costs one wake per 10 ms (about 0.1 % of a core).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from types import TracebackType

from ..summary.client import STALL_MS, TICK_MS, ClientLag, Stall

__all__ = ["LoopLag"]


class LoopLag:
    """Watches the running loop's lag from ``__aenter__`` to ``__aexit__``."""

    def __init__(self, tick_ms: float = TICK_MS, stall_ms: float = STALL_MS) -> None:
        self._tick = tick_ms / 1000.0
        self._stall = stall_ms / 1000.0
        self._stalls: list[Stall] = []
        self._start = self._end = 0.0
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> LoopLag:
        self._start = time.perf_counter()
        self._task = asyncio.create_task(self._watch(), name="lmreg-loop-lag")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._end = time.perf_counter()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _watch(self) -> None:
        while True:
            due = time.perf_counter() + self._tick
            await asyncio.sleep(self._tick)
            woke = time.perf_counter()
            if woke - due > self._stall:
                self._stalls.append(Stall(due, woke))

    def result(self) -> ClientLag:
        """The stalls so far (also while running: the run's time counts up to now)."""
        end = self._end or time.perf_counter()
        stalls = tuple(self._stalls)
        late = sum(s.end - s.start for s in stalls)
        return ClientLag(
            stalls=len(stalls),
            worst_stall_ms=max((s.ms for s in stalls), default=0.0),
            stalled_share=min(1.0, late / (end - self._start)) if end > self._start else 0.0,
            intervals=stalls,
        )
