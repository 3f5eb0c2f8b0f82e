"""Running one capacity level: C chats in a closed loop until its verdict is settled.

The figures and the judgement are :mod:`lmreg_nb.probe.load.levels`'s; the rule that
ends a level is :mod:`lmreg_nb.probe.load.settle`'s. Here: the workers (one chat
each, sending its next request when the previous one ends), a look at the
requests every ``TICK_S`` to end the level as soon as its verdict is settled
(or at its ceiling or time cap), and the requests still running then, cut and
counted by what is known of them: their first token, or that they had waited
past the SLO without one.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Protocol

from ...errors import LmregError
from ...i18n import _
from ..target import Target
from ..wire.exchange import Exchange
from ..wire.reasons import LOCAL_LIMIT
from ..wire.stream_client import ChatConnection
from .levels import CUT, SLO, Level, LevelPlan, Sample, judge, to_sample
from .settle import Tally, settled

__all__ = ["PROGRESS_EVERY_S", "TICK_S", "Connection", "run_level"]

#: How often a running level looks at its requests (to end it), and reports its progress.
TICK_S = 0.02
PROGRESS_EVERY_S = 0.5
_DEFAULT_PLAN = LevelPlan()


async def run_level(
    target: Target,
    payload: bytes,
    concurrency: int,
    slo: SLO,
    plan: LevelPlan = _DEFAULT_PLAN,
    *,
    finish_seen: bool = False,
    on_progress: Callable[[int], None] | None = None,
    connect: Callable[[Target, bytes], Connection] = ChatConnection,
) -> Level:
    """Measure ``concurrency`` closed-loop chats until the verdict is settled, then judge them.

    Each chat has a connection of its own from the lean client
    (:mod:`lmreg_nb.probe.wire.stream_client`, or ``connect``), whose request in
    flight shows its first token as it comes.
    ``on_progress(requests finished)`` is called about twice a second.
    """
    run = _LevelRun(target, payload, plan, slo, concurrency, connect)
    now = await run.run(on_progress)
    _cut_soft(run.samples, finish_seen)
    duration = now - run.start
    level = Level.measured(concurrency, run.samples, duration, duration)
    judge(level, slo)
    return level


def _no_verdict(seen: str) -> str:
    return _(
        "no capacity verdict: the checking machine ran out of file descriptors, not the "
        "model ({seen})"
    ).format(seen=seen.rstrip("."))


def _cut_soft(samples: list[Sample], finish_seen: bool) -> None:
    """[DONE] with no finish_reason is a cut stream once the server has shown it sends one."""
    if finish_seen or any(s.finish for s in samples):
        for i, sample in enumerate(samples):
            if sample.soft_cut:
                detail = _("[DONE] with no finish_reason")
                samples[i] = Sample(False, CUT, detail, end_s=sample.end_s, turn_s=sample.turn_s)


class Connection(Protocol):
    """What a level needs of a chat connection (:class:`~.stream_client.ChatConnection`)."""

    current: Exchange | None

    async def send(self) -> Exchange: ...

    def close(self) -> None: ...


def _first_token(conn: Connection) -> float | None:
    ex = conn.current
    return ex.times[0] if ex is not None and ex.times else None


class _LevelRun:
    """One level: its workers, its requests in flight, and the decision to end it."""

    def __init__(
        self,
        target: Target,
        payload: bytes,
        plan: LevelPlan,
        slo: SLO,
        concurrency: int,
        connect: Callable[[Target, bytes], Connection],
    ) -> None:
        self.target, self.payload = target, payload
        self.plan, self.slo, self.concurrency, self.connect = plan, slo, concurrency, connect
        self.start = time.perf_counter()
        self.samples: list[Sample] = []
        self.live: dict[int, tuple[float, Connection]] = {}  # worker -> (due, conn)
        self.fast = self.slow = self.errors = 0  # finished requests, classified
        self.late = 0  # of the slow, those with a first token past the SLO
        self.wake = asyncio.Event()  # set by a worker at the ceiling

    def _add(self, sample: Sample) -> None:
        self.samples.append(sample)
        if not sample.ok:
            self.errors += 1
        elif self._fast(sample.ttft_ms, sample.itl_ms):
            self.fast += 1
        else:
            self.slow += 1
            self.late += sample.ttft_ms is not None and sample.ttft_ms > self.slo.ttft_ms

    def _fast(self, ttft_ms: float | None, itl_ms: float | None) -> bool:
        slo = self.slo
        if ttft_ms is not None and ttft_ms > slo.ttft_ms:
            return False
        return slo.itl_ms is None or itl_ms is None or itl_ms <= slo.itl_ms

    def tally(self, now: float) -> Tally:
        """The requests so far, those in flight classified by what is known of them."""
        fast, slow, unknown, late = self.fast, self.slow, 0, self.late
        limit = self.slo.ttft_ms / 1000
        for due, conn in self.live.values():
            first = _first_token(conn)
            if first is not None:
                if first - due > limit:
                    slow, late = slow + 1, late + 1
                elif self.slo.itl_ms is None:
                    fast += 1
                else:
                    unknown += 1  # its ITL is known only at its end
            elif conn is not None and now - due > limit:
                slow, late = slow + 1, late + 1  # no first token yet, already past the SLO
            else:
                unknown += 1
        finished = len(self.samples)
        return Tally(fast, slow, unknown, self.errors, finished, late)

    def done(self, now: float) -> bool:
        """Whether the level ends now: its cap, its ceiling, or a settled verdict."""
        elapsed, plan, c = now - self.start, self.plan, self.concurrency
        if elapsed >= plan.max_seconds or len(self.samples) >= plan.ceiling(c):
            return True
        if elapsed < plan.min_seconds:
            return False
        verdict = settled(
            self.tally(now),
            floor=plan.floor(c),
            most=plan.ceiling(c) + c,
            max_error_rate=self.slo.max_error_rate,
        )
        return verdict is not None

    def _cut(self, now: float) -> list[Sample]:
        """The requests in flight at the end, as partial samples (first token, or waiting)."""
        cut: list[Sample] = []
        end_s = now - self.start
        for due, conn in self.live.values():
            first = _first_token(conn)
            if first is not None:
                cut.append(Sample(True, ttft_ms=(first - due) * 1000, end_s=end_s, partial=True))
            elif conn is not None and (now - due) * 1000 > self.slo.ttft_ms:
                waited = (now - due) * 1000
                cut.append(Sample(True, ttft_ms=waited, end_s=end_s, partial=True, waiting=True))
            # else: not known yet, and not counted (a settled verdict held either way)
        return cut

    async def worker(self, index: int) -> None:
        """One chat in a closed loop until the level ends (cancelled) or reaches its ceiling."""
        due = self.start
        ceiling = self.plan.ceiling(self.concurrency)
        conn = self.connect(self.target, self.payload)
        try:
            while len(self.samples) < ceiling:
                self.live[index] = (due, conn)
                ex = await conn.send()
                del self.live[index]
                if ex.failure == LOCAL_LIMIT:
                    # Out of file descriptors here: the server never saw the request, and
                    # a level judged on it would be a verdict about the model. None is given.
                    raise LmregError(_no_verdict(ex.failure_detail))
                self._add(to_sample(ex, due, self.start))
                due = ex.t_end  # closed loop: the next request is due when this one ends
            self.wake.set()  # the ceiling: the level ends now
        finally:
            conn.close()

    async def run(self, on_progress: Callable[[int], None] | None) -> float:
        """Run the workers until :meth:`done`; cut what still runs. Returns when it ended."""
        tasks = [asyncio.ensure_future(self.worker(i)) for i in range(self.concurrency)]
        report = self.start + PROGRESS_EVERY_S
        try:
            while not self.wake.is_set() and not any(t.done() for t in tasks):
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wake.wait(), TICK_S)
                now = time.perf_counter()
                if self.done(now):
                    break
                if on_progress is not None and now >= report:
                    report = now + PROGRESS_EVERY_S
                    on_progress(len(self.samples))
        finally:
            now = time.perf_counter()
            cut = self._cut(now)  # before the cancellation clears the requests in flight
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        for task in tasks:
            if not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]  # a worker's bug is ours
        self.samples.extend(cut)
        return now
