"""One level of the capacity search: C chats in a closed loop, measured against an SLO.

Closed loop: C workers, each sending its next streamed request as soon as its
previous one ends, so exactly C chats are in flight (as C students each
waiting for a reply before typing the next question). Every time is counted
from when the request was *due*, the end of the worker's previous request (or
the level's start): time spent in our own queue (a busy event loop, waiting
for a pooled connection, connecting) counts, as it does for a student
(vLLM issue #54101 is about benchmarks that hide it).

Per request: TTFT from due to the first content; ITL from the request's own
decode time, (last content - first content) / (tokens - 1), which stays exact
when several chunks arrive in one network read (gaps between read times would
count those as 0 ms apart). Tokens are ``usage.completion_tokens`` when the
server reports it, else content chunks (``tokens_from_chunks`` says so).

A level ends as soon as its verdict is settled (:mod:`lmreg_nb.probe.load.settle`:
enough requests for a p90 clearly inside or outside the SLO, between a floor
and a ceiling of requests, within a time cap), not after a fixed time; it is
run by :func:`lmreg_nb.probe.load.level_run.run_level`.

A *cut stream* is one that ended early the way llama.cpp's ``interrupt_requests``
does it: ``data: [DONE]`` with no ``finish_reason`` (once the server has shown
it sends one), or the connection closed in the middle of the reply.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from ...i18n import ngettext
from ...summary.capacity import CapacityLevel, CapacitySLO, Percentiles
from ..wire.exchange import Exchange
from .metrics import decode_itl_ms, percentiles

__all__ = [
    "CUT",
    "SLO",
    "Level",
    "LevelPlan",
    "Sample",
    "cut_kind",
    "judge",
    "run_workers",
    "to_sample",
]

#: The error kind of a cut stream.
CUT = "cut stream"


@dataclass(frozen=True)
class SLO:
    """What "served" means: first token p90 (ms), optionally inter-token p90, error rate."""

    ttft_ms: float = 2000.0
    itl_ms: float | None = None
    max_error_rate: float = 0.01

    def recorded(self) -> CapacitySLO:
        """The SLO as the summary records it."""
        return CapacitySLO(self.ttft_ms, self.itl_ms, self.max_error_rate)

    def to_json(self) -> dict[str, Any]:
        """``{"ttft_ms", "itl_ms", "max_error_rate"}``."""
        return self.recorded().to_json()


@dataclass(frozen=True)
class LevelPlan:
    """When a level ends: as soon as its verdict is settled (:mod:`lmreg_nb.probe.load.settle`).

    Not before ``requests_per_worker`` requests per chat have finished (the
    floor) nor before ``min_seconds``; at the latest after ``max_requests_per_worker``
    per chat or ``max_requests`` (whichever is more: the ceiling) or after
    ``max_seconds`` (the time cap). Requests still running then are cut: their
    first token counts when it came (or, past the SLO, that it had not).
    """

    min_seconds: float = 0.0
    requests_per_worker: int = 2
    max_seconds: float = 15.0
    max_requests_per_worker: int = 8
    max_requests: int = 40

    def floor(self, concurrency: int) -> int:
        """Finished requests before a verdict may settle the level."""
        return max(1, self.requests_per_worker * concurrency)

    def ceiling(self, concurrency: int) -> int:
        """Finished requests after which the level ends, settled or not."""
        most = max(self.max_requests, self.max_requests_per_worker * concurrency)
        return max(most, self.floor(concurrency))


@dataclass(slots=True)
class Sample:
    """One request of a level."""

    ok: bool
    error: str | None = None
    detail: str = ""
    ttft_ms: float | None = None
    itl_ms: float | None = None
    latency_ms: float | None = None
    tokens: int = 0
    from_chunks: bool = False
    end_s: float = 0.0  # seconds since the level's start
    finish: bool = False  # the server sent a finish_reason
    soft_cut: bool = False  # [DONE] with no finish_reason: cut, if the server sends them
    partial: bool = False  # still running when the level ended: only its first token counts
    turn_s: float = 0.0  # a finished request: seconds from when it was due to its end
    waiting: bool = False  # partial, with no first token yet: ttft_ms is how long it had waited


@dataclass
class Level:
    """The figures of one concurrency level and whether they meet the SLO."""

    concurrency: int
    requests: int = 0
    errors: int = 0
    ttft_ms: dict[str, Any] = field(default_factory=dict)
    itl_ms: dict[str, Any] = field(default_factory=dict)
    latency_ms: dict[str, Any] = field(default_factory=dict)
    requests_per_s: float | None = None
    output_tokens_per_s: float | None = None
    meets_slo: bool = False
    failed: str | None = None  # what broke the SLO: "ttft", "itl", "errors", "cut-streams"
    errors_by_kind: dict[str, int] = field(default_factory=dict)
    first_error: str = ""  # "kind: detail" of the first failed request
    tokens_from_chunks: bool = False  # some token counts are chunk counts (no usage sent)
    finish_seen: bool = False  # some reply carried a finish_reason
    duration_s: float = 0.0
    unfinished: int = 0  # requests cut when the level ended (their first token counted)
    waiting: int = 0  # of those, requests still without a first token, past the SLO

    @property
    def cut_streams(self) -> int:
        """Requests whose stream was cut."""
        return self.errors_by_kind.get(CUT, 0)

    @classmethod
    def measured(
        cls, concurrency: int, samples: list[Sample], duration_s: float, window_s: float = 0.0
    ) -> Level:
        """The level's figures from its requests (over the successful ones).

        Rates by Little's law for a closed loop: C chats, each sending its next
        request when the last one ends, complete C / (mean turn) requests a
        second, the turn being a request's time from due to end; times the
        share that succeeded. That holds from the first wave on, where a count
        over a window of two or three waves is dragged down by the start (no
        request ends before the first replies) and by the requests cut at the
        end. Without turns (samples made elsewhere): the requests that ended
        within ``window_s`` (or ``duration_s``) over it. A request cut when the
        level ended (``partial``) counts in ``requests`` and its first token in
        the TTFT figures, not in latency, ITL or the rates.
        """
        good = [s for s in samples if s.ok]
        whole = [s for s in good if not s.partial]
        turns = [s.turn_s for s in samples if not s.partial and s.turn_s > 0]
        rate: float | None = None
        tokens_per_request = sum(s.tokens for s in whole) / len(whole) if whole else 0.0
        if turns:
            ended = len(turns)
            rate = concurrency / (sum(turns) / ended) * len(whole) / ended
        else:
            steady = [s for s in whole if s.end_s <= window_s]
            if not steady or window_s <= 0:
                steady, window_s = whole, duration_s
            if window_s > 0:
                rate = len(steady) / window_s
                tokens_per_request = sum(s.tokens for s in steady) / max(len(steady), 1)
        bad = next((s for s in samples if not s.ok), None)
        first = "" if bad is None else f"{bad.error}: {bad.detail}".rstrip(": ")
        return cls(
            concurrency,
            requests=len(samples),
            errors=len(samples) - len(good),
            ttft_ms=percentiles([s.ttft_ms for s in good if s.ttft_ms is not None]),
            itl_ms=percentiles([s.itl_ms for s in good if s.itl_ms is not None]),
            latency_ms=percentiles([s.latency_ms for s in good if s.latency_ms is not None]),
            requests_per_s=None if rate is None else round(rate, 3),
            output_tokens_per_s=None if rate is None else round(rate * tokens_per_request, 3),
            errors_by_kind=dict(Counter(s.error for s in samples if s.error).most_common()),
            first_error=first,
            tokens_from_chunks=any(s.from_chunks for s in good),
            finish_seen=any(s.finish for s in good),
            duration_s=round(duration_s, 3),
            unfinished=sum(1 for s in samples if s.partial),
            waiting=sum(1 for s in samples if s.waiting),
        )

    def recorded(self) -> CapacityLevel:
        """The level as the summary records it (its figures, not how they were measured)."""
        return CapacityLevel(
            self.concurrency,
            requests=self.requests,
            errors=self.errors,
            ttft_ms=Percentiles.from_json(self.ttft_ms),
            itl_ms=Percentiles.from_json(self.itl_ms),
            latency_ms=Percentiles.from_json(self.latency_ms),
            requests_per_s=self.requests_per_s,
            output_tokens_per_s=self.output_tokens_per_s,
            meets_slo=self.meets_slo,
        )

    def to_json(self) -> dict[str, Any]:
        """The contract's level object (``capacity.schema.json``, ``$defs/level``)."""
        return self.recorded().to_json()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Level:
        """A level read back from its JSON (what it does not carry stays at its default)."""
        return cls(
            int(data["concurrency"]),
            requests=int(data.get("requests") or 0),
            errors=int(data.get("errors") or 0),
            ttft_ms=dict(data.get("ttft_ms") or {}),
            itl_ms=dict(data.get("itl_ms") or {}),
            latency_ms=dict(data.get("latency_ms") or {}),
            requests_per_s=data.get("requests_per_s"),
            output_tokens_per_s=data.get("output_tokens_per_s"),
            meets_slo=bool(data.get("meets_slo")),
        )


def judge(level: Level, slo: SLO) -> None:
    """Set ``meets_slo`` and ``failed``: errors first, then TTFT p90, then ITL p90."""
    failed: str | None = None
    if not level.requests or level.errors / level.requests > slo.max_error_rate:
        cut = level.requests and level.cut_streams * 2 >= level.errors
        failed = "cut-streams" if cut else "errors"
    elif (level.ttft_ms.get("p90") or 0.0) > slo.ttft_ms:
        failed = "ttft"
    elif slo.itl_ms is not None and (level.itl_ms.get("p90") or 0.0) > slo.itl_ms:
        failed = "itl"
    level.failed = failed
    level.meets_slo = failed is None


def cut_kind(ex: Exchange) -> str | None:
    """``"closed"``: the connection closed mid-reply; ``"done"``: [DONE] with no finish_reason.

    ``"done"`` is a cut only for a server that sends finish_reason otherwise.
    """
    if not ex.streamed:
        return None
    if ex.failure == "transport" and ex.pieces:
        return "closed"
    if ex.done and ex.finish is None and not ex.error_events:
        return "done"
    return None


def to_sample(ex: Exchange, due: float, start: float) -> Sample:
    """One finished request as a sample; cut streams named (see the module docstring)."""
    end_s, turn_s = ex.t_end - start, ex.t_end - due
    cut = cut_kind(ex)
    if cut == "closed" or (cut == "done" and not ex.ok):  # the latter: cut before any content
        return Sample(False, CUT, _cut_detail(ex), end_s=end_s, turn_s=turn_s)
    soft_cut = cut == "done"
    if not ex.ok:
        return Sample(False, ex.failure, ex.failure_detail, end_s=end_s, turn_s=turn_s)
    times = ex.times
    tokens, source = ex.output_tokens
    return Sample(
        True,
        ttft_ms=(times[0] - due) * 1000 if times else None,
        itl_ms=decode_itl_ms(ex),
        latency_ms=(ex.t_end - due) * 1000,
        tokens=tokens,
        from_chunks=source == "chunks",
        end_s=end_s,
        finish=ex.finish is not None,
        soft_cut=soft_cut,
        turn_s=turn_s,
    )


def _cut_detail(ex: Exchange) -> str:
    n = len(ex.pieces)
    if ex.failure == "transport":
        text = ngettext(
            "the connection closed mid-reply after {n} chunk",
            "the connection closed mid-reply after {n} chunks",
            n,
        )
    else:
        text = ngettext(
            "[DONE] with no finish_reason after {n} chunk",
            "[DONE] with no finish_reason after {n} chunks",
            n,
        )
    return text.format(n=n)


async def run_workers(workers: list[Coroutine[Any, Any, None]], timeout: float) -> float:
    """Run ``workers`` at once for at most ``timeout`` s, then cancel what still runs.

    Also when the caller is cancelled (Ctrl-C): no request is left running. A
    worker's own exception is a bug of ours and is raised. Returns when the
    workers were stopped (``time.perf_counter()``).
    """
    tasks = [asyncio.ensure_future(worker) for worker in workers]
    try:
        await asyncio.wait(tasks, timeout=timeout)
    finally:
        now = time.perf_counter()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    for task in tasks:
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
    return now
