"""The record's ``client``: how often the toolkit's own event loop stalled while it measured.

A load generator that shares its machine with the server (or with anything busy)
reads its own stalls as the server's latency. Every run that measures time keeps
a :class:`ClientLag` beside its figures (the commands contract, "The client checks
itself"): a stall is a wake more than ``STALL_MS`` late of a task that sleeps
``TICK_MS`` at a time; :mod:`lmreg_nb.probe.loop_lag` measures it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .fields import float_or_none, int_or_none, mapping_or_empty

__all__ = ["STALL_MS", "TICK_MS", "ClientLag", "Stall"]

#: The watcher's sleep, and how late a wake must be to count as a stall (contract).
TICK_MS = 10.0
STALL_MS = 50.0


@dataclass(frozen=True)
class Stall:
    """One stall: the loop should have woken at ``start`` and woke at ``end`` (monotonic s)."""

    start: float
    end: float

    @property
    def ms(self) -> float:
        """How long the loop was late."""
        return (self.end - self.start) * 1000.0


@dataclass(frozen=True)
class ClientLag:
    """The client's own stalls over a run (JSON ``client``: ``stalls``, ``worst_stall_ms``,
    ``stalled_share``); the stalls themselves stay in the process, to mark the samples
    they overlap."""

    #: Wakes more than STALL_MS late.
    stalls: int = 0
    #: The longest of them (0.0: none).
    worst_stall_ms: float = 0.0
    #: Their summed lateness as a share of the run's time (0.0 to 1.0).
    stalled_share: float = 0.0
    #: Each stall, oldest first (not recorded: monotonic times mean nothing elsewhere).
    intervals: tuple[Stall, ...] = field(default=(), compare=False, repr=False)

    def overlaps(self, start: float, end: float) -> bool:
        """Whether a stall overlaps ``[start, end]`` (monotonic seconds): a sample taken
        then may hold the client's delay as well as the server's."""
        return any(s.start < end and s.end > start for s in self.intervals)

    def stalled_ms(self, start: float, end: float) -> float:
        """How much of ``[start, end]`` the client spent stalled, in milliseconds."""
        return 1000.0 * sum(max(0.0, min(s.end, end) - max(s.start, start)) for s in self.intervals)

    def to_json(self) -> dict[str, Any]:
        """``{"stalls", "worst_stall_ms", "stalled_share"}``."""
        return {
            "stalls": self.stalls,
            "worst_stall_ms": round(self.worst_stall_ms, 1),
            "stalled_share": round(self.stalled_share, 4),
        }

    @classmethod
    def from_json(cls, data: Any) -> ClientLag | None:
        """From its JSON (None: not measured, as in records made before it was)."""
        found: Mapping[str, Any] = mapping_or_empty(data)
        if not found:
            return None
        return cls(
            stalls=max(0, int_or_none(found.get("stalls")) or 0),
            worst_stall_ms=max(0.0, float_or_none(found.get("worst_stall_ms")) or 0.0),
            stalled_share=min(1.0, max(0.0, float_or_none(found.get("stalled_share")) or 0.0)),
        )
