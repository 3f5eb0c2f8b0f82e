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

from ..i18n import _, ngettext
from .exchange import Exchange
from .metrics import decode_itl_ms, percentiles
from .stream_client import ChatConnection
from .target import Target

__all__ = [
    "CUT",
    "SLO",
    "Level",
    "LevelPlan",
    "Sample",
    "cut_kind",
    "judge",
    "run_level",
    "run_workers",
]

#: Error kinds: a cut stream, and a request still waiting for its first token when a level ends.
CUT = "cut stream"
LATE = "timeout"


@dataclass(frozen=True)
class SLO:
    """What "served" means: first token p90 (ms), optionally inter-token p90, error rate."""

    ttft_ms: float = 2000.0
    itl_ms: float | None = None
    max_error_rate: float = 0.01

    def to_json(self) -> dict[str, Any]:
        """``{"ttft_ms", "itl_ms", "max_error_rate"}``."""
        return {
            "ttft_ms": self.ttft_ms,
            "itl_ms": self.itl_ms,
            "max_error_rate": self.max_error_rate,
        }


@dataclass(frozen=True)
class LevelPlan:
    """How long a level runs: at least ``min_seconds`` and ``requests_per_worker`` per worker.

    No new request starts after ``max_seconds``; requests still running then are
    abandoned (counted as errors when still without a first token past the SLO).
    """

    min_seconds: float = 3.0
    requests_per_worker: int = 2
    max_seconds: float = 15.0


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

    @property
    def cut_streams(self) -> int:
        """Requests whose stream was cut."""
        return self.errors_by_kind.get(CUT, 0)

    @classmethod
    def measured(
        cls, concurrency: int, samples: list[Sample], duration_s: float, window_s: float = 0.0
    ) -> Level:
        """The level's figures from its requests (over the successful ones).

        Rates count the requests that ended within ``window_s``, while all C chats
        were still running: in the tail after it fewer run, which would understate
        throughput (without a window: all of them over ``duration_s``).
        """
        good = [s for s in samples if s.ok]
        steady = [s for s in good if s.end_s <= window_s]
        if not steady or window_s <= 0:
            steady, window_s = good, duration_s
        tokens = sum(s.tokens for s in steady)
        bad = next((s for s in samples if not s.ok), None)
        first = "" if bad is None else f"{bad.error}: {bad.detail}".rstrip(": ")
        rate = window_s > 0
        return cls(
            concurrency,
            requests=len(samples),
            errors=len(samples) - len(good),
            ttft_ms=percentiles([s.ttft_ms for s in good if s.ttft_ms is not None]),
            itl_ms=percentiles([s.itl_ms for s in good if s.itl_ms is not None]),
            latency_ms=percentiles([s.latency_ms for s in good if s.latency_ms is not None]),
            requests_per_s=round(len(steady) / window_s, 3) if rate else None,
            output_tokens_per_s=round(tokens / window_s, 3) if rate else None,
            errors_by_kind=dict(Counter(s.error for s in samples if s.error).most_common()),
            first_error=first,
            tokens_from_chunks=any(s.from_chunks for s in good),
            finish_seen=any(s.finish for s in good),
            duration_s=round(duration_s, 3),
        )

    def to_json(self) -> dict[str, Any]:
        """The contract's level object (DESIGN.md "Contract: capacity")."""
        return {
            "concurrency": self.concurrency,
            "requests": self.requests,
            "errors": self.errors,
            "ttft_ms": self.ttft_ms,
            "itl_ms": self.itl_ms,
            "latency_ms": self.latency_ms,
            "requests_per_s": self.requests_per_s,
            "output_tokens_per_s": self.output_tokens_per_s,
            "meets_slo": self.meets_slo,
        }

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


def _sample(ex: Exchange, due: float, start: float) -> Sample:
    """One finished request as a sample; cut streams named (see the module docstring)."""
    end_s = ex.t_end - start
    cut = cut_kind(ex)
    if cut == "closed" or (cut == "done" and not ex.ok):  # the latter: cut before any content
        return Sample(False, CUT, _cut_detail(ex), end_s=end_s)
    soft_cut = cut == "done"
    if not ex.ok:
        return Sample(False, ex.failure, ex.failure_detail, end_s=end_s)
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


def _settle(
    samples: list[Sample], unfinished: list[tuple[float, float]], slo: SLO, finish_seen: bool
) -> None:
    """Count requests cut off by the level's end, and [DONE]-only cuts, as errors.

    ``unfinished``: (seconds since due, seconds since the level's start) of each
    request still running when the level was stopped.
    """
    for waited, end_s in unfinished:
        if waited * 1000 > slo.ttft_ms:  # still running, already past the SLO
            samples.append(Sample(False, LATE, _("no reply when the level ended"), end_s=end_s))
    if finish_seen or any(s.finish for s in samples):
        # The server sends finish_reason, so [DONE] without one is a cut stream.
        for i, sample in enumerate(samples):
            if sample.soft_cut:
                detail = _("[DONE] with no finish_reason")
                samples[i] = Sample(False, CUT, detail, end_s=sample.end_s)


async def run_level(
    target: Target,
    payload: bytes,
    concurrency: int,
    slo: SLO,
    plan: LevelPlan = LevelPlan(),
    *,
    finish_seen: bool = False,
) -> Level:
    """Measure ``concurrency`` closed-loop chats, then judge them against ``slo``.

    Each chat has a connection of its own from the lean client
    (:mod:`lmreg_nb.probe.stream_client`), which keeps up on a busy machine.
    """
    run = _LevelRun(target, payload, plan, wanted=concurrency * plan.requests_per_worker)
    # Requests that started before the cut-off may finish; a hung one may not hold us long.
    grace = max(slo.ttft_ms / 1000, target.timeout) + 1.0
    now = await run.run(concurrency, timeout=plan.max_seconds + grace)
    _settle(run.samples, run.unfinished(now), slo, finish_seen)
    ends = [s.end_s for s in run.samples if s.ok]
    duration = max(ends) if ends else now - run.start
    level = Level.measured(concurrency, run.samples, duration, run.window)
    judge(level, slo)
    return level


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


@dataclass
class _LevelRun:
    """The state the workers of one level share: its samples and its requests in flight."""

    target: Target
    payload: bytes
    plan: LevelPlan
    wanted: int  # requests after which the level may end (once min_seconds have passed)
    start: float = field(default_factory=time.perf_counter)
    samples: list[Sample] = field(default_factory=list)
    in_flight: dict[int, float] = field(default_factory=dict)  # worker -> when its request was due
    window: float = 0.0  # when the first worker stopped: the end of the steady state

    def enough(self, now: float) -> bool:
        """Whether a worker should stop (and, for the first to stop, the window's end)."""
        stop_new = self.start + self.plan.max_seconds
        if now >= stop_new or (
            now - self.start >= self.plan.min_seconds and len(self.samples) >= self.wanted
        ):
            self.window = self.window or now - self.start
            return True
        return False

    async def worker(self, index: int) -> None:
        """One chat in a closed loop until :meth:`enough`."""
        due = self.start
        conn = ChatConnection(self.target, self.payload)
        try:
            while not self.enough(time.perf_counter()):
                self.in_flight[index] = due
                ex = await conn.send()
                del self.in_flight[index]
                self.samples.append(_sample(ex, due, self.start))
                due = ex.t_end  # closed loop: the next request is due when this one ends
        finally:
            conn.close()

    async def run(self, concurrency: int, timeout: float) -> float:
        """Run ``concurrency`` workers for at most ``timeout`` s; when they were stopped."""
        return await run_workers([self.worker(i) for i in range(concurrency)], timeout)

    def unfinished(self, now: float) -> list[tuple[float, float]]:
        """(seconds since due, seconds since the start) of each request still running."""
        return [(now - due, now - self.start) for due in self.in_flight.values()]
