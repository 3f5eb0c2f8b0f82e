"""What the client's own stalls could have done to the figures it measured.

A request whose time to first token (or whose reply) overlaps a stall of the
toolkit's event loop (:class:`~lmreg_nb.summary.client.ClientLag`, measured by
:class:`~lmreg_nb.probe.loop_lag.LoopLag`) was timed late by up to that overlap:
the server may have been faster than it reads. :func:`skew` marks such samples and
says whether they could have moved a p90 past its margin: by more than
``MARGIN_SHARE`` of the p90 (at least ``MARGIN_MS``), or, for a capacity level,
across the SLO's limit (its verdict could change).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...summary.client import ClientLag
from .metrics import percentile

__all__ = ["MARGIN_MS", "MARGIN_SHARE", "Skew", "level_skew", "skew"]

#: Without a limit, a p90 moved by more than this share of itself (and this many ms).
MARGIN_SHARE = 0.1
MARGIN_MS = 50.0


@dataclass(frozen=True)
class Skew:
    """The client's stalls over a run's samples."""

    marked: int = 0  # samples taken during a stall
    worst_ms: float = 0.0  # the most one sample may read longer than the server took
    moved: bool = False  # the stalls could have moved a p90 past its margin

    def __add__(self, other: Skew) -> Skew:
        return Skew(
            self.marked + other.marked,
            max(self.worst_ms, other.worst_ms),
            self.moved or other.moved,
        )


def skew(pairs: Sequence[tuple[float, float]], limit_ms: float | None = None) -> Skew:
    """``pairs``: (a sample's figure, ms of client stall inside it), for one figure's p90.

    The stall-free reading of a sample is its figure less the stall (the most the
    stall can have added); the p90 "moved" when the two readings lie further apart
    than the margin, or fall on both sides of ``limit_ms``.
    """
    marked = sum(1 for _, stalled in pairs if stalled > 0)
    worst = max((stalled for _, stalled in pairs), default=0.0)
    measured = percentile([figure for figure, _ in pairs], 90)
    free = percentile([max(0.0, figure - stalled) for figure, stalled in pairs], 90)
    if measured is None or free is None or not marked:
        return Skew(marked, worst, False)
    moved = measured - free > max(MARGIN_SHARE * measured, MARGIN_MS)
    if limit_ms is not None:
        moved = moved or free <= limit_ms < measured
    return Skew(marked, worst, moved)


def level_skew(
    client: ClientLag,
    spans: Sequence[tuple[float, float | None, float | None, float]],
    ttft_limit_ms: float,
    pause_limit_ms: float | None,
) -> Skew:
    """A capacity level's skew: ``spans`` are (due, first token, longest pause in ms, end)
    per successful sample (monotonic seconds; None: not measured)."""
    ttft: list[tuple[float, float]] = []
    pause: list[tuple[float, float]] = []
    for due, first, pause_ms, end in spans:
        if first is None:
            continue
        ttft.append(((first - due) * 1000, client.stalled_ms(due, first)))
        if pause_ms is not None:
            pause.append((pause_ms, client.stalled_ms(first, end)))
    found = skew(ttft, ttft_limit_ms)
    if pause_limit_ms is not None and pause:
        found += skew(pause, pause_limit_ms)
    return found
