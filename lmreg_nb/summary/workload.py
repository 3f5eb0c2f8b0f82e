"""What a load test or a capacity search sent (DESIGN.md "Contract: the class workload").

One typed value from the probe that measured it to the Summary, the record,
the CLI's JSON and the batch's summary.csv: :class:`Workload` (JSON
``{"name", "prompt_tokens", "shared_prefix_tokens", "turns", "max_tokens"}``)
and :class:`PrefixCache`, whether the server reused the shared lesson. The
sentences about them are here too, so that every layer words them alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..i18n import _, ngettext
from .fields import float_or_none, int_or_none, mapping_or_empty

__all__ = ["LESSON", "SHORT", "PrefixCache", "Workload", "WorkloadName", "students_phrase"]

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

    def sentence(self) -> str:
        """What was sent, in one plain sentence (the principal's page, the record)."""
        if self.name == SHORT:
            return _(
                "Measured with one short question per request: a quick look at the interface,"
                " not a class in a lesson."
            )
        return _(
            "Measured as in a lesson: the app's instructions and a {lesson}-token lesson shared"
            " by the class, then each student's own questions, {turns} turns per conversation,"
            " replies of up to {max_tokens} tokens."
        ).format(
            lesson=_tokens(self),
            turns=self.turns,
            max_tokens=self.max_tokens if self.max_tokens is not None else "-",
        )

    def plain_sentence(self) -> str:
        """For a principal: what the students were doing while measured, without jargon."""
        if self.name == SHORT:
            return _(
                "Each sent only one short question: a lesson's longer questions may be slower."
            )
        return _(
            "They were measured as a class in a lesson: every student asked {turns} questions"
            " in a row about the same long lesson text."
        ).format(turns=self.turns)


def students_phrase(n: int, workload: Workload) -> str:
    """``"40 students asking at once about a 1,500-token lesson"`` (or a short question)."""
    if workload.name == SHORT:
        return ngettext(
            "{n} student asking one short question at once",
            "{n} students asking one short question at once",
            n,
        ).format(n=n)
    return ngettext(
        "{n} student asking at once about a {lesson}-token lesson",
        "{n} students asking at once about a {lesson}-token lesson",
        n,
    ).format(n=n, lesson=_tokens(workload))


def _tokens(workload: Workload) -> str:
    """The shared lesson's length as the server counts it (its instructions included)."""
    return f"{workload.shared_prefix_tokens:,}"


#: Below this (ms) both answers came too fast for the lesson to show (the probe's least).
_QUICK_MS = 100.0


@dataclass(frozen=True)
class PrefixCache:
    """Whether the server reused the shared lesson: the first answer against the next one's.

    ``reused`` None: could not tell (both came too fast, the times wandered, or this
    machine stalled while it timed them: ``stalls``, ``worst_stall_ms``).
    ``hit_share``: the share of the later students' lesson tokens the server's own
    counters say came from its cache (vLLM's ``/metrics``); when given, the verdict is
    the server's word, not the timing's.
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

    def to_json(self) -> dict[str, Any]:
        """``{"reused", "first_ms", "next_ms", "stalls", "worst_stall_ms", "hit_share",
        "failure"}``."""
        return {
            "reused": self.reused,
            "first_ms": self.first_ms,
            "next_ms": self.next_ms,
            "stalls": self.stalls,
            "worst_stall_ms": round(self.worst_stall_ms, 1),
            "hit_share": self.hit_share,
            "failure": self.failure,
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
        )

    def sentence(self) -> str:
        """The finding in one sentence, with the fix when the lesson is not reused."""
        first = f"{self.first_ms:.0f}" if self.first_ms is not None else "-"
        later = f"{self.next_ms:.0f}" if self.next_ms is not None else "-"
        if self.failure is not None:
            return _(
                "Not measured whether the server reuses the shared lesson: a student's"
                " question about it failed ({why})."
            ).format(why=_failure_label(self.failure))
        if self.hit_share is not None and self.reused is not None:
            return self._counted(first, later)
        if self.reused:
            return _(
                "The server reuses the shared lesson (a prefix cache): the first student's"
                " answer started after {first} ms, the next student's after {next} ms."
            ).format(first=first, next=later)
        quick = max(self.first_ms or 0.0, self.next_ms or 0.0) < _QUICK_MS
        if self.reused is None and self.stalls:
            return ngettext(
                "Could not tell whether the server reuses the shared lesson: this machine"
                " stalled {n} time, up to {seconds} s, while it timed the answers (the first"
                " student's started after {first} ms, the next students' after {next} ms).",
                "Could not tell whether the server reuses the shared lesson: this machine"
                " stalled {n} times, up to {seconds} s, while it timed the answers (the first"
                " student's started after {first} ms, the next students' after {next} ms).",
                self.stalls,
            ).format(
                n=self.stalls,
                seconds=f"{self.worst_stall_ms / 1000:.1f}",
                first=first,
                next=later,
            )
        if self.reused is None and not quick:
            return _(
                "Could not tell whether the server reuses the shared lesson: its answers'"
                " start times wandered more than the lesson could explain (the first"
                " student's after {first} ms, the next students' after {next} ms)."
            ).format(first=first, next=later)
        if self.reused is None:
            return _(
                "Could not tell whether the server reuses the shared lesson: the first and the"
                " next student's answers both started within {next} ms."
            ).format(next=max(first, later, key=lambda s: float(s) if s != "-" else 0.0))
        return _(
            "The server does not seem to reuse the shared lesson: the next student's answer"
            " started after {next} ms, the first one's after {first} ms; every student pays"
            " for the whole lesson. Turn on a prefix cache: vLLM --enable-prefix-caching,"
            " llama.cpp --cache-reuse 256."
        ).format(first=first, next=later)

    def _counted(self, first: str, later: str) -> str:
        """The finding by the server's own counters."""
        share = f"{(self.hit_share or 0.0) * 100:.0f}"
        if self.reused:
            return _(
                "The server reuses the shared lesson (a prefix cache): by its own counters,"
                " {share} % of the later students' lesson tokens came from its cache (the"
                " first student's answer started after {first} ms, the next student's after"
                " {next} ms)."
            ).format(share=share, first=first, next=later)
        return _(
            "The server does not reuse the shared lesson: by its own counters, {share} % of"
            " the later students' lesson tokens came from a cache, so every student pays for"
            " the whole lesson. Turn on a prefix cache: vLLM --enable-prefix-caching,"
            " llama.cpp --cache-reuse 256."
        ).format(share=share)


def _kind_or_none(value: Any) -> str | None:
    """A recorded error kind (a short identifier), or None."""
    return value[:40] if isinstance(value, str) and value else None


def _failure_label(kind: str) -> str:
    """An error kind as people read it (the load test's labels)."""
    if kind.startswith("status "):
        return "HTTP " + kind.removeprefix("status ")
    labels = {
        "connect": _("cannot connect"),
        "timeout": _("timed out"),
        "transport": _("connection broke"),
        "bad stream": _("malformed stream"),
        "bad body": _("malformed reply"),
        "cut stream": _("cut stream"),
    }
    return labels.get(kind, kind)
