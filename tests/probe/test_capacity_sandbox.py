"""`lmreg-nb sandbox --slots K` gives the demo a known knee that `lmreg-nb capacity` finds."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from lmreg_nb.cli import main
from lmreg_nb.sandbox.process import running_sandbox

pytestmark = pytest.mark.timeout(120)


@pytest.mark.slow  # a real search or process: CI's lane, not the inner loop
def test_capacity_of_the_sandbox_model_with_a_slot_limit() -> None:
    knobs = ["--slots", "3", "--slowdown", "0.1", "--ttft-ms", "20", "--itl-ms", "10"]
    with running_sandbox(args=[*knobs, "--tokens", "30"]) as sandbox:
        env = {
            "LMREG_MODEL_URL": sandbox.model_url,
            "LMREG_MODEL_API_KEY": sandbox.model_api_key,
            "LMREG_MODEL_NAME": "school-llm",
        }
        result = CliRunner().invoke(
            main,
            ["capacity", "--json", "--slo-ttft-ms", "150", "--max-concurrency", "8",
             "--need", "6", "--level-seconds", "0.5"],
            env=env,
        )  # fmt: skip
    assert result.exit_code == 1, result.output  # 3 slots: a need of 6 is not met
    out = json.loads(result.stdout)
    assert 2 <= out["capacity"]["concurrency"] <= 4 and out["capacity"]["limited_by"] == "ttft"
    assert out["need"] == 6
    levels = {lv["concurrency"]: lv for lv in out["levels"]}
    measured = [lv["concurrency"] for lv in out["levels"]]
    assert not levels[6]["meets_slo"]
    best = max(c for c in measured if levels[c]["meets_slo"])
    assert best == out["capacity"]["concurrency"]
    if not levels[3]["meets_slo"]:
        # Both cores busy: 3 chats missed the 150 ms first token, so the search went on
        # down (1, 2); still only the bisection's levels, nothing above the need.
        assert set(measured) <= {1, 2, 3, 6}, measured
        return
    # The need first, then the bisection below it: 6, 3, 4; nothing else is measured.
    assert measured == [3, 4, 6]
    # The slowdown: with 3 streams decoding at once each gap is 10 ms * (1 + 0.1 * 2).
    assert levels[3]["itl_ms"]["p50"] == pytest.approx(12, abs=2)
    assert levels[4]["itl_ms"]["p50"] == pytest.approx(12, abs=2)  # 4 chats, 3 slots


@pytest.mark.slow  # a signal to a real process is the point
def test_ctrl_c_in_the_cli_prints_what_was_measured_so_far(tmp_path) -> None:
    import os
    import signal
    import subprocess
    import sys

    from lmreg_nb.sandbox.school_model import MockModelConfig, serving

    key = "sk-ctrl-c-0123456789abcdef"
    config = MockModelConfig(api_key=key, ttft_ms=10, itl_ms=5, tokens=20)
    with serving(config) as base:  # on a port: the CLI runs in a process of its own
        env = {
            **os.environ,
            "LMREG_MODEL_URL": base + "/v1/chat/completions",
            "LMREG_MODEL_API_KEY": key,
            "LMREG_MODEL_NAME": "m",
            "LMREG_LANG": "en",
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "lmreg_nb", "capacity", "--level-seconds", "1",
             "--figure", str(tmp_path / "cap.png")],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert proc.stderr is not None
        warming = proc.stderr.readline()  # the warm-up, then the first level's progress
        first = proc.stderr.readline()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert warming.startswith("Warming up")
    assert first.startswith("concurrency 1: ")
    assert proc.returncode == 1
    assert "chats at once  requests  errors" in out, out
    assert "The search was interrupted: this is what was measured so far." in out
    assert "Traceback" not in err
