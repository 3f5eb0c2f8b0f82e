"""Issue 43 item 5: a chart is written only when asked (`--plot FILE`), and the root stays clean.

`lmreg-nb capacity` wrote `lmreg-capacity.png` into the working folder by
default (and `check -n N` `lmreg-check.png`); one such file was committed at the
repository's root. A run against a mock model on loopback shows what lands in
the folder.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakes.hosts import mock_served

from lmreg_nb.cli import main
from lmreg_nb.sandbox.school_model import MockModelConfig

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-plot-on-request-0123456789"
RUNS = {
    "check": ["check", "--requests", "2"],
    "capacity": ["capacity", "--max-concurrency", "1", "--level-seconds", "0.1"],
}
#: What a run, a build or a browser leaves behind; none of it belongs at the root.
GENERATED = (".png", ".jpg", ".jpeg", ".svg", ".gif", ".html", ".sqlite", ".sqlite3", ".db",
             ".log", ".ipynb")  # fmt: skip


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with mock_served(MockModelConfig(api_key=KEY, ttft_ms=5, itl_ms=2, tokens=4)) as base:
        yield f"{base}/v1/chat/completions"


def _run(args: list[str], url: str) -> object:
    env = {"LMREG_MODEL_URL": url, "LMREG_MODEL_API_KEY": KEY, "LMREG_MODEL_NAME": "m",
           "LMREG_TIMEOUT": "5", "LMREG_LANG": "en"}  # fmt: skip
    return CliRunner().invoke(main, args, env=env)


@pytest.mark.parametrize("command", list(RUNS))
def test_no_chart_lands_in_the_folder_unless_asked(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    monkeypatch.chdir(tmp_path)
    result = _run(RUNS[command], url)
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    assert list(tmp_path.iterdir()) == []
    assert "figure:" not in result.stdout  # type: ignore[attr-defined]


@pytest.mark.parametrize("command", list(RUNS))
def test_plot_writes_the_chart_where_asked(url: str, tmp_path: Path, command: str) -> None:
    chart = tmp_path / f"{command}.png"
    result = _run([*RUNS[command], "--plot", str(chart)], url)
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    assert chart.read_bytes()[:4] == b"\x89PNG"
    assert f"figure: {chart}" in result.stdout  # type: ignore[attr-defined]


def test_plot_beside_json_keeps_stdout_one_object(url: str, tmp_path: Path) -> None:
    chart = tmp_path / "capacity.png"
    result = _run([*RUNS["capacity"], "--json", "--plot", str(chart)], url)
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    assert "capacity" in json.loads(result.stdout)  # type: ignore[attr-defined]
    assert chart.read_bytes()[:4] == b"\x89PNG"


def _root_files() -> list[str]:
    """The files at the repository's root: committed ones (git), else those on disk."""
    try:
        listed = subprocess.run(
            ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return [p.name for p in ROOT.iterdir() if p.is_file()]
    return [name for name in listed if "/" not in name]


@pytest.mark.slow  # asks git which files are committed
def test_the_repository_root_holds_no_generated_file() -> None:
    files = _root_files()
    assert "README.md" in files  # the listing sees the root
    generated = [name for name in files if name.lower().endswith(GENERATED)]
    assert generated == [], "generated files at the root: " + ", ".join(generated)
