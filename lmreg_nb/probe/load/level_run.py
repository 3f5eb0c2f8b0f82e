"""Running one capacity level: C chats in a closed loop until its verdict is settled.

The figures and the judgement are :mod:`lmreg_nb.probe.load.levels`'s; the rule that
ends a level is :mod:`lmreg_nb.probe.load.settle`'s. Here: the workers (one chat
each, sending its next request when the previous one ends), a look at the
requests every ``TICK_S`` to end the level as soon as its verdict is settled
(or at its ceiling or time cap), the hold (no new request while the running
replies end whole, once they alone stand between the level and "clearly inside":
:func:`~lmreg_nb.probe.load.settle.hopeful`), and the requests still running at
the end, cut and judged on what they streamed so far
(:func:`~lmreg_nb.probe.load.samples.cut_sample`): their first token, their pace
and longest pause so far, or that they had waited past the SLO without one, or
stalled after their first token.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Callable
from typing import Protocol

from ...errors import LmregError
from ...i18n import _
from ..target import Target
from ..wire.exchange import Exchange
from ..wire.reasons import LOCAL_LIMIT
from ..wire.stream_client import ChatConnection
from .levels import CUT, SLO, Level, LevelPlan, Sample, cut_sample, judge, to_sample
from .samples import PACE_SEEN_S
from .settle import Measure, Tally, hopeful, settled

__all__ = ["PROGRESS_EVERY_S", "TICK_S", "Connection", "run_level"]


def _classify(counts: list[int], slow: bool, *, certain: bool) -> None:
    """Count one request in flight in a figure (``[fast, slow, unknown, certain]``): slow
    when its figure so far is over the limit, else unknown (only a whole reply is fast)."""
    if slow:
        counts[1] += 1
        counts[3] += certain
    else:
        counts[2] += 1


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
    level.started, level.in_flight = run.start, run.in_flight
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
                samples[i] = Sample(
                    False,
                    CUT,
                    detail,
                    end_s=sample.end_s,
                    turn_s=sample.turn_s,
                    due_s=sample.due_s,
                    resent=sample.resent,
                )


class Connection(Protocol):
    """What a level needs of a chat connection (:class:`~.stream_client.ChatConnection`)."""

    current: Exchange | None

    async def send(self) -> Exchange: ...

    def close(self) -> None: ...


class _Counts:
    """One figure's finished requests: fast, slow (all certain: a finished one is final)."""

    def __init__(self) -> None:
        self.fast = self.slow = 0

    def add(self, value: float | None, limit: float) -> None:
        if value is None:
            return  # not measured on this request (one token): not in this figure's p90
        if value > limit:
            self.slow += 1
        else:
            self.fast += 1


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
        self.in_flight = 0  # requests running when the level ended
        self.errors = 0  # finished requests that failed
        self.first = _Counts()  # finished requests by their first token (all slow are late)
        self.pace, self.pause = _Counts(), _Counts()
        self.finished_by: set[int] = set()  # workers with a finished request (pace shown)
        #: Running replies' closed gaps scanned so far: worker -> (exchange, times seen, widest).
        self.gaps: dict[int, tuple[Exchange | None, int, float]] = {}
        self.wake = asyncio.Event()  # set by a worker at the ceiling
        #: Clear while the level holds (no new request until its running replies end).
        self.sending = asyncio.Event()
        self.sending.set()
        self.hold_from = 0  # finished requests before the level may hold (again)

    def _add(self, index: int, sample: Sample) -> None:
        self.samples.append(sample)
        self.finished_by.add(index)
        if not sample.ok:
            self.errors += 1
            return
        slo = self.slo
        self.first.add(sample.ttft_ms or 0.0, slo.ttft_ms)
        if slo.itl_ms is not None:
            self.pace.add(sample.itl_ms, slo.itl_ms)
        if slo.pause_ms is not None:
            self.pause.add(sample.pause_ms, slo.pause_ms)

    def tally(self, now: float) -> Tally:
        """The requests so far, those in flight classified by what is known of them."""
        slo = self.slo
        limit = slo.ttft_ms / 1000
        fast, slow, unknown, late = self.first.fast, self.first.slow, 0, self.first.slow
        pace = [self.pace.fast, self.pace.slow, 0, self.pace.slow]  # fast, slow, unknown, certain
        pause = [self.pause.fast, self.pause.slow, 0, self.pause.slow]
        shown = len(self.finished_by)
        for index, (due, conn) in self.live.items():
            ex = conn.current
            times = ex.times if ex is not None else []  # read in place: it only grows
            if times:
                if times[0] - due > limit:
                    slow, late = slow + 1, late + 1
                else:
                    fast += 1
            elif now - due > limit:
                slow, late = slow + 1, late + 1  # no first token yet, already past the SLO
            else:
                unknown += 1
            streaming = bool(times) and now - times[0] >= PACE_SEEN_S
            pace_slow = pause_slow = False
            if slo.itl_ms is not None and streaming and len(times) >= 2:
                pace_slow = (times[-1] - times[0]) / (len(times) - 1) * 1000 > slo.itl_ms
            if slo.pause_ms is not None and times:
                pause_slow = self._pause_so_far(index, ex, times, now) > slo.pause_ms
            if streaming or pause_slow:  # younger: not counted (cut, its first token only)
                _classify(pace, pace_slow, certain=False)
                _classify(pause, pause_slow, certain=True)
                shown += index not in self.finished_by
        return Tally(
            fast,
            slow,
            unknown,
            self.errors,
            len(self.samples),
            late,
            pace=Measure(*pace) if slo.itl_ms is not None else None,
            pause=Measure(*pause) if slo.pause_ms is not None else None,
            shown=shown,
        )

    def _pause_so_far(
        self, index: int, ex: Exchange | None, times: list[float], now: float
    ) -> float:
        """A running reply's longest pause so far (ms), the wait since its last token
        included; its closed gaps are scanned once each (``self.gaps``, by worker), not at
        every look: a long reply at 128 chats would cost the loop its own lag."""
        held, seen, widest = self.gaps.get(index, (None, 1, 0.0))
        if held is not ex:  # a new request of this worker
            seen, widest = 1, 0.0
        for i in range(seen, len(times)):
            widest = max(widest, times[i] - times[i - 1])
        self.gaps[index] = (ex, len(times), widest)
        return max(widest, now - times[-1]) * 1000

    def done(self, now: float) -> bool:
        """Whether the level ends now: its cap, its ceiling, or a settled verdict."""
        elapsed, plan, c = now - self.start, self.plan, self.concurrency
        if elapsed >= plan.max_seconds or len(self.samples) >= plan.ceiling(c):
            return True
        if elapsed < plan.min_seconds:
            return False
        tally = self.tally(now)
        judged = functools.partial(
            settled,
            floor=plan.floor(c),
            most=plan.ceiling(c) + c,
            max_error_rate=self.slo.max_error_rate,
            chats=c,
        )
        if judged(tally) is not None:
            return True
        if not self.sending.is_set():
            if not self.live:  # every held reply ended, and the level is still not settled:
                self._send_again()  # back to the closed loop, for one more wave at least
            return False
        if len(self.samples) >= self.hold_from and judged(hopeful(tally)):
            self.sending.clear()  # hold: only the running replies stand in the way
        return False

    def _send_again(self) -> None:
        self.hold_from = len(self.samples) + self.concurrency
        self.sending.set()

    def _cut(self, now: float) -> list[Sample]:
        """The requests in flight at the end, judged on what they streamed so far."""
        cut: list[Sample] = []
        ttft_s, stall_s = self.slo.ttft_ms / 1000, self.slo.stall_s
        for due, conn in self.live.values():
            found = cut_sample(
                conn.current,
                due,
                now,
                self.start,
                ttft_s=ttft_s,
                stall_s=stall_s,
                pause_ms=self.slo.pause_ms,
            )
            if found is not None:  # else: not known yet, and not counted (a settled verdict
                cut.append(found)  # held either way)
        return cut

    async def worker(self, index: int) -> None:
        """One chat in a closed loop until the level ends (cancelled) or reaches its ceiling."""
        due = self.start
        ceiling = self.plan.ceiling(self.concurrency)
        conn = self.connect(self.target, self.payload)
        try:
            while len(self.samples) < ceiling:
                if not self.sending.is_set():
                    await self.sending.wait()
                    due = time.perf_counter()  # the hold's wait is not the server's time
                self.live[index] = (due, conn)
                ex = await conn.send()
                del self.live[index]
                if ex.failure == LOCAL_LIMIT:
                    # Out of file descriptors here: the server never saw the request, and
                    # a level judged on it would be a verdict about the model. None is given.
                    raise LmregError(_no_verdict(ex.failure_detail))
                self._add(index, to_sample(ex, due, self.start))
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
            self.in_flight = len(self.live)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        for task in tasks:
            if not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]  # a worker's bug is ours
        self.samples.extend(cut)
        return now
