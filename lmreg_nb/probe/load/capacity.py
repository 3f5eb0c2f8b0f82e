"""How many students can chat at once: the largest concurrency served within an SLO.

```python
result = find_capacity(Target.from_settings(settings), slo=SLO(ttft_ms=2000), need=40)
result.capacity.concurrency; result.to_json()
verdict(result, class_size=40); capacity_figure(result)  # lmreg_nb.probe.text: its words
```

The search returns typed results and reports progress events (:class:`Progress`);
it imports no words: the caller renders them (:mod:`lmreg_nb.probe.text.capacity_text`,
:mod:`lmreg_nb.probe.text.plots`).

The search measures closed-loop levels (:mod:`lmreg_nb.probe.load.levels`), each
until its verdict is settled. With ``need`` (a class size N) it answers the
class's question: N first; when N meets the SLO, one level above it for the
margin (:func:`margin_level`), then it stops (``limited_by`` ``"need-met"``,
the capacity being the largest level measured within the SLO); when N does
not, it bisects between the largest level known to meet it (0 at first) and N.
Without ``need`` it looks for the knee: 1, 2, 4, ... doubling until a level
breaks the SLO or ``max_concurrency`` is reached, then bisects between the
last level that met it and the first that did not.

One warm-up request comes first, shared by all levels and inside the time
budget (``budget_s``, which bounds the whole search). ``limited_by`` says what
stops the server from serving more: ``"ttft"``, ``"itl"`` (the time between
tokens, or none measured), ``"pause"`` (the longest pause in a reply),
``"errors"`` (stalled replies included), ``"cut-streams"`` (the first level over
capacity broke that part of the SLO),
``"saturation"`` (every level met the SLO but throughput had stopped rising
while latency kept rising), ``"max-concurrency"``, ``"need-met"``, or
``"time"`` / ``"interrupted"`` when the search did not finish.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, replace

from ...errors import ValidationError
from ...i18n import _
from ...secret import mask_text
from ..blocking import current_interrupt, interruptible
from ..loop_lag import LoopLag
from ..target import Target
from .busy import level_skew
from .capacity_result import Capacity, CapacityFindings, saturation_point
from .levels import SLO, Level, LevelPlan
from .search import Progress, Search, margin_level, run_search
from .workload import WorkloadSpec

__all__ = [
    "SLO",
    "Capacity",
    "CapacityFindings",
    "CapacityResult",
    "Level",
    "LevelPlan",
    "Progress",
    "WorkloadSpec",
    "find_capacity",
    "find_capacity_async",
    "margin_level",
    "saturation_point",
]

#: The search stops starting levels after this many seconds (well under 3 minutes).
BUDGET_S = 120.0
#: A class's default SLO: first token p90 under 2 s, time between tokens p90 at most
#: 150 ms (reading pace: about 7 Chinese characters a second), no pause in a reply
#: longer than 2 s (p90), at most 1 % errors.
DEFAULT_SLO = SLO(itl_ms=150.0, pause_ms=2000.0)
DEFAULT_WORKLOAD = WorkloadSpec()
DEFAULT_PLAN = LevelPlan()


@dataclass(repr=False, eq=False)
class CapacityResult(CapacityFindings):
    """The levels measured and the capacity found (their words: :mod:`lmreg_nb.probe.text`)."""

    def __repr__(self) -> str:
        cap = self.capacity
        return (
            f"CapacityResult(capacity={cap.concurrency}, limited_by={cap.limited_by!r}, "
            f"levels={[lv.concurrency for lv in self.levels]})"
        )


def _check(slo: SLO, max_concurrency: int, need: int | None, budget_s: float) -> None:
    if not 0 < slo.ttft_ms <= 600_000:
        raise ValidationError("slo.ttft_ms", _("must be between 0 and 600000 ms"))
    if slo.itl_ms is not None and not 0 < slo.itl_ms <= 60_000:
        raise ValidationError("slo.itl_ms", _("must be between 0 and 60000 ms"))
    if slo.pause_ms is not None and not 0 < slo.pause_ms <= 600_000:
        raise ValidationError("slo.pause_ms", _("must be between 0 and 600000 ms"))
    if not 0 <= slo.max_error_rate < 1:
        raise ValidationError("slo.max_error_rate", _("must be at least 0 and below 1"))
    if not 1 <= max_concurrency <= 1024:
        raise ValidationError("max_concurrency", _("must be between 1 and 1024"))
    if need is not None and not 1 <= need <= max_concurrency:
        raise ValidationError(
            "need",
            _("must be between 1 and max_concurrency ({n}); raise the maximum").format(
                n=max_concurrency
            ),
        )
    if budget_s <= 0:
        raise ValidationError("budget_s", _("must be a positive number of seconds"))


async def find_capacity_async(
    target: Target,
    *,
    slo: SLO = DEFAULT_SLO,
    max_concurrency: int = 64,
    need: int | None = None,
    on_level: Callable[[Level], None] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    plan: LevelPlan = DEFAULT_PLAN,
    budget_s: float = BUDGET_S,
    workload: WorkloadSpec = DEFAULT_WORKLOAD,
    max_tokens: int | None = None,
) -> CapacityResult:
    """Find how many chats at once ``target`` serves within ``slo`` (see the module docstring).

    ``await find_capacity_async(...)`` inside a loop; :func:`find_capacity`, its
    blocking twin, is safe inside Jupyter's running loop (the search runs in a
    thread with its own loop), and Ctrl-C (KeyboardInterrupt) there stops the
    search and returns what was measured so far, with ``stopped ==
    "interrupted"``. A server that fails gives levels with errors, not an
    exception; a bad argument raises :class:`~lmreg_nb.errors.ValidationError`.
    ``on_level(level)`` is called after each level and ``on_progress(progress)``
    at the warm-up, at each level's start, about twice a second while it runs
    and at its end, both from the search's thread (a progress display; the
    search prints nothing). ``plan`` sets when a level ends; ``budget_s``
    bounds the whole search, the warm-up included. ``workload``: what each chat
    sends (:mod:`lmreg_nb.probe.load.workload`; the lesson by default); ``max_tokens``,
    when given, replaces its replies' length.
    """
    _check(slo, max_concurrency, need, budget_s)
    if max_tokens is not None:
        workload = replace(workload, max_tokens=max_tokens)  # a new spec: checked as it is made
    result = CapacityResult(slo, need=need, max_concurrency=max_concurrency)
    search = Search(result, on_level, on_progress)
    interrupt = current_interrupt()  # Ctrl-C of the blocking twin (see .blocking)
    if interrupt is not None:
        interrupt.attach()
        search.interrupted = interrupt.fired
    async with LoopLag() as lag:  # the client checks itself the whole search long
        try:
            await run_search(search, target, plan, budget_s, workload)
        except asyncio.CancelledError:
            if not search.interrupted.is_set():
                raise
            result.stopped = "interrupted"
    result.client = client = lag.result()
    for level in result.levels:
        level.skew = level_skew(client, level.spans(), slo.ttft_ms, slo.pause_ms)
    secret = target.api_key
    for level in result.levels:  # a server may echo the key in an error
        level.first_error = mask_text(level.first_error, [secret])
    return result


#: The blocking twin of :func:`find_capacity_async` (same parameters).
find_capacity = interruptible(find_capacity_async)
