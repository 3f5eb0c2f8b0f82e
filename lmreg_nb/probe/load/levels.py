"""One level of the capacity search: C chats in a closed loop, measured against an SLO.

Closed loop: C workers, each sending its next streamed request as soon as its
previous one ends, so exactly C chats are in flight (as C students each
waiting for a reply before typing the next question). Every time is counted
from when the request was *due*, the end of the worker's previous request (or
the level's start): time spent in our own queue (a busy event loop, waiting
for a pooled connection, connecting) counts, as it does for a student
(vLLM issue #54101 is about benchmarks that hide it).

Per request (:mod:`lmreg_nb.probe.load.samples`): TTFT from due to the first
content; ITL from the request's own decode time, (last content - first content)
/ (tokens - 1), which stays exact when several chunks arrive in one network read
(gaps between read times would count those as 0 ms apart); and its longest pause
between two content tokens. Tokens are a believable ``usage.completion_tokens``
when the server reports it, else content chunks (``tokens_from_chunks`` says so).

A level is judged on whole replies at reading pace (:func:`judge`): within the
SLO only when its error rate, first-token p90, time-between-tokens p90 and
longest-pause p90 are within it, and the time between tokens was measured at
all; a level with no pace measured is outside ("not measured"), never within.
It ends as soon as its verdict is settled (:mod:`lmreg_nb.probe.load.settle`),
not after a fixed time; it is run by :func:`lmreg_nb.probe.load.level_run.run_level`.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from ...summary.capacity import CapacityLevel, CapacitySLO, Percentiles
from .busy import Skew
from .metrics import percentile, percentiles
from .samples import CUT, STALLED, TOO_LONG, Sample, cut_kind, cut_sample, to_sample

__all__ = [
    "CUT",
    "DEFAULT_PAUSE_MS",
    "SLO",
    "STALLED",
    "TOO_LONG",
    "Level",
    "LevelPlan",
    "Sample",
    "cut_kind",
    "cut_sample",
    "judge",
    "run_workers",
    "to_sample",
]

#: The longest pause in the middle of an answer a student waits through (ms).
DEFAULT_PAUSE_MS = 2000.0


@dataclass(frozen=True)
class SLO:
    """What "served" means: first token p90 (ms), optionally time between tokens p90 and
    longest pause p90 (ms; None: not held to it), and the error rate."""

    ttft_ms: float = 2000.0
    itl_ms: float | None = None
    max_error_rate: float = 0.01
    pause_ms: float | None = DEFAULT_PAUSE_MS

    @property
    def paced(self) -> bool:
        """Whether the SLO judges the replies' pace (time between tokens or pauses)."""
        return self.itl_ms is not None or self.pause_ms is not None

    @property
    def stall_s(self) -> float:
        """A reply with one token and no second for longer than this is stalled (s)."""
        return (self.pause_ms or DEFAULT_PAUSE_MS) / 1000

    def recorded(self) -> CapacitySLO:
        """The SLO as the summary records it."""
        return CapacitySLO(self.ttft_ms, self.itl_ms, self.max_error_rate, self.pause_ms)

    def to_json(self) -> dict[str, Any]:
        """``{"ttft_ms", "itl_ms", "pause_ms", "max_error_rate"}``."""
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


@dataclass
class Level:
    """The figures of one concurrency level and whether they meet the SLO."""

    concurrency: int
    requests: int = 0
    errors: int = 0
    ttft_ms: dict[str, float | None] = field(default_factory=dict)
    itl_ms: dict[str, float | None] = field(default_factory=dict)
    latency_ms: dict[str, float | None] = field(default_factory=dict)
    requests_per_s: float | None = None
    output_tokens_per_s: float | None = None
    meets_slo: bool = False
    #: What broke the SLO: "errors", "cut-streams", "ttft", "itl", "pause" (None: met).
    failed: str | None = None
    errors_by_kind: dict[str, int] = field(default_factory=dict)
    first_error: str = ""  # "kind: detail" of the first failed request
    tokens_from_chunks: bool = False  # some token counts are chunk counts (no usage sent)
    finish_seen: bool = False  # some reply carried a finish_reason
    duration_s: float = 0.0
    unfinished: int = 0  # requests cut when the level ended (judged on what they streamed)
    waiting: int = 0  # of those, requests still without a first token, past the SLO
    #: Requests still running when the level ended, counted or not (a request cut before
    #: anything was known of it is not judged, but the server may still work on it).
    in_flight: int = 0
    #: p90 over the replies of each one's longest pause between two content tokens (ms).
    longest_pause_ms: float | None = None
    paced: int = 0  # replies whose time between tokens was measured (two tokens or more)
    usage_disbelieved: int = 0  # replies whose usage.completion_tokens was not believed
    resent: int = 0  # requests sent twice (the server closed a kept-alive connection)
    #: The requests themselves (not recorded): to mark those the client's stalls overlap.
    samples: list[Sample] = field(default_factory=list, repr=False, compare=False)
    started: float = 0.0  # when the level started (perf_counter; not recorded)
    #: What the client's own stalls could have done to its figures (None: not measured).
    skew: Skew | None = None

    def spans(self) -> list[tuple[float, float | None, float | None, float]]:
        """(due, first token, longest pause in ms, end) of each successful request, in
        perf_counter seconds: what the client's stalls are held against."""
        found: list[tuple[float, float | None, float | None, float]] = []
        for s in self.samples:
            if not s.ok:
                continue
            due = self.started + s.due_s
            first = None if s.ttft_ms is None or s.waiting else due + s.ttft_ms / 1000
            found.append((due, first, s.pause_ms, self.started + s.end_s))
        return found

    @property
    def cut_streams(self) -> int:
        """Requests whose stream was cut."""
        return self.errors_by_kind.get(CUT, 0)

    @property
    def stalled(self) -> int:
        """Replies that sent one token and then none for longer than a student waits."""
        return self.errors_by_kind.get(STALLED, 0)

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
        level ended (``partial``) counts in ``requests``, its first token in the
        TTFT figures and its pace so far in the ITL and pause figures, not in
        latency or the rates.
        """
        good = [s for s in samples if s.ok]
        whole = [s for s in good if not s.partial]
        turns = [s.turn_s for s in samples if not s.partial and s.turn_s > 0]
        rate: float | None = None
        tokens_per_request = sum(s.tokens for s in whole) / len(whole) if whole else 0.0
        if turns:
            ended = len(turns)
            rate = concurrency / (sum(turns) / ended) * len(whole) / ended
        elif whole or not any(s.partial for s in samples):
            # (Every reply still running when the level ended: no rate was measured.)
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
            longest_pause_ms=_p90([s.pause_ms for s in good if s.pause_ms is not None]),
            paced=sum(1 for s in good if s.paced),
            usage_disbelieved=sum(1 for s in samples if s.usage_disbelieved),
            resent=sum(1 for s in samples if s.resent),
            samples=list(samples),
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
            longest_pause_ms=self.longest_pause_ms,
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
            longest_pause_ms=data.get("longest_pause_ms"),
        )


def _p90(values: list[float]) -> float | None:
    found = percentile(values, 90)
    return None if found is None else round(found, 3)


def judge(level: Level, slo: SLO) -> None:
    """Set ``meets_slo`` and ``failed``: errors, then first token, then the replies' pace.

    Errors first (``"cut-streams"`` when most are cut streams with other chats in
    flight: alone, nothing cut them but the server), then TTFT p90, then pace: with an
    ITL or pause limit, a level whose time between tokens was not measured on any reply
    is outside (``"itl"``, or ``"pause"`` without an ITL limit, with no figure), then
    ITL p90, then the longest pause p90.
    """
    failed: str | None = None
    if not level.requests or level.errors / level.requests > slo.max_error_rate:
        cut = level.concurrency > 1 and level.requests and level.cut_streams * 2 >= level.errors
        failed = "cut-streams" if cut else "errors"
    elif (level.ttft_ms.get("p90") or 0.0) > slo.ttft_ms:
        failed = "ttft"
    elif slo.paced and not level.paced:
        failed = "itl" if slo.itl_ms is not None else "pause"  # not measured: never "met"
    elif slo.itl_ms is not None and (level.itl_ms.get("p90") or 0.0) > slo.itl_ms:
        failed = "itl"
    elif slo.pause_ms is not None and (level.longest_pause_ms or 0.0) > slo.pause_ms:
        failed = "pause"
    level.failed = failed
    level.meets_slo = failed is None


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
