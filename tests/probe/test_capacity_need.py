"""The class's question (`--need N`): N first, then the margin above it or the capacity below.

Also the warm-up inside the budget (a server that sends headers and then
nothing), the progress reported through a callback (stderr, never --json's
stdout), and the verdict's words in both languages.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from click.testing import CliRunner
from fakes.hostile import hostile_server
from fakes.hosts import mock_served

from lmreg_nb import i18n
from lmreg_nb.cli import main
from lmreg_nb.probe.load.capacity import SLO, CapacityResult, LevelPlan, find_capacity, margin_level
from lmreg_nb.probe.load.levels import Level
from lmreg_nb.probe.target import Target
from lmreg_nb.probe.text.capacity_text import verdict
from lmreg_nb.probe.text.plots import capacity_figure
from lmreg_nb.sandbox.school_model import MockModelConfig

pytestmark = pytest.mark.timeout(90)

KEY = "sk-capacity-need-0123456789abcdef"
FAST = LevelPlan(max_requests=8, max_seconds=5)


def _mock(**knobs: object) -> MockModelConfig:
    base: dict = {"api_key": KEY, "ttft_ms": 20.0, "itl_ms": 10.0, "tokens": 30}
    return MockModelConfig(**{**base, **knobs})


@pytest.fixture(scope="module")
def plain() -> Iterator[str]:
    # Replies of 30 ms (5 tokens): a level settles inside after 22 whole replies.
    with mock_served(_mock(ttft_ms=10.0, itl_ms=5.0, tokens=5)) as base:
        yield base + "/v1/chat/completions"


def _env(url: str) -> dict[str, str]:
    return {"LMREG_MODEL_URL": url, "LMREG_MODEL_API_KEY": KEY, "LMREG_MODEL_NAME": "m"}


def test_the_margin_is_half_the_need_above_it_within_the_maximum() -> None:
    assert margin_level(40, 64) == 60
    assert margin_level(40, 50) == 50
    assert margin_level(1, 64) == 2  # at least one more
    assert margin_level(3, 64) == 5
    assert margin_level(8, 8) == 8  # no room: no margin level


def test_a_need_that_is_met_measures_it_then_the_margin_and_stops(plain: str) -> None:
    seen: list[int] = []
    result = find_capacity(
        Target(plain, KEY, "m"), need=4, plan=FAST, on_level=lambda lv: seen.append(lv.concurrency)
    )
    assert seen == [4, 6]
    cap = result.capacity
    assert cap.limited_by == "need-met" and cap.concurrency == 6 and result.meets(4)
    sentence = verdict(result, class_size=4)
    # One number: capacity.concurrency, the largest level measured within the SLO (issue 40).
    assert sentence.startswith("The model serves 6 chats at once within the SLO (first token p90")
    assert "4 chats" not in sentence.split(".")[0] and "still did" not in sentence
    assert "That is enough for a class of 4: 4 students asking at once about a " in sentence
    # The record keeps the JSON of the contract; read back, the verdict is the same.
    again = CapacityResult.from_json(json.loads(json.dumps(result.to_json())))
    assert again.capacity == cap and verdict(again, 4) == sentence


def test_the_cli_need_met_exits_0_with_the_contract_json_and_progress_only_on_stderr(
    plain: str,
) -> None:
    ok = CliRunner().invoke(main, ["capacity", "--json", "--need", "3"], env=_env(plain))
    assert ok.exit_code == 0, ok.output
    out = json.loads(ok.stdout)  # stdout is the one JSON object: no progress in it
    assert set(out) == {"slo", "levels", "capacity", "need", "workload", "client"}
    assert [lv["concurrency"] for lv in out["levels"]] == [3, 5]
    assert out["capacity"]["limited_by"] == "need-met" and out["capacity"]["concurrency"] == 5
    assert ok.stderr == ""  # --json: nothing else either

    text = CliRunner().invoke(main, ["capacity", "--need", "3"], env=_env(plain))
    assert text.exit_code == 0, text.output
    lines = text.stderr.splitlines()
    assert lines[0] == "Warming up: one request before the first level…"
    assert lines[1] == "concurrency 3: 0 requests so far…"
    done = [line for line in lines if "meets the SLO" in line]
    assert [line.split(":")[0] for line in done] == ["concurrency 3", "concurrency 5"]
    assert "requests, meets the SLO (first token p90 " in done[0]
    assert "so far" not in text.stdout
    assert "limited by the class size asked for, which it serves; the search stops" in text.stdout


def test_a_need_not_met_searches_below_it_and_says_what_was_measured(plain: str) -> None:
    # Every request fails: the need, then halving down to 1.
    seen: list[int] = []
    result = find_capacity(
        Target(plain.replace("/v1/", "/quirks/status-500/v1/"), KEY, "m"),
        need=8,
        plan=FAST,
        on_level=lambda lv: seen.append(lv.concurrency),
    )
    assert seen == [8, 4, 2, 1]
    assert result.capacity.concurrency == 0 and result.capacity.limited_by == "errors"
    assert "serves no chat" in verdict(
        result, 8
    ) and "A class of 8 needs more: 8 students asking" in verdict(result, 8)


def test_a_warm_up_that_hangs_ends_within_the_budget_with_a_verdict() -> None:
    with hostile_server() as base:  # headers of an event stream, then nothing
        url = base + "/silent/v1/chat/completions"
        started = time.monotonic()
        # The request timeout is 60 s (its whole reply may take 6 times that): the budget wins.
        result = find_capacity(Target(url, KEY, "m", timeout=60), need=40, budget_s=0.3)
        elapsed = time.monotonic() - started
        assert elapsed < 0.3 + 1.0, elapsed
        assert result.levels == [] and result.capacity.limited_by == "time"
        assert verdict(result, 40).startswith(
            "Nothing was measured: the model did not answer a first request within 0.3 s."
        )
        # With a short request timeout the warm-up gives up at it, well inside the budget.
        started = time.monotonic()
        result = find_capacity(Target(url, KEY, "m", timeout=0.2), budget_s=60)
        assert time.monotonic() - started < 0.2 + 1.0
        assert result.capacity.limited_by == "time" and "within 0.2 s" in verdict(result)


def _level(c: int, p90: float, ok: bool, **kw: object) -> Level:
    return Level(
        c,
        requests=3 * c,
        ttft_ms={"p50": p90 / 2, "p90": p90, "p99": p90},
        requests_per_s=float(c),
        meets_slo=ok,
        failed=None if ok else "ttft",
        **kw,  # type: ignore[arg-type]
    )


def test_the_verdict_says_how_close_the_top_level_came_to_the_slo() -> None:
    near = CapacityResult(SLO(), [_level(40, 1940, True), _level(60, 3100, False)], need=40)
    sentence = verdict(near, 40)
    assert sentence.startswith(
        "The model serves 40 chats at once within the SLO (first token p90 1.94 s of 2 s);"
        " at 60 it did not (first token p90 3.1 s)."
    )
    assert (
        "Little room is left: at 40 chats at once the first token p90 is already 97 %" in sentence
    )
    far = CapacityResult(SLO(), [_level(40, 600, True), _level(60, 900, True)], need=40)
    sentence = verdict(far, 40)
    # The one capacity number, capacity.concurrency (60), never the class asked for (40).
    assert sentence.startswith(
        "The model serves 60 chats at once within the SLO (first token p90 900 ms of 2 s),"
        " the most the search measured: it stops once the class is served."
    )
    assert "Little room" not in sentence and "That is enough for a class of 40." in sentence
    assert far.capacity.concurrency == 60 and far.capacity.limited_by == "need-met"


def test_the_verdict_in_chinese() -> None:
    result = CapacityResult(SLO(), [_level(40, 600, True), _level(60, 1900, True)], need=40)
    i18n.set_language("zh-CN")
    try:
        sentence = verdict(result, 40)
    finally:
        i18n.set_language("en")
    assert "40" in sentence and "60" in sentence and "1.9 秒" in sentence
    assert "SLO" in sentence and "serves" not in sentence


def test_the_chart_shows_only_the_levels_measured_also_when_none_was_served() -> None:
    result = CapacityResult(SLO(), [_level(40, 600, True), _level(60, 900, True)], need=40)
    fig = capacity_figure(result)
    assert [list(ax.get_xticks()) for ax in fig.axes[:3]] == [[40, 60]] * 3
    failed = CapacityResult(SLO(), [Level(1, requests=3, errors=3, failed="errors")])
    capacity_figure(failed).savefig("/dev/null", format="png")  # no "cannot be log-scaled"
