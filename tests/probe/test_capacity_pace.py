"""Whole replies at reading pace: a class is served only on measured time between tokens.

Four servers whose first token comes at once (20 ms) but whose replies do not come at
reading pace (tests/fakes/pace_peers.py): one decoding a token every 300 ms, one sending a
token and then only ``: ping`` comments, one sending 5 tokens 1.5 s apart and claiming
100,000 in usage, one freezing 8 s after its first token. Each once got "serves 60" for
a class of 40; none serves a group (of ``NEED``: each answers every chat alike, in a
thread of its own, so 3 at once show what 40 do), each for its own reason, and each
level ends as soon as that is certain, not at its time cap. The four run at once, in
one loop, and the CLI's runs beside them.
"""

from __future__ import annotations

import asyncio
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
from click.testing import CliRunner, Result
from fakes.pace_peers import LIMITED_BY, PEERS, pace_server, url

from lmreg_nb.cli import main
from lmreg_nb.probe import Target
from lmreg_nb.probe.load.capacity import CapacityResult, find_capacity_async
from lmreg_nb.probe.text.capacity_text import verdict

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

KEY = "sk-pace-test-0123456789abcdef"
#: The group searched for. Every level of these servers takes about 2 s (until each chat
#: has shown its pace, PACE_SEEN_S), and a need that is not met is bisected down to 1:
#: 3 measures two levels (3, 1), a class of 40 six (40, 20, 10, 5, 2, 1) for the same
#: verdicts, 14 s instead of 4.5 s.
NEED = 3


@dataclass(frozen=True)
class Runs:
    """What the module measured: the four searches and, beside them, the CLI's two runs."""

    searched: dict[str, tuple[CapacityResult, float]]
    held: Result  # the CLI with the class's SLO
    free: Result  # the CLI with --slo-itl-ms 0 --slo-pause-ms 0


def _cli(base: str) -> tuple[Result, Result]:
    env = {"LMREG_MODEL_API_KEY": KEY, "LMREG_MODEL_NAME": "m", "LMREG_LANG": "en"}
    env["LMREG_MODEL_URL"] = url(base, "slow-decode")
    # Replies of 2 tokens, 300 ms apart: the pace is measured on each (one gap), and 22
    # whole replies at 2 chats take 3.5 s, not the 15 s cap of replies 6 s long.
    args = ["capacity", "--json", "--need", "2", "--max-concurrency", "2", "--workload", "short",
            "--max-tokens", "2"]  # fmt: skip
    held = CliRunner().invoke(main, args, env=env)
    # Without a pace limit at all the slow server's first tokens serve the class.
    free = CliRunner().invoke(main, [*args, "--slo-itl-ms", "0", "--slo-pause-ms", "0"], env=env)
    return held, free


@pytest.fixture(scope="module")
def runs() -> Runs:
    """The group's search (``NEED``) against each of the four, all at once in one loop (a
    thread of its own), and meanwhile the CLI's runs in this thread: all of them only wait
    (each level about 2 s, until every chat has shown its pace), so together they take
    the searches' time."""

    async def one(base: str, peer: str) -> tuple[CapacityResult, float]:
        started = time.perf_counter()
        found = await find_capacity_async(Target(url(base, peer), KEY, "m", timeout=10), need=NEED)
        return found, time.perf_counter() - started

    async def all_four(base: str) -> list[tuple[CapacityResult, float]]:
        return await asyncio.gather(*(one(base, peer) for peer in PEERS))

    with pace_server() as base, ThreadPoolExecutor(1) as pool:
        searching = pool.submit(asyncio.run, all_four(base))
        held, free = _cli(base)
        searched = dict(zip(PEERS, searching.result(), strict=True))
    return Runs(searched, held, free)


@pytest.fixture(scope="module")
def searched(runs: Runs) -> dict[str, tuple[CapacityResult, float]]:
    """The four searches by peer: (result, seconds)."""
    return runs.searched


@pytest.mark.parametrize("peer", PEERS)
def test_a_server_too_slow_to_read_serves_no_class_and_says_why(
    searched: dict[str, tuple[CapacityResult, float]], peer: str
) -> None:
    result, _seconds = searched[peer]
    found = result.to_json()
    assert found["need"] == NEED and found["capacity"]["concurrency"] < NEED
    assert [lv.concurrency for lv in result.levels] == [NEED, 1]  # the need, then down
    assert found["capacity"]["limited_by"] == LIMITED_BY[peer]
    assert found["slo"] == {
        "ttft_ms": 2000.0,
        "itl_ms": 150.0,
        "pause_ms": 2000.0,
        "max_error_rate": 0.01,
    }
    assert found["levels"] and not any(lv["meets_slo"] for lv in found["levels"])
    for level in result.levels:
        # Settled once certain, a few seconds in; not at the 15 s time cap.
        assert level.duration_s < 10, (peer, level.concurrency, level.duration_s)
        # Every first token came at once (a level of stalled replies has none that counts).
        assert level.ttft_ms["p90"] is None or level.ttft_ms["p90"] < 2000
        assert "longest_pause_ms" in level.to_json()


def test_the_pace_is_measured_on_content_as_it_arrives(
    searched: dict[str, tuple[CapacityResult, float]],
) -> None:
    slow, _ = searched["slow-decode"]
    lying, _ = searched["usage-lie"]
    for level in slow.levels:  # judged on the replies still streaming: 300 ms a token
        assert 250 <= level.itl_ms["p90"] <= 1000 and level.failed == "itl"
        assert level.longest_pause_ms is not None and level.longest_pause_ms < 2000
    for level in lying.levels:  # 1.5 s a token, judged before any reply ended
        assert level.itl_ms["p90"] >= 1000 and level.failed == "itl"


@pytest.mark.parametrize("peer", ["ping-stall", "freeze"])
def test_a_reply_with_no_second_token_is_a_stalled_reply(
    searched: dict[str, tuple[CapacityResult, float]], peer: str
) -> None:
    result, _ = searched[peer]
    for level in result.levels:
        assert level.stalled == level.errors > 0, level.errors_by_kind
        assert level.first_error.startswith("stalled: no second token ")
        assert level.paced == 0 and level.itl_ms["p90"] is None  # no pace measured
    assert "stalled after the first token" in verdict(result, NEED) or "failed" in verdict(
        result, NEED
    )


def test_the_four_searches_end_long_before_their_budget(
    searched: dict[str, tuple[CapacityResult, float]],
) -> None:
    for peer, (result, seconds) in searched.items():
        assert result.stopped is None, peer  # not the time limit: every level settled
        assert seconds < 90, (peer, seconds)


def test_the_cli_holds_the_class_to_pauses_and_drops_them_with_0(runs: Runs) -> None:
    held, free = runs.held, runs.free
    assert held.exit_code == 1, held.output
    out = json.loads(held.stdout)
    assert out["slo"]["pause_ms"] == 2000.0 and out["capacity"]["limited_by"] == "itl"
    assert free.exit_code == 0, free.output
    assert json.loads(free.stdout)["slo"]["pause_ms"] is None
