"""`lmreg-nb` starts light: `check --help` and a `check` run import no runner and no record
module (issue 44); a dead run's folder still brings the runner in to clear it.

Each case imports the package afresh in this process (every ``lmreg_nb`` module is taken
out of ``sys.modules`` and put back afterwards), so what the command imports is seen,
modules imported at the top of another module included.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

#: What a command that makes no run must not load (the notebook runner, the records).
HEAVY = ("lmreg_nb.runner", "lmreg_nb.records")


def _ours(name: str) -> bool:
    return name == "lmreg_nb" or name.startswith("lmreg_nb.")


def _fresh(run: Callable[[Any], Result]) -> tuple[Result, set[str]]:
    """``run(main)`` with the package imported afresh: its result and the modules it loaded."""
    saved = {name: module for name, module in sys.modules.items() if _ours(name)}
    for name in saved:
        del sys.modules[name]
    try:
        from lmreg_nb.cli import main

        result = run(main)
        return result, {name for name in sys.modules if _ours(name)}
    finally:
        for name in [name for name in sys.modules if _ours(name)]:
            del sys.modules[name]
        sys.modules.update(saved)


@pytest.fixture
def no_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty temporary folder of this test's own (where run folders would be)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(tmp))
    monkeypatch.setenv("LMREG_LANG", "en")
    return tmp


def test_check_help_imports_no_runner_and_no_record_module(no_runs: Path) -> None:
    result, loaded = _fresh(lambda main: CliRunner().invoke(main, ["check", "--help"]))
    assert result.exit_code == 0, result.output
    assert "--requests" in result.output
    assert "lmreg_nb.cli" in loaded  # it did import afresh
    assert sorted(n for n in loaded if n.startswith(HEAVY)) == []


def test_a_check_run_imports_no_runner_and_no_record_module(
    no_runs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nothing listens on the discard port: the checks fail at once, no server needed.
    monkeypatch.setenv("LMREG_MODEL_URL", "http://127.0.0.1:9/v1/chat/completions")
    monkeypatch.setenv("LMREG_MODEL_API_KEY", "sk-start-test-0123456789")
    monkeypatch.setenv("LMREG_MODEL_NAME", "m")
    result, loaded = _fresh(lambda main: CliRunner().invoke(main, ["check", "--json"]))
    assert result.exit_code == 1, result.output
    checks = json.loads(result.stdout)["checks"]
    assert any(c["passed"] is False for c in checks)
    assert "lmreg_nb.probe.report" in loaded  # the check did run
    assert sorted(n for n in loaded if n.startswith(HEAVY)) == []


def test_a_dead_runs_folder_is_still_cleared_at_the_start_of_any_command(no_runs: Path) -> None:
    from lmreg_nb.runner.runs import RUN_PREFIX

    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text()) if Path("/proc").is_dir() else 0
    dead = max(pid_max, 4_194_304) + 1  # above the highest pid: no process has it
    folder = no_runs / f"{RUN_PREFIX}planted"
    folder.mkdir(mode=0o700)
    (folder / "owner.json").write_text(json.dumps({"pid": dead, "started": 1.0}))
    (folder / "tokens.json").write_text('{"tokens": [{"token": "TOKEN-live-0123456789"}]}')
    result, loaded = _fresh(lambda main: CliRunner().invoke(main, ["check", "--help"]))
    assert result.exit_code == 0, result.output
    assert not folder.exists(), "the start of a command removes a dead run's folder"
    assert "lmreg_nb.runner.runs" in loaded  # brought in by the folder, to judge it


def test_the_cli_looks_for_the_runners_own_prefix() -> None:
    from lmreg_nb import cli
    from lmreg_nb.runner.runs import RUN_PREFIX

    assert cli._RUN_PREFIX == RUN_PREFIX
