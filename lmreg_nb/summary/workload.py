"""What a load test or a capacity search sent (the class workload: docs/reference.md).

One typed value from the probe that measured it to the Summary, the record,
the CLI's JSON and the batch's summary.csv: :class:`Workload` (JSON
``{"name", "prompt_tokens", "shared_prefix_tokens", "turns", "max_tokens"}``)
and :class:`PrefixCache`, whether the server reused the shared lesson. Their words
are :mod:`lmreg_nb.probe.text.workload_text`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .fields import float_or_none, int_or_none, mapping_or_empty

__all__ = ["LESSON", "QUICK_MS", "SHORT", "PrefixCache", "Workload", "WorkloadName"]

WorkloadName = Literal["lesson", "short"]
LESSON: WorkloadName = "lesson"
SHORT: WorkloadName = "short"


@dataclass(frozen=True)
class Workload:
    """What each simulated student sent: the lesson workload, or one short question."""

    name: WorkloadName = LESSON
    #: p50 of the server's ``usage.prompt_tokens`` (else the toolkit's count); None: unknown.
    prompt_tokens: int | None = None
    #: Tokens every request of the run starts with alike (system message and lesson).
    shared_prefix_tokens: int = 0
    turns: int = 1
    max_tokens: int | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"name", "prompt_tokens", "shared_prefix_tokens", "turns", "max_tokens"}``."""
        return {
            "name": self.name,
            "prompt_tokens": self.prompt_tokens,
            "shared_prefix_tokens": self.shared_prefix_tokens,
            "turns": self.turns,
            "max_tokens": self.max_tokens,
        }

    @classmethod
    def from_json(cls, data: Any) -> Workload | None:
        """From its JSON; None when there is none (a record made before workloads)."""
        found = mapping_or_empty(data)
        if not found:
            return None
        name: WorkloadName = LESSON if found.get("name") == LESSON else SHORT
        return cls(
            name=name,
            prompt_tokens=int_or_none(found.get("prompt_tokens")),
            shared_prefix_tokens=int_or_none(found.get("shared_prefix_tokens")) or 0,
            turns=int_or_none(found.get("turns")) or 1,
            max_tokens=int_or_none(found.get("max_tokens")),
        )


#: Below this (ms) both answers came too fast for the lesson to show (the probe's least).
QUICK_MS = 100.0


@dataclass(frozen=True)
class PrefixCache:
    """Whether the server reused the shared lesson: the first answer against the next one's.

    ``reused`` None: could not tell: both came too fast (the lesson costs the server
    nothing: :attr:`quick`), the same question's times wandered by ``noise_ms`` from one
    ask to the next, more than the lesson could show, or this machine stalled while it
    timed them (``stalls``, ``worst_stall_ms``). ``hit_share``: the share of the later
    students' lesson tokens the server's own counters say came from its cache (vLLM's
    ``/metrics``); when given, the verdict is the server's word, not the timing's.
    Its words are :mod:`lmreg_nb.probe.checks.measured`'s ``prefix-cache`` row.
    """

    reused: bool | None
    first_ms: float | None = None
    next_ms: float | None = None
    stalls: int = 0
    worst_stall_ms: float = 0.0
    hit_share: float | None = None
    #: Why it was not measured: the error kind of a student's question that failed
    #: (``"status 400"``, ``"timeout"``, ``"bad stream"``...); None: it was measured.
    failure: str | None = None
    #: How far the times of alike requests wandered (ms; None: not measured).
    noise_ms: float | None = None

    @property
    def quick(self) -> bool:
        """Both answers came too fast for the lesson to show."""
        return max(self.first_ms or 0.0, self.next_ms or 0.0) < QUICK_MS

    def to_json(self) -> dict[str, Any]:
        """``{"reused", "first_ms", "next_ms", "stalls", "worst_stall_ms", "hit_share",
        "failure", "noise_ms"}``."""
        return {
            "reused": self.reused,
            "first_ms": self.first_ms,
            "next_ms": self.next_ms,
            "stalls": self.stalls,
            "worst_stall_ms": round(self.worst_stall_ms, 1),
            "hit_share": self.hit_share,
            "failure": self.failure,
            "noise_ms": self.noise_ms,
        }

    @classmethod
    def from_json(cls, data: Any) -> PrefixCache | None:
        """From its JSON; None when there is none."""
        found: Mapping[str, Any] = mapping_or_empty(data)
        if not found:
            return None
        reused = found.get("reused")
        share = float_or_none(found.get("hit_share"))
        return cls(
            reused if isinstance(reused, bool) else None,
            float_or_none(found.get("first_ms")),
            float_or_none(found.get("next_ms")),
            max(0, int_or_none(found.get("stalls")) or 0),
            max(0.0, float_or_none(found.get("worst_stall_ms")) or 0.0),
            min(1.0, max(0.0, share)) if share is not None else None,
            _kind_or_none(found.get("failure")),
            float_or_none(found.get("noise_ms")),
        )


def _kind_or_none(value: Any) -> str | None:
    """A recorded error kind (a short identifier), or None."""
    return value[:40] if isinstance(value, str) and value else None
