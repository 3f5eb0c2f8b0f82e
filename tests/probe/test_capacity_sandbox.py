"""`lmreg-nb sandbox --slots K` gives the demo a known knee that `lmreg-nb capacity` finds.

The sandbox command parses its flags as it always does; what it would serve on its ports
(:func:`lmreg_nb.sandbox.server.sandbox_apps` over those options) is served in this
process instead (tests/fakes/sandbox.py), and `capacity` runs against it through
CliRunner: the flags reach the mock, no process and no port. (Ctrl-C in a real
`capacity` process: tests/commands/test_cli_processes.py.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakes.sandbox import local_sandbox

from lmreg_nb.cli import main
from lmreg_nb.sandbox import server
from lmreg_nb.sandbox.server import SandboxOptions

pytestmark = pytest.mark.timeout(120)


def _options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> SandboxOptions:
    """The options `lmreg-nb sandbox ARGS` would serve (its serving replaced by a recorder)."""
    asked: list[SandboxOptions] = []
    monkeypatch.setattr(server, "serve_sandbox", lambda options, announce: asked.append(options))
    db = str(tmp_path / "sandbox.sqlite3")
    done = CliRunner().invoke(main, ["sandbox", "--db", db, *args])
    assert done.exit_code == 0, done.output
    (options,) = asked
    return options


@pytest.mark.slow  # a real search of about 4 s: CI's lane, not the inner loop
def test_capacity_of_the_sandbox_model_with_a_slot_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Replies of 20 tokens, about 250 ms: a chat past the 3 slots waits for one to end, so
    # 4 and 6 chats read a first-token p90 over 260 ms, well past the 150 ms SLO (30 tokens
    # read 390 ms, and the 27 replies of 3 chats within it took 1.5 s longer).
    knobs = ["--slots", "3", "--slowdown", "0.1", "--ttft-ms", "20", "--itl-ms", "10"]
    options = _options(tmp_path, monkeypatch, *knobs, "--tokens", "20")
    with local_sandbox(options.db, options) as sandbox:
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
