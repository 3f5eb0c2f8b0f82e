"""The client checks itself: a CPU hog beside a load test shows in the stall figures.

The hog runs inside the client's own event loop: a callback that keeps the CPU busy
for ``HOG_MS`` every ``EVERY_S``, as a model server on the same cores, the garbage
collector or a busy laptop hold the loop (vLLM held both cores of this machine and
stalled the toolkit 0.3 to 1.2 s at a time). Inside the loop, because a hog in
another process stalls it only when both cores are taken, which this suite cannot
count on and must not cause: the other workers' timing tests would starve. This hog
uses one core, about a third of it, for the few seconds of each run, and only while
this file runs (its own file: ``--dist loadfile`` puts it on one worker; its own
xdist group under ``--dist loadgroup``). The mock model runs in its own process:
the stalls are the client's alone, the server's times stay true.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from lmreg_nb.probe import Target
from lmreg_nb.probe.load.capacity import SLO, LevelPlan, find_capacity_async
from lmreg_nb.probe.load.fixed import LoadResult, run_load
from lmreg_nb.probe.load.workload import WorkloadSpec
from lmreg_nb.probe.report import _load_row
from lmreg_nb.probe.text.capacity_text import verdict
from lmreg_nb.probe.text.load_text import busy_sentence
from lmreg_nb.sandbox.school_model import MockModelConfig, serving_process

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180), pytest.mark.xdist_group("stalls")]

KEY = "sk-client-stalls-0123456789"
HOG_MS = 300.0
EVERY_S = 0.6
TTFT_MS = 150.0


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    # Most of a request's time is its wait for the first token: a stall mostly falls there.
    config = MockModelConfig(api_key=KEY, ttft_ms=TTFT_MS, itl_ms=5, tokens=4)
    with serving_process(config) as base:
        yield base + "/v1/chat/completions"


@asynccontextmanager
async def hog() -> Any:
    """Hold the running loop busy HOG_MS every EVERY_S (a CPU hog beside the client)."""
    loop = asyncio.get_running_loop()
    handle: list[asyncio.TimerHandle] = []

    def busy() -> None:
        end = time.perf_counter() + HOG_MS / 1000
        while time.perf_counter() < end:
            pass
        handle[:] = [loop.call_later(EVERY_S, busy)]

    handle.append(loop.call_later(EVERY_S / 2, busy))
    try:
        yield
    finally:
        handle[0].cancel()


def _load(url: str, hogged: bool, requests: int = 40) -> LoadResult:
    async def run() -> LoadResult:
        target = Target(url, KEY, "m", timeout=30)
        if not hogged:
            return await run_load(target, requests, 4, max_duration=60)
        async with hog():
            return await run_load(target, requests, 4, max_duration=60)

    return asyncio.run(run())


def test_a_cpu_hog_beside_the_load_test_shows_in_its_stalls_and_marked_samples(url: str) -> None:
    # The quiet run is the reference of the stalled share (a share of its time): 20
    # requests (0.8 s) read it as well as 40.
    quiet, hogged = _load(url, False, 20), _load(url, True)
    assert hogged.client is not None and quiet.client is not None
    lag = hogged.client
    assert lag.stalls >= 3 and lag.worst_stall_ms >= 0.8 * HOG_MS, lag
    assert lag.stalled_share > quiet.client.stalled_share
    assert hogged.performance().to_json()["client"] == lag.to_json()
    marked = [r for r in hogged.rows if r.client_stalled]
    assert marked and len(marked) < len(hogged.rows)  # some requests, not all
    assert max(r.client_stall_ms for r in hogged.rows) >= 0.5 * HOG_MS
    # The stalls lie inside the first-token times they marked: those read long.
    assert all(r.ttft_ms >= r.client_stall_ms for r in hogged.rows)
    late = [r.ttft_ms for r in hogged.rows if r.client_stall_ms >= 0.5 * HOG_MS]
    clean = [r.ttft_ms for r in hogged.rows if not r.client_stalled]
    assert late and clean
    # (A stall adds only what is left of it once the token came: the mark is an upper bound.)
    assert statistics.median(late) >= statistics.median(clean) + 10, (late, clean)
    skew = hogged.skew
    assert skew.moved and skew.marked >= 1
    # Said once for the whole check by its report (client_sentence), not in the row.
    assert "busy machine" not in _load_row(hogged, 40, 60).detail
    assert busy_sentence(skew) == (
        "Measured from a busy machine: first-token times may read up to "
        f"{skew.worst_ms / 1000:.1f} s longer than the server's."
    )


def test_a_cpu_hog_beside_a_capacity_search_is_measured_and_said(url: str) -> None:
    async def search() -> Any:
        target = Target(url, KEY, "m", timeout=30)
        async with hog():
            return await find_capacity_async(
                target,
                slo=SLO(ttft_ms=250),  # met by the server (150 ms), not with the hog's 300 ms
                max_concurrency=2,
                need=2,
                plan=LevelPlan(max_requests=24, max_seconds=6),
                workload=WorkloadSpec(name="short", max_tokens=16),
            )

    result = asyncio.run(search())
    found = result.to_json()
    assert found["client"]["stalls"] >= 3 and found["client"]["worst_stall_ms"] >= 100
    marked = sum(level.skew.marked for level in result.levels if level.skew)
    assert marked >= 1
    level = result.levels[0]
    if not level.meets_slo:  # the stalls pushed its p90 past 250 ms: the report says so
        assert level.failed == "ttft" and result.skew.moved
        assert "Measured from a busy machine" in verdict(result, 2)
