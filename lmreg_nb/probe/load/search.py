"""The capacity search's strategies: the class's need, or the knee; and its progress.

:func:`run_search` sends the warm-up (:mod:`lmreg_nb.probe.load.warmup`), then
measures levels (:func:`lmreg_nb.probe.load.level_run.run_level`) in the order the
question asks (see :mod:`lmreg_nb.probe.load.capacity`), reporting its progress
through a callback: it prints nothing.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..target import Target
from .level_run import run_level
from .levels import SLO, Level, LevelPlan
from .prefix import prefix_probe
from .warmup import drain, warm_up
from .workload import ClassWorkload, WorkloadSpec, prepare_workload

if TYPE_CHECKING:
    from .capacity_result import CapacityFindings as CapacityResult

__all__ = ["Progress", "Search", "margin_level", "refusal", "run_search"]

#: No level starts with less than this left of the budget (it could say nothing).
_MIN_LEVEL_S = 1.0


@dataclass(frozen=True)
class Progress:
    """Where the search is, for a display: the warm-up, a level running, or a level done.

    ``concurrency`` 0 is the warm-up; ``requests`` the level's requests finished
    so far; ``level`` the measured level once it is done. Its words:
    :func:`lmreg_nb.probe.text.capacity_text.progress_text`.
    """

    concurrency: int = 0
    requests: int = 0
    level: Level | None = None
    slo: SLO | None = None


def margin_level(need: int, top: int) -> int:
    """The level measured above a need that is met: 1.5 times it (at least +1), at most ``top``.

    Half a class more tells whether the need is met with room to spare (a
    second group, longer prompts) at a cost of one level; one chat more would
    say nothing a person can use, twice the need mostly fails and costs twice
    the load.
    """
    return min(top, max(need + 1, math.ceil(1.5 * need)))


class Search:
    """The search's state, so that an interrupted search still has its levels."""

    def __init__(
        self,
        result: CapacityResult,
        on_level: Callable[[Level], None] | None,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> None:
        self.result = result
        self.on_level = on_level
        self.on_progress = on_progress
        #: Set on Ctrl-C (the blocking twin's Interrupt shares its event).
        self.interrupted = threading.Event()

    def add(self, level: Level) -> None:
        self.result.levels.append(level)
        self.progress(Progress(level.concurrency, level.requests, level, self.result.slo))
        if self.on_level is not None:
            self.on_level(level)

    def progress(self, progress: Progress) -> None:
        if self.on_progress is not None:
            self.on_progress(progress)


Measure = Callable[[int], Awaitable[Level | None]]


async def run_search(
    search: Search, target: Target, plan: LevelPlan, budget_s: float, spec: WorkloadSpec
) -> None:
    """The workload's lesson, the warm-up, then the need's search (with ``need``) or the knee's."""
    result = search.result
    deadline = time.monotonic() + budget_s
    search.progress(Progress())
    # The warm-up (calibration included) waits no longer than a request may for its answer.
    bound = min(target.timeout, budget_s)
    work = await prepare_workload(target, spec, bound)
    if work.refused:  # nothing to measure: the checks' one sentence says why
        result.stopped, result.unreachable = "unreachable", work.refused
        result.workload = work.info()
        return
    if work.silent:
        result.stopped, result.no_reply_s = "time", bound
        result.workload = work.info()
        return
    try:
        await _run(search, target, plan, deadline, work)
    finally:
        result.workload = work.info()


async def _run(
    search: Search, target: Target, plan: LevelPlan, deadline: float, work: ClassWorkload
) -> None:
    result = search.result
    finish_seen = False
    # The warm-up is inside the budget, and waits no longer than a request may for its answer.
    bound = max(0.1, min(target.timeout, deadline - time.monotonic()))  # what is left of it
    if work.lesson_mode:  # students' first questions, one at a time: the warm-up, the prefix cache
        answered, result.prefix_cache = await prefix_probe(work, target, bound)
    else:
        answered = await warm_up(target, work.short_payload(), bound)
    if not answered:
        result.stopped, result.no_reply_s = "time", bound
        return

    last: Level | None = None

    async def measure(c: int) -> Level | None:
        nonlocal finish_seen, last
        if result.stopped in ("unreachable", "refused"):
            return None
        if search.interrupted.is_set():  # Ctrl-C before the loop could be told
            result.stopped = "interrupted"
            return None
        left = deadline - time.monotonic()
        if left < max(plan.min_seconds, _MIN_LEVEL_S):
            result.stopped = "time"
            return None
        if last is not None and last.in_flight:
            # Requests cut at the last level's end may still hold the server (a prefill
            # queue): a level starts once a short request is answered again, within budget.
            # Those cut before a first token count too, though no figure counts them: a
            # queue that prefills them anyway put a level measured behind them at twice
            # its first-token time (5 chats "missed" 2 s behind 10 chats' leftovers).
            await drain(target, work.short_payload(1), left - _MIN_LEVEL_S)
            left = deadline - time.monotonic()
            if left < max(plan.min_seconds, _MIN_LEVEL_S):
                result.stopped = "time"
                return None
        level_plan = replace(plan, max_seconds=min(plan.max_seconds, left))
        search.progress(Progress(c))
        level = await run_level(
            target,
            b"",
            c,
            result.slo,
            level_plan,
            finish_seen=finish_seen,
            on_progress=lambda n: search.progress(Progress(c, n)),
            connect=work.connect,  # each chat a student of this run's lesson
        )
        finish_seen = finish_seen or level.finish_seen
        search.add(level)
        last = level
        refused = refusal(level)
        if refused:  # every request refused alike: more levels would only say it again
            result.stopped, result.unreachable = "unreachable", refused
        elif (status := refused_status(level)) is not None:  # the key, or the path: `check`
            result.stopped, result.refused_status = "refused", status
        return level

    if result.need is None:
        await _knee(measure, result.max_concurrency)
    else:
        await _need(measure, result.need, result.max_concurrency)


def refusal(level: Level) -> str:
    """Why every request of ``level`` was refused before reaching a server, when all were
    refused for one reason ("": some got further)."""
    seen = {(s.error, s.detail) for s in level.samples}
    if len(seen) != 1 or level.errors != level.requests or not level.requests:
        return ""
    kind, detail = seen.pop()
    return detail if kind in ("connect", "transport") else ""  # never an answer: refused


#: Answers a server gives every request alike whatever the load: the key (401, 403), the
#: path (404, 405). More levels would only say it again.
REFUSALS = (401, 403, 404, 405)


def refused_status(level: Level) -> int | None:
    """The HTTP status every request of ``level`` got, when it is one of :data:`REFUSALS`."""
    statuses = {s.status for s in level.samples}
    if not level.requests or level.errors != level.requests or len(statuses) != 1:
        return None
    status = statuses.pop()
    return status if status in REFUSALS else None


async def _need(measure: Measure, need: int, top: int) -> None:
    """The class's question: the need first; met, one level above for the margin; else below."""
    level = await measure(need)
    if level is None:
        return
    if level.meets_slo:
        above = margin_level(need, top)
        if above > need:
            await measure(above)
        return
    await _bisect(measure, 0, need)


async def _knee(measure: Measure, top: int) -> None:
    """Doubling from 1 until a level misses the SLO (or the maximum), then bisection."""
    good, c = 0, 1
    while True:
        level = await measure(c)
        if level is None:
            return
        if not level.meets_slo:
            await _bisect(measure, good, c)
            return
        good = c
        if c >= top:
            return
        c = min(c * 2, top)


async def _bisect(measure: Measure, good: int, bad: int) -> None:
    """Between a level that met the SLO (0: none) and one that did not, down to one apart."""
    while bad - good > 1:
        mid = (good + bad) // 2
        level = await measure(mid)
        if level is None:
            return
        good, bad = (mid, bad) if level.meets_slo else (good, mid)
