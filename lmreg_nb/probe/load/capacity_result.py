"""The capacity search's result: the levels measured and the capacity found, as data.

:class:`CapacityFindings` holds what the search measured and what follows
from it (the capacity, what limits it, the saturation point) and its JSON;
it imports no presentation. The words and pictures for it
(:mod:`lmreg_nb.probe.text.capacity_text`, :mod:`lmreg_nb.probe.text.plots`) import it;
:class:`lmreg_nb.probe.load.capacity.CapacityResult` adds them as methods.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Self

from ...summary.capacity import CapacityRecord
from ...summary.client import ClientLag
from ...summary.workload import PrefixCache, Workload
from .busy import Skew
from .levels import SLO, Level

__all__ = ["Capacity", "CapacityFindings", "saturation_point"]

#: Throughput that grows less than this (x) while concurrency grows by ``_STEP`` is flat.
_FLAT = 1.1
_STEP = 1.25
#: The failures a level can be judged by (what ``limited_by`` names of the first one over).
_FAILURES = ("ttft", "itl", "pause", "errors", "cut-streams")


@dataclass(frozen=True)
class Capacity:
    """The answer: the largest concurrency within the SLO and its throughput."""

    concurrency: int
    requests_per_s: float | None
    output_tokens_per_s: float | None
    limited_by: str


@dataclass
class CapacityFindings:
    """The levels measured and the capacity found (the words and pictures: ``capacity``)."""

    slo: SLO
    levels: list[Level] = field(default_factory=list)
    need: int | None = None
    max_concurrency: int = 64
    #: "time", "interrupted", "unreachable" or "refused" when the search did not finish.
    stopped: str | None = None
    #: The HTTP status every request of a level was refused with (``stopped`` "refused").
    refused_status: int | None = None
    #: Why the model could not be reached (the checks' sentence), when ``stopped`` says so.
    unreachable: str = ""
    #: Seconds the warm-up request waited without a reply (then no level was measured).
    no_reply_s: float | None = None
    #: What each chat sent (the class workload: docs/reference.md); None: not known (an old record).
    workload: Workload | None = None
    #: Whether the server reused the shared lesson (lesson workload only).
    prefix_cache: PrefixCache | None = None
    #: The client's own event-loop stalls over the whole search (None: not measured).
    client: ClientLag | None = None
    #: Read back from a record: the levels' skew, whose samples the record does not keep.
    recorded_skew: Skew | None = None

    @property
    def skew(self) -> Skew:
        """What the client's stalls could have done to the levels' figures (all levels)."""
        found = self.recorded_skew or Skew()
        for level in self.levels:
            if level.skew is not None:
                found += level.skew
        return found

    @property
    def capacity(self) -> Capacity:
        """The largest level that met the SLO (0 when none did) and what limits it."""
        levels = sorted(self.levels, key=lambda lv: lv.concurrency)
        passed = [lv for lv in levels if lv.meets_slo]
        best = passed[-1] if passed else None
        over = [lv for lv in levels if not lv.meets_slo and lv.concurrency > _c(best)]
        if self.need_met and self.stopped != "interrupted":
            limited = "need-met"
        elif self.stopped == "unreachable":
            limited = "unreachable"
        elif over:
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
    def need_met(self) -> bool:
        """Whether the level of the need was measured and met the SLO."""
        return any(lv.concurrency == self.need and lv.meets_slo for lv in self.levels)

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

    def record(self, class_size: int | None = None, verdict: str = "") -> CapacityRecord:
        """The search as the summary records it (and the CLI prints it): the one type the
        capacity travels in from here on, with ``verdict`` said against ``class_size``."""
        capacity = self.capacity
        return CapacityRecord(
            concurrency=capacity.concurrency,
            requests_per_s=capacity.requests_per_s,
            output_tokens_per_s=capacity.output_tokens_per_s,
            limited_by=capacity.limited_by,
            slo=self.slo.recorded(),
            levels=[lv.recorded() for lv in sorted(self.levels, key=lambda lv: lv.concurrency)],
            need=self.need,
            verdict=verdict,
            class_size=class_size,
            workload=self.workload,
            prefix_cache=self.prefix_cache,
            client=self.client,
            may_read_longer_ms=self.skew.worst_ms if self.skew.moved else None,
        )

    def to_json(self) -> dict[str, Any]:
        """The contract's object: ``{"slo", "levels", "capacity", "need", "workload",
        "client"}`` (``client`` when the client's stalls were measured).

        The prefix-cache finding is in the verdict and the record, not here.
        """
        found = self.record().to_json()
        keys = ("slo", "levels", "capacity", "need", "workload", "client")
        return {key: found[key] for key in keys if key in found}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        """A result read back from :meth:`to_json` (a record), for its verdict and figure."""
        slo = data.get("slo") or {}
        levels = [Level.from_json(lv) for lv in data.get("levels") or []]
        limited = (data.get("capacity") or {}).get("limited_by")
        stopped = limited if limited in ("time", "interrupted", "unreachable") else None
        for lv in levels:
            if not lv.meets_slo and limited in _FAILURES:
                lv.failed = limited  # what the first level over capacity broke
        result = cls(
            SLO(
                ttft_ms=float(slo.get("ttft_ms", 2000.0)),
                itl_ms=slo.get("itl_ms"),
                max_error_rate=float(slo.get("max_error_rate", 0.01)),
                pause_ms=slo.get("pause_ms"),
            ),
            levels,
            need=data.get("need"),
            stopped=stopped,
            workload=Workload.from_json(data.get("workload")),
            prefix_cache=PrefixCache.from_json(data.get("prefix_cache")),
            client=ClientLag.from_json(data.get("client")),
        )
        longer = CapacityRecord.from_json(data).may_read_longer_ms
        if longer is not None:
            result.recorded_skew = Skew(0, longer, True)
        return result


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
