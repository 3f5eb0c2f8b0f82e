"""A level ends as soon as its verdict is settled: the rule, and levels run in-process.

The rule (:mod:`lmreg_nb.probe.load.settle`) is checked against the binomial it
comes from and against the sample p90 the level is judged by; the level runner
against fake connections (no sockets), whose replies are scripted in time.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from collections.abc import Callable

import pytest

from lmreg_nb.probe.load import level_run, samples
from lmreg_nb.probe.load.level_run import run_level
from lmreg_nb.probe.load.levels import SLO, Level, LevelPlan, Sample
from lmreg_nb.probe.load.metrics import percentile
from lmreg_nb.probe.load.settle import Measure, Tally, rank_bounds, settled
from lmreg_nb.probe.load.warmup import warm_up
from lmreg_nb.probe.wire.exchange import Exchange, Target

pytestmark = pytest.mark.timeout(60)


def _cdf(m: int, k: int, q: float = 0.9) -> float:
    """P(Binomial(m, q) <= k), by brute force."""
    return sum(math.comb(m, i) * q**i * (1 - q) ** (m - i) for i in range(k + 1))


@pytest.mark.parametrize("m", [1, 5, 10, 22, 40, 80, 200])
def test_rank_bounds_are_the_binomial_order_statistic_bounds(m: int) -> None:
    j, k = rank_bounds(m)
    if k <= m:  # X_(k) bounds the p90 above with 90 %, and X_(k-1) would not
        assert _cdf(m, k - 1) >= 0.9 > _cdf(m, k - 2)
    else:
        assert _cdf(m, m - 1) < 0.9
    assert 1 - _cdf(m, j - 1) >= 0.9  # P(B >= j) >= 90 %
    assert 1 - _cdf(m, j) < 0.9  # and j + 1 would not do


def test_twenty_two_fast_requests_are_needed_to_say_clearly_inside() -> None:
    rule = {"floor": 2, "most": 100, "max_error_rate": 0.01}
    assert settled(Tally(fast=21, finished=21), **rule) is None  # could be luck
    assert settled(Tally(fast=22, finished=22), **rule) is True
    # Requests still waiting count as slow for "inside": not settled while they could tip it.
    assert settled(Tally(fast=22, unknown=3, finished=22), **rule) is None
    assert settled(Tally(fast=40, finished=20), **{**rule, "floor": 24}) is None  # the floor


def test_half_slow_is_clearly_outside_at_once_and_errors_beyond_recovery_too() -> None:
    rule = {"floor": 12, "most": 100, "max_error_rate": 0.01}
    assert settled(Tally(fast=6, slow=6, finished=12), **rule) is False
    # Unknown requests count as fast for "outside".
    assert settled(Tally(fast=6, slow=3, unknown=3, finished=12), **rule) is None
    # 1 error could still be 1 % of 100 requests; where at most 99 can count, it cannot.
    assert settled(Tally(fast=30, errors=1, finished=31), **rule) is None
    assert settled(Tally(fast=30, errors=1, finished=31), **{**rule, "most": 99}) is False


def test_late_first_tokens_that_no_later_request_can_outweigh_settle_before_the_floor() -> None:
    # 40 chats in a lesson's first burst on a queue-bound server: 37 already waited past the
    # SLO. The level can count at most 360 requests; 10 % of them plus the 1 % of errors
    # allowed (and a margin for the interpolated p90) is 42.6: 37 could still be outweighed.
    rule = {"floor": 80, "most": 360, "max_error_rate": 0.01}
    assert settled(Tally(fast=3, slow=37, late=37, finished=3), **rule) is None
    # 43 late (or failed: a late request may still time out) can never be: outside, now.
    assert settled(Tally(fast=3, slow=40, late=40, errors=3, finished=6), **rule) is False
    assert settled(Tally(fast=3, slow=43, late=43, finished=3), **rule) is False
    # Slow only by its reading pace (ITL) is not late: the TTFT p90 could still be inside.
    assert settled(Tally(fast=3, slow=43, late=0, finished=43), **rule) is None
    # Errors beyond what the whole level can dilute settle it before the floor too.
    assert settled(Tally(fast=3, errors=4, finished=7), **rule) is False


def test_a_certain_outside_verdict_is_the_one_a_level_run_to_its_end_gets() -> None:
    # Whatever the requests not yet counted do (fast, late or failed), a level settled
    # outside by its late and failed requests is judged outside at the end: the p90 over
    # any number of requests up to ``most``, the errors' share over the same.
    rate = 0.01
    for most in (10, 23, 40):
        for late in range(most + 1):
            errors = next(
                (e for e in range(most - late + 1)
                 if settled(Tally(slow=late, late=late, errors=e), floor=999, most=most,
                            max_error_rate=rate) is False),
                None,
            )  # fmt: skip
            if errors is None:
                continue
            for more_fast in range(most - late - errors + 1):
                for failed in range(late + 1):  # late requests that end as errors instead
                    ttfts = [10.0] * more_fast + [999.0] * (late - failed)
                    n_errors = errors + failed
                    p90 = percentile(ttfts, 90)
                    outside = n_errors / (len(ttfts) + n_errors) > rate or (p90 or 0.0) > 100.0
                    assert outside, (most, late, errors, more_fast, failed)


def test_a_p90_close_to_the_slo_is_left_to_the_ceiling() -> None:
    # 1 slow in 13 (7.7 %) and 1 in 7 (14 %): near the 10 % line, 100 requests are not enough.
    rule = {"floor": 26, "most": 200, "max_error_rate": 0.01}
    assert settled(Tally(fast=92, slow=8, finished=100), **rule) is None
    assert settled(Tally(fast=86, slow=14, finished=100), **rule) is None


def test_a_settled_verdict_is_the_verdict_whatever_the_requests_in_flight_do() -> None:
    # For every tally up to 40 requests: "inside" means the sample p90 stays within the
    # SLO however the unknown ones turn out, "outside" that it stays over it.
    rule = {"floor": 1, "most": 10_000, "max_error_rate": 0.5}
    for fast, slow, unknown in itertools.product(range(41), range(10), range(6)):
        verdict = settled(Tally(fast, slow, unknown, finished=fast + slow), **rule)
        if verdict is None:
            continue
        for turned_slow in range(unknown + 1):
            times = [1.0] * (fast + unknown - turned_slow) + [3.0] * (slow + turned_slow)
            inside = (percentile(times, 90) or 0.0) <= 2.0
            assert inside == verdict, (fast, slow, unknown, turned_slow)


class FakeConnection:
    """An in-process chat: its first token after ``ttft_s``, its end ``decode_s`` later.

    ``script(n)`` gives (ttft_s, decode_s) for the n-th request of the level (None: never).
    """

    def __init__(self, script: Callable[[int], tuple[float | None, float]]) -> None:
        self.script = script
        self.current: Exchange | None = None
        self.closed = False

    async def send(self) -> Exchange:
        ttft, decode = self.script(next(FakeConnection.counter))
        ex = self.current = Exchange(stream_requested=True)
        ex.t_begin = ex.t_start = time.perf_counter()
        if ttft is None:
            await asyncio.sleep(3600)  # headers, then silence
        await asyncio.sleep(ttft or 0.0)
        ex.times.append(time.perf_counter())
        ex.pieces.append("hi")
        await asyncio.sleep(decode)
        ex.times.append(time.perf_counter())
        ex.pieces.append("!")
        ex.streamed, ex.done, ex.finish = True, True, "stop"
        ex.usage = {"completion_tokens": 2}
        ex.t_end = time.perf_counter()
        return ex

    def close(self) -> None:
        self.closed = True

    counter = itertools.count()


DEFAULT_PLAN = LevelPlan()
TARGET = Target("http://fake.invalid/v1/chat/completions", "k", "m", timeout=5)


def _level(
    script: Callable[[int], tuple[float | None, float]],
    concurrency: int,
    slo: SLO,
    plan: LevelPlan = DEFAULT_PLAN,
    progress: list[int] | None = None,
) -> tuple:
    FakeConnection.counter = itertools.count()
    conns: list[FakeConnection] = []

    def connect(target: Target, payload: bytes) -> FakeConnection:
        conns.append(FakeConnection(script))
        return conns[-1]

    async def measure() -> tuple:
        started = time.perf_counter()
        level = await run_level(
            TARGET,
            b"{}",
            concurrency,
            slo,
            plan,
            connect=connect,
            on_progress=None if progress is None else progress.append,
        )
        return level, time.perf_counter() - started

    level, elapsed = asyncio.run(measure())
    assert conns and all(c.closed for c in conns)  # no connection is left open
    return level, elapsed


def test_a_fast_server_ends_the_level_once_its_verdict_is_settled_not_at_a_fixed_time() -> None:
    progress: list[int] = []
    plan = LevelPlan(max_seconds=20)
    level, elapsed = _level(lambda n: (0.005, 0.03), 4, SLO(ttft_ms=100), plan, progress)
    assert level.meets_slo and level.failed is None
    # 22 fast first tokens settle it (those of requests still decoding count): about 6
    # rounds of 35 ms, far from the 20 s cap.
    assert 22 <= level.requests <= 30, level
    assert elapsed < 3.0
    assert level.duration_s == pytest.approx(elapsed, abs=0.2)
    # The requests cut at the end count by their first token, not in the rates; the rate
    # is the closed loop's: 4 chats, each a request per turn of about 35 ms.
    assert level.unfinished <= 4
    assert level.requests_per_s == pytest.approx(4 / (level.latency_ms["p50"] / 1000), rel=0.3)


def test_rates_are_the_closed_loops_from_the_first_wave_on() -> None:
    # 10 chats, turns of 0.5 s: 20 requests a second, of which 3 in 4 succeed; a count over
    # the 1.2 s the level ran (two waves, the first ending only at 0.5 s) would say 12.5.
    ok = [Sample(True, ttft_ms=50, latency_ms=500, tokens=8, end_s=0.5, turn_s=0.5)] * 15
    failed = [Sample(False, "status 500", end_s=0.5, turn_s=0.5)] * 5
    cut = [Sample(True, ttft_ms=60, end_s=1.2, partial=True)] * 10
    level = Level.measured(10, ok + failed + cut, 1.2, 1.2)
    assert level.requests_per_s == pytest.approx(15.0)
    assert level.output_tokens_per_s == pytest.approx(15.0 * 8)
    assert (level.requests, level.errors, level.unfinished) == (30, 5, 10)
    assert level.ttft_ms["p50"] == 50 and level.latency_ms["p50"] == 500


def test_a_level_that_is_clearly_too_slow_ends_after_its_floor() -> None:
    # Every other request waits 120 ms for its first token, against an SLO of 50 ms.
    level, elapsed = _level(lambda n: (0.12 if n % 2 else 0.005, 0.02), 6, SLO(ttft_ms=50))
    assert not level.meets_slo and level.failed == "ttft"
    assert level.requests - level.unfinished < 30  # the floor is 12, the ceiling 48
    assert elapsed < 2.0


def test_a_queue_bound_burst_ends_before_the_floor_once_the_late_cannot_be_outweighed() -> None:
    # A server that answers one request at a time, 30 ms each (a prefill queue): 40 chats,
    # SLO 60 ms. The floor (80 finished) would take 2.4 s; past 43 late first tokens the
    # verdict is certain, about 0.15 s after the SLO.
    queue = {"free": 0.0}

    def script(n: int) -> tuple[float | None, float]:
        now = time.perf_counter()
        queue["free"] = max(now, queue["free"]) + 0.03
        return queue["free"] - now, 0.001

    plan = LevelPlan(max_seconds=20)
    level, elapsed = _level(script, 40, SLO(ttft_ms=60), plan)
    assert not level.meets_slo and level.failed == "ttft"
    assert level.requests - level.unfinished < 80  # ended before its floor
    assert elapsed < 1.5, elapsed


def test_a_p90_near_the_slo_runs_to_the_ceiling_and_the_data_decide() -> None:
    # 1 request in 12 is slow: the p90 is inside, but not clearly so for many requests.
    plan = LevelPlan(max_requests_per_worker=8, max_seconds=20)
    level, _ = _level(lambda n: (0.08 if n % 12 == 5 else 0.002, 0.01), 4, SLO(ttft_ms=50), plan)
    # Ended at the ceiling (a request or two finishing at that very moment count too).
    assert 40 == plan.ceiling(4) <= level.requests - level.unfinished < 40 + 4, level
    assert level.meets_slo


def test_a_server_that_never_answers_ends_at_the_time_cap_as_too_slow() -> None:
    plan = LevelPlan(max_seconds=0.5)
    level, elapsed = _level(lambda n: (None, 0.0), 3, SLO(ttft_ms=100), plan)
    assert elapsed < 1.5
    assert level.requests == level.unfinished == level.waiting == 3
    assert not level.meets_slo and level.failed == "ttft"
    assert level.ttft_ms["p90"] >= 400  # how long they had waited: a lower bound


def test_the_warm_up_ends_at_the_first_token_and_gives_up_at_its_bound() -> None:
    FakeConnection.counter = itertools.count()

    async def warm(script: Callable[[int], tuple[float | None, float]], bound: float) -> tuple:
        started = time.perf_counter()
        answered = await warm_up(TARGET, b"{}", bound, lambda t, p: FakeConnection(script))
        return answered, time.perf_counter() - started

    # A first token at 20 ms and then an hour of decoding: warm after 20 ms.
    answered, elapsed = asyncio.run(warm(lambda n: (0.02, 3600.0), 5.0))
    assert answered and elapsed < 1.0
    # Headers and then silence: not answered, and given up at the bound.
    answered, elapsed = asyncio.run(warm(lambda n: (None, 0.0), 0.3))
    assert not answered and 0.3 <= elapsed < 1.0


def test_the_pace_is_settled_as_its_p90_would_be_judged_whatever_the_unknown_do() -> None:
    # First tokens all fast; the replies' pace (1.0 fast, 3.0 slow against 2.0): "inside"
    # and "outside" hold however the unknown turn out, as for the first token.
    rule = {"floor": 1, "most": 10_000, "max_error_rate": 0.5}
    for fast, slow, unknown in itertools.product(range(41), range(10), range(6)):
        total = fast + slow + unknown
        pace = Measure(fast, slow, unknown, certain=slow)
        verdict = settled(Tally(fast=total, finished=fast + slow, pace=pace), **rule)
        if verdict is None:
            continue
        for turned_slow in range(unknown + 1):
            times = [1.0] * (fast + unknown - turned_slow) + [3.0] * (slow + turned_slow)
            assert ((percentile(times, 90) or 0.0) <= 2.0) == verdict, (fast, slow, unknown)


def test_only_whole_replies_are_fast_at_reading_pace() -> None:
    rule = {"floor": 2, "most": 100, "max_error_rate": 0.01}
    first_tokens_only = Tally(fast=30, finished=22, pace=Measure(0, 0, 30))
    assert settled(first_tokens_only, **rule) is None  # 30 first tokens say nothing of pace
    whole = Tally(fast=30, finished=30, pace=Measure(30, 0, 0), pause=Measure(30, 0, 0))
    assert settled(whole, **rule) is True
    # A pace the replies have shown to be too slow settles "outside" before the floor,
    # once every chat has shown it; before that, not.
    slow = Tally(fast=40, pace=Measure(0, 40, 0))
    assert settled(slow, **{**rule, "floor": 80}, chats=40) is None
    assert settled(Tally(fast=40, pace=Measure(0, 40, 0), shown=40), **rule, chats=40) is False
    # Pauses already too long are certain: enough of them settle before anything ends.
    paused = Tally(fast=40, pause=Measure(0, 30, 10, certain=30))
    assert settled(paused, floor=80, most=100, max_error_rate=0.01) is False


class PacedConnection:
    """An in-process chat streaming ``tokens`` content tokens ``itl_s`` apart, its first at
    once; ``freeze_s`` of silence after the first (a fake whose time is real)."""

    def __init__(self, tokens: int, itl_s: float, freeze_s: float = 0.0) -> None:
        self.tokens, self.itl_s, self.freeze_s = tokens, itl_s, freeze_s
        self.current: Exchange | None = None

    async def send(self) -> Exchange:
        ex = self.current = Exchange(stream_requested=True)
        ex.t_begin = ex.t_start = time.perf_counter()
        for i in range(self.tokens):
            await asyncio.sleep(0.002 if i == 0 else self.itl_s + (self.freeze_s if i == 1 else 0))
            ex.times.append(time.perf_counter())
            ex.pieces.append("字")
        ex.streamed, ex.done, ex.finish = True, True, "stop"
        ex.usage = {"completion_tokens": self.tokens}
        ex.t_end = time.perf_counter()
        return ex

    def close(self) -> None:
        pass


READING = SLO(itl_ms=150)


def _paced_level(
    conn: Callable[[], PacedConnection], c: int, plan: LevelPlan, slo: SLO = READING
) -> tuple:
    async def measure() -> tuple:
        started = time.perf_counter()
        level = await run_level(TARGET, b"{}", c, slo, plan, connect=lambda target, payload: conn())
        return level, time.perf_counter() - started

    return asyncio.run(measure())


def test_a_server_decoding_too_slowly_to_read_is_outside_once_every_chat_showed_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A token every 300 ms, 200 tokens a reply (a minute): no reply ends within the level.
    # A reply shows its pace after 0.7 s here (2 s in the product): two gaps of 300 ms.
    for module in (samples, level_run):
        monkeypatch.setattr(module, "PACE_SEEN_S", 0.7)
    plan = LevelPlan(max_seconds=20)
    level, elapsed = _paced_level(lambda: PacedConnection(200, 0.3), 8, plan)
    assert not level.meets_slo and level.failed == "itl"
    assert 250 <= level.itl_ms["p90"] <= 400  # judged on what the replies streamed so far
    assert elapsed < 6, elapsed  # about PACE_SEEN_S, not the 20 s cap


def test_a_reply_frozen_after_its_first_token_is_a_stalled_reply() -> None:
    # A student waits 0.5 s for a reply to go on here (2 s by default): frozen for 8 s.
    plan = LevelPlan(max_seconds=20)
    slo = SLO(itl_ms=150, pause_ms=500)
    level, elapsed = _paced_level(lambda: PacedConnection(20, 0.02, freeze_s=8.0), 4, plan, slo)
    assert not level.meets_slo and level.failed == "errors"
    assert level.stalled == level.errors == 4 and level.paced == 0
    assert elapsed < 6, elapsed  # the pause over 0.5 s is certain: no need to wait out 8 s


def test_a_reply_at_reading_pace_is_within_only_once_whole() -> None:
    # Replies of 0.2 s (5 tokens 50 ms apart), 8 chats: 22 whole replies in 3 rounds.
    plan = LevelPlan(max_seconds=20, max_requests=24)
    level, _ = _paced_level(lambda: PacedConnection(5, 0.05), 8, plan)
    assert level.meets_slo, level
    assert level.paced >= 22 and 40 <= level.itl_ms["p90"] <= 120
    assert level.longest_pause_ms is not None and level.longest_pause_ms < 2000


def test_a_level_with_no_time_between_tokens_measured_is_not_within() -> None:
    # One token per reply (a whole answer in one chunk): fast, but its pace never shows.
    plan = LevelPlan(max_seconds=5, max_requests=24)
    level, _ = _paced_level(lambda: PacedConnection(1, 0.0), 2, plan)
    assert level.paced == 0 and level.itl_ms["p90"] is None
    assert not level.meets_slo and level.failed == "itl"
