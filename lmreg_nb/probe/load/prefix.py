"""Whether the server reuses the lesson the class shares (a prefix cache), judged on samples.

One request at a time: a short question (the warm-up, and what a prompt costs
without the lesson), three students' first questions on the lesson, then the
short question again. The first student pays for the lesson cold; with a prefix
cache the next ones do not. One pair of times is not enough on a server whose
times wander (a CPU model on a busy machine: 16 to 620 ms for the same prompt),
so the noise is taken from the samples themselves (the spread of the later
students' times and of the two short ones) and a finding is said only when the
difference stands well clear of it; otherwise "could not tell".

The toolkit's own stalls (:class:`~lmreg_nb.probe.loop_lag.LoopLag`) are in the
samples too: a model server on the same two cores holds them for a second at a
time. Each sample is judged twice, as measured and less the time the client
stalled during it; a finding that does not hold both ways is "could not tell:
this machine stalled". Where the server counts its own prefix-cache hits (vLLM's
``/metrics``), its counters over the probe decide instead of the clocks.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import replace

import httpx

from ..._tls import tls_context
from ...summary.client import ClientLag
from ...summary.workload import PrefixCache
from ..loop_lag import LoopLag
from ..target import Target
from ..wire.server_metrics import MetricsReading, read_metrics
from ..wire.stream_client import ChatConnection
from .warmup import first_token
from .workload import ClassWorkload

__all__ = ["judge_counters", "judge_prefix", "judge_stalled", "prefix_probe"]

#: The later students whose first questions follow the first one's.
LATER = 3
#: A difference smaller than this (ms) is never a finding, however quiet the server.
_LEAST_MS = 100.0
#: A difference must stand this many times clear of the noise seen.
_CLEAR = 2.0
#: The least noise assumed (ms): timer and scheduling jitter of a quiet machine.
_NOISE_FLOOR_MS = 20.0
#: By the server's counters: reused when the later students' lesson tokens were hits at
#: least this share; not reused when at most _NO_HITS (vLLM caches whole blocks of 16).
_HITS = 0.5
_NO_HITS = 0.05


def judge_prefix(short_ms: list[float], first_ms: float, later_ms: list[float]) -> PrefixCache:
    """The finding from the times to the first token (ms) of the short questions, the first
    student's and the later students' (see the module docstring)."""
    base = min(short_ms)
    noise = max(max(later_ms) - min(later_ms), max(short_ms) - base, _NOISE_FLOOR_MS)
    clear = max(_LEAST_MS, _CLEAR * noise)
    cost = first_ms - base  # what the lesson cost the first student
    reused: bool | None = None
    if cost < clear:
        reused = None  # the lesson costs this server too little to tell
    elif first_ms - max(later_ms) >= clear and max(later_ms) - base <= cost / 2:
        reused = True  # every later student started clearly sooner: the lesson was kept
    elif min(later_ms) - base >= 0.7 * cost:
        reused = False  # every later student paid most of the lesson again
    return PrefixCache(
        reused, round(first_ms, 1), round(statistics.median(later_ms), 1), noise_ms=round(noise, 1)
    )


#: (start, end) of one sample on the loop's clock (perf_counter), and its time (s).
Sample = tuple[float, float, float]


def judge_stalled(
    shorts: list[Sample], lesson: list[Sample], client: ClientLag | None
) -> PrefixCache:
    """:func:`judge_prefix` on the samples as measured, and again less the time the client
    stalled during each: a finding that does not hold both ways could not be told."""

    def ms(samples: list[Sample], less: bool) -> list[float]:
        stalled = client.stalled_ms if client is not None and less else (lambda a, b: 0.0)
        return [max(0.0, t * 1000 - stalled(a, b)) for a, b, t in samples]

    first, *later = ms(lesson, False)
    found = judge_prefix(ms(shorts, False), first, later)
    if client is None or not client.intervals:
        return found
    low_first, *low_later = ms(lesson, True)
    unstalled = judge_prefix(ms(shorts, True), low_first, low_later)
    if unstalled.reused == found.reused:
        return found
    during = [s for s in client.intervals
              if any(s.start < b and s.end > a for a, b, _t in shorts + lesson)]  # fmt: skip
    return replace(found, reused=None, stalls=len(during),
                   worst_stall_ms=max((s.ms for s in during), default=0.0))  # fmt: skip


def judge_counters(
    found: PrefixCache, before: MetricsReading | None, after: MetricsReading | None, shared: int
) -> PrefixCache:
    """The finding by the server's own prefix-cache counters over the probe, when it has
    them and they counted the later students' lessons; else ``found`` as it is."""
    if before is None or after is None or shared <= 0:
        return found
    if None in (before.prefix_hits, before.prefix_queries, after.prefix_hits,
                after.prefix_queries):  # fmt: skip
        return found
    hits = (after.prefix_hits or 0.0) - (before.prefix_hits or 0.0)
    queries = (after.prefix_queries or 0.0) - (before.prefix_queries or 0.0)
    expected = LATER * shared
    if hits < 0 or queries < expected:  # a restart, or the lessons were not counted
        return found
    share = round(min(1.0, hits / expected), 3)
    if share >= _HITS:
        return replace(found, reused=True, hit_share=share, stalls=0, worst_stall_ms=0.0)
    if share <= _NO_HITS:
        return replace(found, reused=False, hit_share=share, stalls=0, worst_stall_ms=0.0)
    return found


async def _metrics(target: Target) -> MetricsReading | None:
    # Directly, as the load itself: never through the environment's proxy.
    async with httpx.AsyncClient(verify=tls_context(), trust_env=False) as client:
        return await read_metrics(client, target)


async def prefix_probe(
    work: ClassWorkload, target: Target, bound_s: float, *, lag: LoopLag | None = None
) -> tuple[bool, PrefixCache | None]:
    """The samples of the module docstring, one request at a time (also the warm-up).

    Returns whether the server answered the first request within ``bound_s``, and the
    finding (None when the first, short question went unanswered; "not measured" with
    the error kind when a student's question about the lesson failed). ``lag``: the run's
    watch on the client's own stalls (one of its own is kept when none is given).
    """
    if lag is not None:
        return await _probe(work, target, bound_s, lag)
    async with LoopLag() as own:
        return await _probe(work, target, bound_s, own)


async def _timed(conn: ChatConnection, bound_s: float) -> tuple[bool, Sample | None]:
    start = time.perf_counter()
    answered, waited = await first_token(conn, bound_s)
    if waited is None:
        return answered, None
    return answered, (start, time.perf_counter(), waited)


async def _probe(
    work: ClassWorkload, target: Target, bound_s: float, lag: LoopLag
) -> tuple[bool, PrefixCache | None]:
    short = work.short_payload(1)
    answered, first = await _timed(ChatConnection(target, short), bound_s)
    if first is None:
        return answered, None
    before = await _metrics(target)  # after the warm-up: the lesson's requests alone
    shorts = [first]
    lesson: list[Sample] = []
    for _i in range(1 + LATER):
        conn = work.connect(target)
        _answered, waited = await _timed(conn, bound_s)
        if waited is None:  # the lesson's question failed: say how, not nothing
            kind = conn.current.failure if conn.current is not None else None
            return True, PrefixCache(None, failure=kind or "timeout")
        lesson.append(waited)
    after = await _metrics(target) if before is not None else None
    _answered, again = await _timed(ChatConnection(target, short), bound_s)
    if again is not None:
        shorts.append(again)
    found = judge_stalled(shorts, lesson, lag.result())
    return True, judge_counters(found, before, after, work.info().shared_prefix_tokens)
