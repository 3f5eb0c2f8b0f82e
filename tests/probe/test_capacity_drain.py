"""A level starts behind no leftovers: every request the last level cut is waited out. In-process.

A server with a prefill queue keeps a request's turn when its client went away. The
search sends one short request until it is answered before the next level; it did so
only when the last level had cut requests it judged, so a level that ended with a
request still waiting for its first token (within the SLO: not judged) left that
request in the queue, and the next level was measured behind it (against the mock at
8,000 prefill tokens a second: 5 chats missed the SLO behind 10 chats' leftovers, 4 met
it, and 5 alone met it with half the first-token time).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from test_capacity_settle import TARGET, _level

from lmreg_nb.probe.load import search as search_module
from lmreg_nb.probe.load.capacity_result import CapacityFindings
from lmreg_nb.probe.load.levels import SLO, Level, LevelPlan
from lmreg_nb.probe.load.search import Search, run_search
from lmreg_nb.probe.load.warmup import drain
from lmreg_nb.probe.load.workload import ClassWorkload, WorkloadSpec
from lmreg_nb.probe.wire.exchange import Exchange


def test_a_request_cut_before_its_first_token_is_in_flight_though_not_judged() -> None:
    # The first request waits 3 s for its first token (the SLO is 5 s); the level's time
    # cap (0.4 s) ends it first: the slow one is cut unjudged.
    def script(n: int) -> tuple[float | None, float]:
        return (3.0, 0.01) if n == 0 else (0.005, 0.01)

    level, elapsed = _level(script, 2, SLO(ttft_ms=5000), LevelPlan(max_seconds=0.4))
    assert elapsed < 3.0
    # The slow request was still running at the end (the fast chat's too, maybe): it is
    # judged on nothing, yet the server may still work on it.
    assert level.in_flight > level.unfinished and level.in_flight >= 1


def test_a_request_waiting_for_its_first_token_is_awaited_before_a_level_is_inside() -> None:
    # A request waiting 0.9 s for its first token, but the other chat's fast replies
    # would settle the level inside long before it ends (22 of 15 ms: about 0.4 s; not
    # faster, or its 40 reach the ceiling between two looks): the level holds for it,
    # and its 0.9 s count in the p99.
    def script(n: int) -> tuple[float | None, float]:
        return (0.9, 0.01) if n == 0 else (0.005, 0.01)

    level, elapsed = _level(script, 2, SLO(ttft_ms=5000), LevelPlan(max_seconds=20))
    assert level.meets_slo and elapsed >= 0.9
    # (Cut unjudged, the p99 was the fast chat's 5 ms. A reply whose first token has
    # just come may still be cut and judged on it, as before: no count of cut requests.)
    assert level.ttft_ms["p99"] is not None and level.ttft_ms["p99"] > 500


def _levels(in_flight: dict[int, int], failing: set[int]) -> Any:
    async def run_level(target: Any, payload: bytes, c: int, slo: SLO, plan: LevelPlan,
                        **_kw: Any) -> Level:  # fmt: skip
        return Level(c, requests=2 * c, meets_slo=c not in failing, in_flight=in_flight.get(c, 0))

    return run_level


def test_the_search_waits_out_every_request_the_last_level_left_running(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    order: list[str] = []

    async def prepare(target: Any, spec: WorkloadSpec, bound: float) -> ClassWorkload:
        return ClassWorkload(spec, "m")

    async def warm_up(*_args: Any, **_kw: Any) -> bool:
        return True

    async def drain(*_args: Any, **_kw: Any) -> bool:
        order.append("drain")
        return True

    run_level = _levels({2: 1, 4: 3}, failing={4})

    async def measured(*args: Any, **kw: Any) -> Level:
        order.append(str(args[2]))
        return await run_level(*args, **kw)

    for name, fake in (("prepare_workload", prepare), ("warm_up", warm_up), ("drain", drain),
                       ("run_level", measured)):  # fmt: skip
        monkeypatch.setattr(search_module, name, fake)
    result = CapacityFindings(SLO(), max_concurrency=4)
    search = Search(result, None)
    asyncio.run(run_search(search, TARGET, LevelPlan(), 60.0, WorkloadSpec("short")))
    # Level 2 left one request running (not judged): the drain comes before level 4,
    # and after level 4's three; none after level 1, which left nothing.
    assert order == ["1", "2", "drain", "4", "drain", "3"]
    assert [lv.concurrency for lv in result.levels] == [1, 2, 4, 3]


class _Answering:
    """A connection whose every request ends at once with HTTP ``status`` and no token."""

    sent = 0

    def __init__(self, status: int) -> None:
        self.status = status
        self.current: Exchange | None = None

    async def send(self) -> Exchange:
        _Answering.sent += 1
        ex = self.current = Exchange(stream_requested=True)
        ex.t_begin = ex.t_start = ex.t_end = time.perf_counter()
        ex.status, ex.failure = self.status, "http"
        return ex

    def close(self) -> None:
        pass


@pytest.mark.parametrize(
    ("status", "waits"), [(500, False), (404, False), (503, True), (429, True)]
)
def test_the_drain_ends_at_an_answer_unless_the_server_says_it_is_busy(
    status: int, waits: bool
) -> None:
    # A server that fails every request answers at once: there is no queue to wait out (the
    # search against a model that answers 500 sent requests for its whole budget). One that
    # says it is busy (503, 429) is asked again until it answers or the bound is reached.
    # The bound is waited out where the server says it is busy: 0.3 s there is enough for
    # a dozen asks (20 ms apart). Where it must not be, 1 s stands clear of any stall.
    bound = 0.3 if waits else 1.0
    _Answering.sent = 0
    started = time.perf_counter()
    drained = asyncio.run(drain(TARGET, b"{}", bound, connect=lambda t, p: _Answering(status)))
    elapsed = time.perf_counter() - started
    if waits:
        assert not drained and elapsed >= bound and _Answering.sent > 1
    else:
        assert drained and _Answering.sent == 1 and elapsed < bound  # before the bound
