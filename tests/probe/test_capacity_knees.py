"""The capacity search and the load test against a mock in a process of its own.

The process is the point: the mock shares no GIL and no event loop with the load, so a
slot-limited mock has a knee where its slots end, and a decode time of the truth's order
(tests/probe/test_capacity.py, test_capacity_need.py and test_capacity_itl.py hold the
rest, in this process).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Generic, TypeVar

import pytest
from click.testing import CliRunner, Result
from fakes.capacity_mock import ITL, KEY, LEVEL_KEYS, mock

from lmreg_nb.cli import main
from lmreg_nb.probe import Target
from lmreg_nb.probe.load.capacity import SLO, CapacityResult, LevelPlan, find_capacity
from lmreg_nb.probe.load.fixed import run_load
from lmreg_nb.probe.load.level_run import run_level
from lmreg_nb.probe.text.capacity_text import verdict
from lmreg_nb.probe.wire.exchange import chat_body
from lmreg_nb.sandbox.school_model import MockModelConfig, serving_process

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

ITL_KEY = "sk-itl-test-0123456789abcdef"
ITL_TOKENS = 16  # replies of 170 ms: the load test's 96 in 0.5 s, 15 gaps each

#: The slot-limited mock's pace for the knee: a token every 50 ms, 10 of them. One
#: reply alone takes 470 ms, so a chat past the slots waits at least that long for its
#: first token, while below them the first token comes in 20 ms. The SLO (200 ms) lies
#: well between: only a stall of 180 ms on most of a level's first tokens could move the
#: knee. A pace of 10 ms (100 tokens a second per chat) kept the mock and the client so
#: busy that, with both cores shared by other tests, 4 chats of 6 slots missed 150 ms.
KNEE_TTFT, KNEE_ITL, KNEE_TOKENS = 20.0, 50.0, 10
KNEE_PACE = {"ttft_ms": KNEE_TTFT, "itl_ms": KNEE_ITL, "tokens": KNEE_TOKENS}
KNEE_SERVICE_MS = KNEE_TTFT + (KNEE_TOKENS - 1) * KNEE_ITL
KNEE_SLO_MS = 200
#: Searches a knee test makes at most. A busy machine can only make a level miss the SLO
#: (a stall adds time, it never takes any away), so a knee found below the slots is
#: measured again, and one found above them fails at once; a knee always too low still
#: fails. (A clean-clone CI run found 2 for 6 slots once: 3 chats missed 200 ms.)
ATTEMPTS = 3
#: Searches more at most, one for each low knee the client itself said its first tokens may
#: read longer on (its own stalls moved a level across the SLO: the capacity contract's
#: ``client.may_read_longer_ms``). With both cores busy and other workers beside it, the
#: CLI's search once read 6 chats of 6 slots at 346 ms with the client stalled 19 times,
#: three times running. A knee low on a client that was not stalled still counts.
BUSY_ATTEMPTS = 3


#: Levels of at most 4 requests a chat (8 at one chat): a level far from the knee is as
#: clear on 8 first tokens as on 22, and the knee's search takes half the time. One
#: first token of 8 up to 600 ms late still leaves the p90 (interpolated between the 7th
#: and the 8th) under the SLO; two in the same level at one chat make a retry.
KNEE_PLAN = LevelPlan(max_requests=8, max_requests_per_worker=4)
#: The slot counts: the knee's 4 (the library's search), the need's 6 (the CLI). One each:
#: a second count per test doubled the time for the same claim. The knee's search doubles
#: 1, 2, 4, 8 and bisects 6, 5: six levels, about as long as the need's four beside it
#: (8 slots took eight, 16 s: 16, 12, 10 and 9 after 8, the slowest near the knee).
KNEE_SLOTS, NEED_SLOTS = 4, 6


def _url(base: str) -> str:
    return f"{base}/v1/chat/completions"


def _env(url: str) -> dict[str, str]:
    return {"LMREG_MODEL_URL": url, "LMREG_MODEL_API_KEY": KEY, "LMREG_MODEL_NAME": "m"}


T = TypeVar("T")


@dataclass
class Attempt(Generic[T]):
    """One search: what it found, its capacity, how long it took (s), and whether the client
    said its own stalls may have moved a level's first tokens across the SLO."""

    found: T
    capacity: int
    seconds: float
    busy: bool = False


def _attempts(
    search: Callable[[], T],
    capacity: Callable[[T], int],
    busy: Callable[[T], bool],
    slots: int,
) -> list[Attempt[T]]:
    """Up to ATTEMPTS searches on a client that was not stalled (BUSY_ATTEMPTS more at most
    when it was), until one finds a knee at ``slots - 1`` or above (one above 1.5 x
    ``slots`` stops them too: the test fails on it at once) or none (-1)."""
    done: list[Attempt[T]] = []
    for _attempt in range(ATTEMPTS + BUSY_ATTEMPTS):
        started = time.monotonic()
        found = search()
        done.append(Attempt(found, capacity(found), time.monotonic() - started, busy(found)))
        if not 0 <= done[-1].capacity < slots - 1:
            break
        if sum(not attempt.busy for attempt in done) >= ATTEMPTS:
            break
    return done


@dataclass
class Knees:
    """The two tests' searches: the library's knee (seen: the levels in the order measured)
    and the CLI's need above the slots."""

    knee: list[Attempt[tuple[CapacityResult, list[int]]]]
    need: list[Attempt[Result]]


def _knee_search(base: str) -> tuple[CapacityResult, list[int]]:
    seen: list[int] = []
    result = find_capacity(
        Target(_url(base), KEY, "school-llm"),
        slo=SLO(ttft_ms=KNEE_SLO_MS),
        max_concurrency=2 * KNEE_SLOTS,
        on_level=lambda level: seen.append(level.concurrency),
        plan=KNEE_PLAN,
    )
    return result, seen


def _need_search(base: str) -> Result:
    args = ["capacity", "--json", "--slo-ttft-ms", str(KNEE_SLO_MS), "--need", str(2 * NEED_SLOTS)]
    return CliRunner().invoke(main, args, env=_env(_url(base)))


def _need_capacity(result: Result) -> int:
    if result.exit_code != 1:
        return -1  # not the search's exit: the test says why (its output), no retry
    return int(json.loads(result.stdout)["capacity"]["concurrency"])


def _need_busy(result: Result) -> bool:
    if result.exit_code != 1:
        return False
    client = json.loads(result.stdout).get("client") or {}
    return client.get("may_read_longer_ms") is not None


@pytest.fixture(scope="module")
def knees() -> Knees:
    """Both tests' searches at once, each against its own mock process: the library's in a
    thread, the CLI's in this one (CliRunner swaps this process's stdout). They only wait
    (a few % of a core each), so together they take the longer one's time."""
    knee_mock, need_mock = mock(slots=KNEE_SLOTS, **KNEE_PACE), mock(slots=NEED_SLOTS, **KNEE_PACE)
    with (
        serving_process(knee_mock) as knee_base,
        serving_process(need_mock) as need_base,
        ThreadPoolExecutor(1) as pool,
    ):
        knee = pool.submit(
            _attempts,
            lambda: _knee_search(knee_base),
            lambda found: found[0].capacity.concurrency,
            lambda found: found[0].skew.moved,
            KNEE_SLOTS,
        )
        need = _attempts(lambda: _need_search(need_base), _need_capacity, _need_busy, NEED_SLOTS)
        return Knees(knee.result(), need)


def _settled(attempts: list[Attempt[T]], slots: int, what: str) -> T:
    """The last search, once each was within time and none found the knee far above the
    slots; it failed when none found it near them."""
    for attempt in attempts:
        assert attempt.seconds < 60, attempt
        assert attempt.capacity <= 1.5 * slots, attempt
    last = attempts[-1]
    if last.capacity < slots - 1:
        busy = sum(attempt.busy for attempt in attempts)
        pytest.fail(
            f"{what} was below {slots - 1} in {len(attempts)} searches ({busy} on a stalled"
            f" client): {last.found}"
        )
    return last.found


def _doubling_then_bisection(levels: list[tuple[int, bool]]) -> bool:
    """Whether ``levels`` (concurrency, met the SLO; in the order measured) double from 1
    up to the first that missed, then each lies between the highest pass and the lowest
    miss measured before it."""
    seen = [concurrency for concurrency, _ in levels]
    miss = next((i for i, (_, met) in enumerate(levels) if not met), len(levels) - 1)
    if seen[: miss + 1] != [2**i for i in range(miss + 1)]:
        return False
    low, high = (seen[miss - 1], seen[miss]) if miss else (0, seen[0])
    for concurrency, met in levels[miss + 1 :]:
        if not low < concurrency < high:
            return False
        low, high = (concurrency, high) if met else (low, concurrency)
    return True


@pytest.mark.parametrize(
    ("levels", "shaped"),
    [
        ([(1, True), (2, True), (4, True), (8, False), (6, False), (5, False)], True),
        # CI's: a stall made 4 of 4 slots miss, and the knee one below them was right.
        ([(1, True), (2, True), (4, False), (3, True)], True),
        ([(1, True), (2, True), (4, True), (8, False), (3, True)], False),  # not between
        ([(1, True), (3, True), (6, False)], False),  # no doubling
    ],
)
def test_the_search_shape_holds_a_knee_one_below_the_slots(
    levels: list[tuple[int, bool]], shaped: bool
) -> None:
    assert _doubling_then_bisection(levels) is shaped


@pytest.mark.timeout(300)  # up to ATTEMPTS + BUSY_ATTEMPTS searches
def test_the_knee_of_a_slot_limited_mock_lies_near_its_slots(knees: Knees) -> None:
    slots = KNEE_SLOTS
    assert KNEE_SERVICE_MS / 2 > KNEE_SLO_MS  # the SLO is well under one service time
    result, seen = _settled(knees.knee, slots, "the knee")
    cap = result.capacity
    assert cap.limited_by == "ttft"
    # Doubling up to the first miss, then bisection between the last pass and it: past
    # the slots when they all met the SLO, else back from them (a knee one below them).
    assert _doubling_then_bisection([(lv.concurrency, lv.meets_slo) for lv in result.levels])
    assert seen[:3] == [1, 2, 4] and (2 * slots in seen) == (cap.concurrency >= slots)
    assert seen == [lv.concurrency for lv in result.levels]
    assert result.meets(cap.concurrency) and not result.meets(2 * slots)
    out = result.to_json()
    assert set(out) == {"slo", "levels", "capacity", "need", "workload", "client"}
    assert set(out["capacity"]) == {
        "concurrency",
        "requests_per_s",
        "output_tokens_per_s",
        "limited_by",
    }
    assert all(set(level) == LEVEL_KEYS for level in out["levels"])
    assert [lv["concurrency"] for lv in out["levels"]] == sorted(seen)
    sentence = verdict(result, class_size=40)
    above = min(c for c in seen if c > cap.concurrency)
    assert re.search(
        rf"^The model serves {cap.concurrency} chats at once within the SLO \(first token p90"
        rf" [0-9.]+ ms of {KNEE_SLO_MS} ms\); at {above} it did not"
        rf" \(first token p90 [0-9.]+ ms\)\.",
        sentence,
    ), sentence
    assert "A class of 40 needs more: 40 students asking at once about a " in sentence
    again = CapacityResult.from_json(json.loads(json.dumps(out)))
    assert again.capacity == cap and verdict(again, 40) == sentence


@pytest.mark.timeout(300)  # up to ATTEMPTS + BUSY_ATTEMPTS searches (beside the knee's)
def test_a_need_above_the_slots_exits_1_with_the_capacity_near_them(knees: Knees) -> None:
    slots = NEED_SLOTS
    result = knees.need[-1].found
    assert result.exit_code == 1, result.output
    _settled(knees.need, slots, "the capacity")
    out = json.loads(result.stdout)
    assert out["capacity"]["limited_by"] == "ttft" and out["need"] == 2 * slots
    measured = [lv["concurrency"] for lv in out["levels"]]
    assert max(measured) == 2 * slots and 1 not in measured  # no knee search from 1


@pytest.fixture(scope="module")
def mock_process() -> Iterator[str]:
    config = MockModelConfig(api_key=ITL_KEY, ttft_ms=20, itl_ms=ITL, tokens=ITL_TOKENS)
    with serving_process(config) as base:
        yield base + "/v1/chat/completions"


def _of_the_truths_order(itl_p50: float | None) -> bool:
    # A factor of 4 either way holds with both cores busy; the bug read 0.05 ms.
    return itl_p50 is not None and ITL / 4 <= itl_p50 <= ITL * 4


def test_a_level_and_the_load_test_read_the_decode_time(mock_process: str) -> None:
    target = Target(mock_process, ITL_KEY, "m", timeout=30)
    payload = json.dumps(chat_body("m", "hi", stream=True)).encode()

    async def level_itl() -> float | None:
        slo, plan = SLO(ttft_ms=60_000), LevelPlan(min_seconds=1.0)
        level = await run_level(target, payload, 32, slo, plan)
        assert level.errors == 0 and level.requests >= 64
        return level.itl_ms["p50"]

    assert _of_the_truths_order(asyncio.run(level_itl()))
    summary = asyncio.run(run_load(target, 96, 32)).performance()
    assert summary.errors == 0
    assert _of_the_truths_order(summary.itl_ms.p50), summary.itl_ms
