"""How the mock school model saturates like a real server: slots, decode slowdown, cut streams.

- **Slots** (``MockModelConfig.slots`` = K, 0: unlimited): at most K requests
  are served at once; the others wait in a queue (first come, first served)
  and their reply starts only when a slot frees. A request's clock (``t0``,
  from which its first token is scheduled) starts when it gets its slot, so
  the time it queued adds to the time to first token its client sees.
- **Slowdown** (``MockModelConfig.slowdown`` = F): every inter-token gap is
  ``itl_ms * (1 + F * (streams - 1))``, ``streams`` being the replies holding
  a slot at that moment, so decoding slows as more run at once (as a GPU
  sharing its batch does). Each gap is added to the previous token's due time,
  so a change of load changes the pace from then on without drift.
- **interrupt** (a quirk): a new request (streamed or not) cuts every stream
  that arrived before it, as llama.cpp's server does with ``interrupt_requests``
  on (any request waiting for the model's lock ends the running stream at its
  next chunk). A stream counts from its arrival, so which one is cut does not
  depend on when its reply began. The cut stream sends
  ``data: [DONE]`` right after its last content chunk, with no
  ``finish_reason``, and ends.
- **Compute** (``prefill_tokens_per_s``, ``prefix_cache``, ``kv_tokens``): a
  request first waits for KV room, then for a slot; its first token is then
  due ``ttft_ms`` after its prefill ends in the one prefill queue. See
  :mod:`lmreg_nb.sandbox.school_model.compute`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Protocol

from .compute import KvRoom, Prefill

__all__ = ["Load", "Paced"]


class Paced(Protocol):
    """What the load model needs of a reply (:class:`~.reply.Reply`)."""

    t0: float
    ttft: float
    itl: float
    pace: Callable[[int], float] | None
    prompt: list[str]  # the prompt's tokens
    tokens: list[str]  # the reply's tokens


class Pace:
    """Due times of one reply's tokens under a varying decode slowdown."""

    __slots__ = ("_last", "_last_k", "_load", "_reply")

    def __init__(self, reply: Paced, load: Load) -> None:
        self._reply = reply
        self._load = load
        self._last = 0.0
        self._last_k = -1

    def __call__(self, k: int) -> float:
        reply = self._reply
        if k == 0:
            due = reply.t0 + reply.ttft
        elif k == self._last_k + 1:
            due = self._last + reply.itl * self._load.factor()
        else:  # a jump (a non-streamed reply's end): the whole reply at today's pace
            return reply.t0 + reply.ttft + k * reply.itl * self._load.factor()
        self._last, self._last_k = due, k
        return due


class Load:
    """One mock's shared state: its slots, the streams in progress, the slowdown."""

    def __init__(
        self,
        slots: int = 0,
        slowdown: float = 0.0,
        *,
        prefill_tokens_per_s: float = 0.0,
        prefix_cache: bool = False,
        kv_tokens: int = 0,
    ) -> None:
        self.slots = slots
        self.slowdown = slowdown
        self._gate = asyncio.Semaphore(slots) if slots > 0 else None
        self._kv = KvRoom(kv_tokens) if kv_tokens > 0 else None
        computes = prefill_tokens_per_s > 0 or prefix_cache
        self._prefill = Prefill(prefill_tokens_per_s, prefix_cache) if computes else None
        self._cut: set[asyncio.Event] = set()  # one event per stream that a newcomer cuts
        self.active = 0

    def factor(self) -> float:
        """The decode slowdown now: 1 + F * (streams - 1)."""
        return 1.0 + self.slowdown * max(self.active - 1, 0)

    @contextlib.asynccontextmanager
    async def slot(self, reply: Paced) -> AsyncIterator[None]:
        """Hold KV room and a slot while a reply is produced; its clock starts when it has both.

        With a prefill queue the clock starts when the prompt's prefill ends.
        """
        kv, need = self._kv, len(reply.prompt) + len(reply.tokens)
        if kv is not None:
            await kv.acquire(need)
        try:
            async with self._slot(reply):
                yield
        finally:
            if kv is not None:
                kv.release(need)

    @contextlib.asynccontextmanager
    async def _slot(self, reply: Paced) -> AsyncIterator[None]:
        gate = self._gate
        if gate is not None:
            await gate.acquire()
        self.active += 1
        try:
            if gate is not None or self._kv is not None:
                reply.t0 = time.monotonic()  # the queue wait counts before the first token
            if self._prefill is not None:
                text = "".join(reply.tokens)  # what a next turn sends back as history
                reply.t0 = self._prefill.schedule(reply.prompt, reply.t0, text)
            if self.slowdown:
                reply.pace = Pace(reply, self)
            yield
        finally:
            self.active -= 1
            if gate is not None:
                gate.release()

    def arrive(self, streamed: bool) -> asyncio.Event | None:
        """A request came (interrupt): cut every stream before it; a stream's own cut event."""
        for other in self._cut:  # llama.cpp: a new request ends the running ones
            other.set()
        if not streamed:
            return None
        cut = asyncio.Event()
        self._cut.add(cut)  # at once, not when its reply begins: the order is the arrival's
        return cut

    async def stream(
        self, reply: Paced, body: AsyncGenerator[bytes, None], *, cut: asyncio.Event | None = None
    ) -> AsyncIterator[bytes]:
        """``body`` served inside a slot; ``cut`` (from :meth:`arrive`): newcomers end it."""
        if cut is None:
            cut = asyncio.Event()  # never set
        async with self.slot(reply):
            try:
                async for piece in body:
                    yield piece
                    if cut.is_set():
                        yield b"data: [DONE]\n\n"
                        return
            finally:
                self._cut.discard(cut)
                await body.aclose()
