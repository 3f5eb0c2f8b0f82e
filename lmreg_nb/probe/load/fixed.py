"""Load test: N streamed chat requests at concurrency C, bounded in count and in time.

C workers, each with a keep-alive connection of the lean client the capacity
search uses (:mod:`lmreg_nb.probe.wire.stream_client`: it timestamps each network
read as it arrives, so a busy load generator does not add its own lag to the
server's ITL), take request numbers from a common counter until N are sent or
the overall deadline passes. Requests still running at the deadline are cancelled
and counted as errors of kind ``"deadline"``; requests never started are not
counted. Figures of the summary (TTFT, ITL, latency, throughput) are over the
successful requests; ``errors`` counts the others, by kind in ``errors_by_kind``.

The client checks itself (:class:`~lmreg_nb.probe.loop_lag.LoopLag`): each row says
how long the toolkit's own loop stalled while it waited for that request's first
token (``client_stall_ms``) and whether a stall overlapped it at all
(``client_stalled``); the summary carries the stalls (``client``) and
:attr:`LoadResult.skew` whether they could have moved the first-token p90.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ...summary import Percentiles
from ...summary.client import ClientLag
from ...summary.performance import Performance
from ..loop_lag import LoopLag
from ..target import Target
from ..wire.exchange import DEFAULT_PROMPT, Exchange, chat_body
from ..wire.stream_client import ChatConnection
from .busy import Skew, skew
from .levels import CUT, TOO_LONG, cut_kind, run_workers
from .metrics import RequestRow, failed_row, percentiles, request_metrics
from .workload import ClassWorkload

__all__ = ["MAX_CONCURRENCY", "MAX_REQUESTS", "LoadResult", "run_load"]

MAX_REQUESTS = 100_000
MAX_CONCURRENCY = 1024


@dataclass
class LoadResult:
    """Rows (one per request), pooled inter-token gaps (ms), wall time (s)."""

    rows: list[RequestRow] = field(default_factory=list)
    gaps_ms: list[float] = field(default_factory=list)
    duration_s: float = 0.0
    concurrency: int = 1
    #: The client's own event-loop stalls during the load test (None: not measured).
    client: ClientLag | None = None

    @property
    def skew(self) -> Skew:
        """Whether the client's stalls could have moved the first-token p90 (rows marked)."""
        pairs = [
            (r.ttft_ms, r.client_stall_ms or 0.0)
            for r in self.rows
            if r.ok and r.ttft_ms is not None
        ]
        return skew(pairs)

    @property
    def resent(self) -> int:
        """Requests sent twice (the server closed a kept-alive connection under them)."""
        return sum(1 for r in self.rows if r.resent)

    @property
    def usage_disbelieved(self) -> int:
        """Replies whose usage.completion_tokens was more than their chunks could carry."""
        return sum(1 for r in self.rows if r.usage_disbelieved)

    @property
    def cut_streams(self) -> int:
        """Requests whose stream the server cut (llama.cpp ``interrupt_requests``)."""
        return sum(1 for r in self.rows if r.error == CUT)

    @property
    def errors_by_kind(self) -> dict[str, int]:
        """Failed requests counted by kind (``status 500``, ``timeout``, ``bad stream``...)."""
        return dict(Counter(r.error for r in self.rows if r.error).most_common())

    def performance(self, *, load_test: bool = True) -> Performance:
        """The figures of this load test, `check --json`'s ``summary`` (``load_test`` False:
        of the checks' one request)."""
        good = [r for r in self.rows if r.ok]
        duration = self.duration_s
        tokens = sum(r.output_tokens for r in good)
        return Performance(
            requests=len(self.rows),
            errors=len(self.rows) - len(good),
            ttft_ms=_pct([r.ttft_ms for r in good if r.ttft_ms is not None]),
            # What students feel: the answer's first token, thinking excluded.
            first_answer_ms=_pct(
                [r.first_answer_ms for r in good if r.first_answer_ms is not None]
            ),
            # Per request (decode time / (tokens - 1)), not pooled read gaps: see metrics.
            itl_ms=_pct([r.itl_mean_ms for r in good if r.itl_mean_ms is not None]),
            latency_ms=_pct([r.latency_ms for r in good if r.latency_ms is not None]),
            requests_per_s=round(len(good) / duration, 3) if duration > 0 else None,
            output_tokens_per_s=round(tokens / duration, 3) if duration > 0 else None,
            load_test=load_test,
            client=self.client,
        )


def _pct(values: list[float]) -> Percentiles:
    found = percentiles(values)
    return Percentiles(found["p50"], found["p90"], found["p99"])


async def run_load(
    target: Target,
    requests: int,
    concurrency: int,
    *,
    max_duration: float = 300.0,
    max_tokens: int | None = 256,
    prompt: str | None = None,
    progress: bool = False,
    workload: ClassWorkload | None = None,
) -> LoadResult:
    """Send ``requests`` streamed chat requests, ``concurrency`` at a time.

    ``workload``: each worker is a student of it (:mod:`lmreg_nb.probe.load.workload`);
    without it every request is ``prompt`` (a short question) with ``max_tokens``.
    """
    requests = max(0, min(requests, MAX_REQUESTS))
    concurrency = max(1, min(concurrency, MAX_CONCURRENCY, max(requests, 1)))
    body = json.dumps(
        chat_body(target.model, prompt or DEFAULT_PROMPT, stream=True, max_tokens=max_tokens)
    )
    result = LoadResult(concurrency=concurrency)
    bar = _progress_bar(requests, progress)
    run = _LoadRun(target, body.encode(), result, bar, iter(range(requests)), max_duration)
    if workload is not None:
        run.connect = workload.connect
    try:
        async with LoopLag() as lag:  # the client checks itself while it measures
            await run.run(concurrency)
    finally:
        bar.close()
    result.client = client = lag.result()
    for row, (t_start, t_first, t_end) in zip(result.rows, run.spans, strict=True):
        row.client_stall_ms = round(client.stalled_ms(t_start, t_first or t_end), 3)
        row.client_stalled = client.overlaps(t_start, t_end)
    _soft_cuts(result.rows)
    ends = [r.end_s for r in result.rows]
    result.duration_s = max(ends) if ends else time.perf_counter() - run.start
    result.rows.sort(key=lambda r: r.request)
    return result


@dataclass
class _LoadRun:
    """What the workers of one load test share: the target, the request counter, the result."""

    target: Target
    payload: bytes
    result: LoadResult
    bar: Any  # a tqdm bar, or _NoBar
    counter: Iterator[int]  # request numbers, taken by whichever worker is free
    max_duration: float
    start: float = field(default_factory=time.perf_counter)
    connect: Callable[[Target, bytes], ChatConnection] = ChatConnection
    #: (sent, first token, end) of each row, in the rows' order (perf_counter seconds).
    spans: list[tuple[float, float | None, float]] = field(default_factory=list)

    async def run(self, concurrency: int) -> None:
        """``concurrency`` workers until the requests are sent or the time is up."""
        await run_workers([self.worker() for _ in range(concurrency)], self.max_duration)

    async def worker(self) -> None:
        """Send requests one after the other; one cancelled at the deadline is still a row."""
        deadline = self.start + self.max_duration
        conn = self.connect(self.target, self.payload)  # kept alive from one request to the next
        try:
            for index in self.counter:
                if time.perf_counter() >= deadline:
                    return
                t0 = time.perf_counter()
                try:
                    ex = await conn.send()
                except asyncio.CancelledError:
                    now = time.perf_counter()
                    self.result.rows.append(
                        failed_row(
                            "deadline",
                            request=index,
                            start_s=t0 - self.start,
                            end_s=now - self.start,
                        )
                    )
                    self.spans.append((t0, None, now))
                    raise
                self.result.rows.append(_row(ex, index, self.start))
                self.spans.append((ex.t_start, ex.times[0] if ex.times else None, ex.t_end))
                if ex.ok:
                    self.result.gaps_ms.extend(g * 1000 for g in ex.gaps)
                self.bar.update(1)
        finally:
            conn.close()


def _row(ex: Exchange, index: int, start: float) -> RequestRow:
    """One finished request's row; a cut stream counts as an error."""
    row = request_metrics(ex)
    row.cut = cut_kind(ex)
    if row.cut == "closed" or (row.cut == "done" and not ex.ok):
        row.ok, row.error = False, CUT
    elif ex.failure == TOO_LONG:
        row.error = TOO_LONG
    row.finish = ex.finish is not None
    row.resent = ex.resent
    row.usage_disbelieved = ex.usage_disbelieved
    row.request = index
    row.start_s = round(ex.t_start - start, 6)
    row.end_s = round(ex.t_end - start, 6)
    return row


def _soft_cuts(rows: list[RequestRow]) -> None:
    """[DONE] with no finish_reason is a cut stream when the server sends finish_reason."""
    if any(r.finish for r in rows):
        for row in rows:
            if row.cut == "done" and row.ok:
                row.ok, row.error = False, CUT


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress_bar(total: int, show: bool) -> Any:
    if not show:
        return _NoBar()  # tqdm.auto costs an ipywidgets import: only when shown
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="req", desc="load test", leave=False)
