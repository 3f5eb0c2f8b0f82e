"""How many students can chat at once: the largest concurrency served within an SLO.

```python
result = find_capacity(Target.from_settings(settings), slo=SLO(ttft_ms=2000), need=40)
result.capacity.concurrency; result.verdict(class_size=40); result.figure()
```

The search measures closed-loop levels (:mod:`lmreg_nb.probe.levels`): 1, 2,
4, ... doubling until a level breaks the SLO or ``max_concurrency`` is reached,
then bisects between the last level that met it and the first that did not.
The whole search is bounded in time (``budget_s``). ``limited_by`` says what
stops the server from serving more: ``"ttft"``, ``"itl"``, ``"errors"``,
``"cut-streams"`` (the first level over capacity broke that part of the SLO),
``"saturation"`` (every level met the SLO but throughput had stopped rising
while latency kept rising), ``"max-concurrency"``, or ``"time"`` /
``"interrupted"`` when the search did not finish.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..errors import ValidationError
from ..i18n import _
from ..secret import mask_text
from .blocking import current_interrupt, interruptible
from .exchange import DEFAULT_PROMPT, chat_body
from .levels import SLO, Level, LevelPlan, run_level
from .stream_client import ChatConnection
from .target import Target

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from pandas import DataFrame

__all__ = [
    "SLO",
    "Capacity",
    "CapacityResult",
    "Level",
    "LevelPlan",
    "find_capacity",
    "find_capacity_async",
    "saturation_point",
]

#: The search stops starting levels after this many seconds (well under 3 minutes).
BUDGET_S = 120.0
#: The default SLO: first token p90 under 2 s, at most 1 % errors.
DEFAULT_SLO = SLO()
DEFAULT_PLAN = LevelPlan()
#: Throughput that grows less than this (x) while concurrency grows by ``_STEP`` is flat.
_FLAT = 1.1
_STEP = 1.25


@dataclass(frozen=True)
class Capacity:
    """The answer: the largest concurrency within the SLO and its throughput."""

    concurrency: int
    requests_per_s: float | None
    output_tokens_per_s: float | None
    limited_by: str

    def to_json(self) -> dict[str, Any]:
        """``{"concurrency", "requests_per_s", "output_tokens_per_s", "limited_by"}``."""
        return {
            "concurrency": self.concurrency,
            "requests_per_s": self.requests_per_s,
            "output_tokens_per_s": self.output_tokens_per_s,
            "limited_by": self.limited_by,
        }


@dataclass
class CapacityResult:
    """The levels measured, the capacity found, and the words and pictures for them."""

    slo: SLO
    levels: list[Level] = field(default_factory=list)
    need: int | None = None
    max_concurrency: int = 64
    stopped: str | None = None  # "time" or "interrupted" when the search did not finish

    @property
    def capacity(self) -> Capacity:
        """The largest level that met the SLO (0 when none did) and what limits it."""
        levels = sorted(self.levels, key=lambda lv: lv.concurrency)
        passed = [lv for lv in levels if lv.meets_slo]
        best = passed[-1] if passed else None
        over = [lv for lv in levels if not lv.meets_slo and lv.concurrency > _c(best)]
        if over:
            limited = over[0].failed or "errors"
        elif self.stopped:
            limited = self.stopped
        elif self.saturation is not None:
            limited = "saturation"
        else:
            limited = "max-concurrency"
        if best is None:
            return Capacity(0, None, None, limited)
        return Capacity(best.concurrency, best.requests_per_s, best.output_tokens_per_s, limited)

    @property
    def saturation(self) -> int | None:
        """The concurrency past which throughput stopped rising while latency rose."""
        return saturation_point(self.levels)

    @property
    def cut_streams(self) -> int:
        """Streams the server cut (llama.cpp ``interrupt_requests``), over all levels."""
        return sum(lv.cut_streams for lv in self.levels)

    @property
    def tokens_from_chunks(self) -> bool:
        """Token figures were counted from chunks: the server sent no usage."""
        return any(lv.tokens_from_chunks for lv in self.levels)

    def meets(self, class_size: int) -> bool:
        """Whether ``class_size`` students can chat at once within the SLO."""
        return self.capacity.concurrency >= class_size

    def to_json(self) -> dict[str, Any]:
        """The contract's object: ``{"slo", "levels", "capacity", "need"}``."""
        levels = sorted(self.levels, key=lambda lv: lv.concurrency)
        return {
            "slo": self.slo.to_json(),
            "levels": [lv.to_json() for lv in levels],
            "capacity": self.capacity.to_json(),
            "need": self.need,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CapacityResult:
        """A result read back from :meth:`to_json` (a record), for its verdict and figure."""
        slo = data.get("slo") or {}
        levels = [Level.from_json(lv) for lv in data.get("levels") or []]
        limited = (data.get("capacity") or {}).get("limited_by")
        stopped = limited if limited in ("time", "interrupted") else None
        for lv in levels:
            if not lv.meets_slo and isinstance(limited, str):
                lv.failed = limited  # what the first level over capacity broke
        result = cls(
            SLO(
                ttft_ms=float(slo.get("ttft_ms", 2000.0)),
                itl_ms=slo.get("itl_ms"),
                max_error_rate=float(slo.get("max_error_rate", 0.01)),
            ),
            levels,
            need=data.get("need"),
            stopped=stopped,
        )
        return result

    def verdict(self, class_size: int | None = None) -> str:
        """One sentence: how many chats at once, within which SLO, and enough for a class?"""
        from .capacity_text import verdict

        return verdict(self, class_size)

    def table(self) -> DataFrame:
        """The levels as a table (one row per concurrency)."""
        from .capacity_text import table

        return table(self)

    def figure(self) -> Figure:
        """TTFT and ITL p90 against concurrency (SLO line, knee marked), and throughput."""
        from .plots import capacity_figure

        return capacity_figure(self)

    def __repr__(self) -> str:
        cap = self.capacity
        return (
            f"CapacityResult(capacity={cap.concurrency}, limited_by={cap.limited_by!r}, "
            f"levels={[lv.concurrency for lv in self.levels]})"
        )


def _c(level: Level | None) -> int:
    return level.concurrency if level is not None else 0


def saturation_point(levels: list[Level]) -> int | None:
    """The knee of throughput: the last level before one whose throughput stayed flat.

    Flat: concurrency grew by at least 25 % but requests/s by less than 10 %,
    while latency p50 grew by more than 10 %.
    """
    ordered = sorted((lv for lv in levels if lv.requests_per_s), key=lambda lv: lv.concurrency)
    for before, after in itertools.pairwise(ordered):
        if after.concurrency < _STEP * before.concurrency:
            continue
        rps_a, rps_b = before.requests_per_s or 0.0, after.requests_per_s or 0.0
        lat_a, lat_b = before.latency_ms.get("p50"), after.latency_ms.get("p50")
        if rps_b < _FLAT * rps_a and lat_a and lat_b and lat_b > _FLAT * lat_a:
            return before.concurrency
    return None


def _check(slo: SLO, max_concurrency: int, need: int | None, budget_s: float) -> None:
    if not 0 < slo.ttft_ms <= 600_000:
        raise ValidationError("slo.ttft_ms", _("must be between 0 and 600000 ms"))
    if slo.itl_ms is not None and not 0 < slo.itl_ms <= 60_000:
        raise ValidationError("slo.itl_ms", _("must be between 0 and 60000 ms"))
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


class _Search:
    """The search's state, so that an interrupted search still has its levels."""

    def __init__(self, result: CapacityResult, on_level: Callable[[Level], None] | None) -> None:
        self.result = result
        self.on_level = on_level
        # Ctrl-C of the blocking find_capacity (see .blocking); set from another thread.
        self.interrupt = current_interrupt()
        self.interrupted = self.interrupt.fired if self.interrupt else threading.Event()

    def add(self, level: Level) -> None:
        self.result.levels.append(level)
        if self.on_level is not None:
            self.on_level(level)


async def _search(
    search: _Search, target: Target, plan: LevelPlan, budget_s: float, max_tokens: int | None
) -> None:
    """Doubling from 1 until a level misses the SLO (or the maximum), then bisection."""
    result = search.result
    body = chat_body(target.model, DEFAULT_PROMPT, stream=True, max_tokens=max_tokens)
    payload = json.dumps(body).encode()
    deadline = time.monotonic() + budget_s
    finish_seen = False
    # One request first, not counted: a cold server (and our first connection) is
    # slower than it will be for students, and one sample weighs a lot at level 1.
    warm = ChatConnection(target, payload)
    try:
        await warm.send()
    finally:
        warm.close()

    async def measure(c: int) -> Level | None:
        nonlocal finish_seen
        if search.interrupted.is_set():  # Ctrl-C before the loop could be told
            result.stopped = "interrupted"
            return None
        left = deadline - time.monotonic()
        if left < plan.min_seconds:
            result.stopped = "time"
            return None
        level_plan = replace(plan, max_seconds=min(plan.max_seconds, left))
        level = await run_level(target, payload, c, result.slo, level_plan, finish_seen=finish_seen)
        finish_seen = finish_seen or level.finish_seen
        search.add(level)
        return level

    good, bad, c = 0, 0, 1
    while True:
        level = await measure(c)
        if level is None:
            return
        if not level.meets_slo:
            bad = c
            break
        good = c
        if c >= result.max_concurrency:
            return
        c = min(c * 2, result.max_concurrency)
    while bad - good > 1:
        mid = (good + bad) // 2
        level = await measure(mid)
        if level is None:
            return
        good, bad = (mid, bad) if level.meets_slo else (good, mid)


async def find_capacity_async(
    target: Target,
    *,
    slo: SLO = DEFAULT_SLO,
    max_concurrency: int = 64,
    need: int | None = None,
    on_level: Callable[[Level], None] | None = None,
    plan: LevelPlan = DEFAULT_PLAN,
    budget_s: float = BUDGET_S,
    max_tokens: int | None = 256,
) -> CapacityResult:
    """Find how many chats at once ``target`` serves within ``slo`` (see the module docstring).

    ``await find_capacity_async(...)`` inside a loop; :func:`find_capacity`, its
    blocking twin, is safe inside Jupyter's running loop (the search runs in a
    thread with its own loop), and Ctrl-C (KeyboardInterrupt) there stops the
    search and returns what was measured so far, with ``stopped ==
    "interrupted"``. A server that fails gives levels with errors, not an
    exception; a bad argument raises :class:`~lmreg_nb.errors.ValidationError`.
    ``on_level(level)`` is called after each level, from the search's thread (a
    progress display). ``plan`` sets how long each level runs; ``budget_s``
    bounds the whole search.
    """
    _check(slo, max_concurrency, need, budget_s)
    search = _Search(CapacityResult(slo, need=need, max_concurrency=max_concurrency), on_level)
    if search.interrupt is not None:
        search.interrupt.attach()
    try:
        await _search(search, target, plan, budget_s, max_tokens)
    except asyncio.CancelledError:
        if not search.interrupted.is_set():
            raise
        search.result.stopped = "interrupted"
    secret = target.api_key
    for level in search.result.levels:  # a server may echo the key in an error
        level.first_error = mask_text(level.first_error, [secret])
    return search.result


#: The blocking twin of :func:`find_capacity_async` (same parameters).
find_capacity = interruptible(find_capacity_async)
