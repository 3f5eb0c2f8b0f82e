"""Issue 43 item 5: a chart is written only when asked (`--plot FILE`).

`lmreg-nb capacity` wrote `lmreg-capacity.png` into the working folder by
default (and `check -n N` `lmreg-check.png`); one such file was committed at the
repository's root (tests/test_lint.py keeps the root clean). A run against the mock
model, served in this process, shows what lands in the folder.
"""

from __future__ import annotations

import json
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
