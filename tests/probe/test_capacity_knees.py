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
from collections.abc import Iterator

import pytest
from click.testing import CliRunner
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
ITL_TOKENS = 32

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


def _url(base: str) -> str:
    return f"{base}/v1/chat/completions"


def _env(url: str) -> dict[str, str]:
    return {"LMREG_MODEL_URL": url, "LMREG_MODEL_API_KEY": KEY, "LMREG_MODEL_NAME": "m"}


# One slot count each (the knee's 8, the need's 6): a second count per test doubled the
# time for the same claim.
@pytest.mark.timeout(240)  # up to ATTEMPTS searches
@pytest.mark.parametrize("slots", [8])
def test_the_knee_of_a_slot_limited_mock_lies_near_its_slots(slots: int) -> None:
    assert KNEE_SERVICE_MS / 2 > KNEE_SLO_MS  # the SLO is well under one service time
    seen: list[int] = []
    with serving_process(mock(slots=slots, **KNEE_PACE)) as base:
        for _attempt in range(ATTEMPTS):
            seen.clear()
            started = time.monotonic()
            result = find_capacity(
                Target(_url(base), KEY, "school-llm"),
                slo=SLO(ttft_ms=KNEE_SLO_MS),
                max_concurrency=2 * slots,
                on_level=lambda level: seen.append(level.concurrency),
            )
            assert time.monotonic() - started < 60
            assert result.capacity.concurrency <= 1.5 * slots, result.to_json()
            if result.capacity.concurrency >= slots - 1:
                break
        else:
            pytest.fail(
                f"the knee was below {slots - 1} in {ATTEMPTS} searches: {result.to_json()}"
            )
    cap = result.capacity
    assert cap.limited_by == "ttft"
    # Doubling up to the first miss, then bisection between the last pass and it.
    assert seen[:3] == [1, 2, 4] and 8 in seen
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


@pytest.mark.timeout(240)  # up to ATTEMPTS searches
@pytest.mark.parametrize("slots", [6])
def test_a_need_above_the_slots_exits_1_with_the_capacity_near_them(slots: int) -> None:
    args = ["capacity", "--json", "--slo-ttft-ms", str(KNEE_SLO_MS), "--need", str(2 * slots)]
    with serving_process(mock(slots=slots, **KNEE_PACE)) as base:
        for _attempt in range(ATTEMPTS):
            started = time.monotonic()
            result = CliRunner().invoke(main, args, env=_env(base + "/v1/chat/completions"))
            assert time.monotonic() - started < 60
            assert result.exit_code == 1, result.output
            out = json.loads(result.stdout)
            assert out["capacity"]["concurrency"] <= 1.5 * slots, out
            if out["capacity"]["concurrency"] >= slots - 1:
                break
        else:
            pytest.fail(f"the capacity was below {slots - 1} in {ATTEMPTS} searches: {out}")
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
