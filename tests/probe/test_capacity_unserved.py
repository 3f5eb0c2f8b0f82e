"""`lmreg-nb capacity` when no level is served (issue 20, item 5).

A wrong port or a model answering 500 leaves every level without a TTFT: the
text output used to die drawing its figure (``ValueError: Data cannot be
log-scaled``). It now prints the result and saves a figure that says so.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from hostile import hostile_server

from lmreg_nb.cli import main
from lmreg_nb.probe.load.capacity import SLO, CapacityResult, find_capacity
from lmreg_nb.probe.target import Target

pytestmark = pytest.mark.timeout(120)


def _closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1/chat/completions"


@pytest.fixture(params=["answers-500", "closed-port"])
def unserved(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "closed-port":
        yield _closed_port_url()
        return
    with hostile_server() as base:
        yield f"{base}/e500all/v1/chat/completions"


def test_capacity_text_output_with_no_level_served(unserved: str, tmp_path: Path) -> None:
    figure = tmp_path / "capacity.png"
    env = {
        "LMREG_MODEL_URL": unserved,
        "LMREG_MODEL_API_KEY": "sk-unserved-0123456789",
        "LMREG_MODEL_NAME": "m",
        "LMREG_TIMEOUT": "2",
    }
    result = CliRunner().invoke(
        main,
        ["capacity", "--max-concurrency", "2", "--level-seconds", "0.1",
         "--figure", str(figure)],
        env=env,
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert figure.stat().st_size > 1000  # a PNG that says nothing was served


def test_capacity_figure_of_levels_without_any_figure_draws(unserved: str) -> None:
    target = Target(unserved, "sk-unserved-0123456789", "m", timeout=2)
    result = find_capacity(target, slo=SLO(ttft_ms=2000), max_concurrency=2)
    assert isinstance(result, CapacityResult) and result.levels
    assert all(lv.ttft_ms.get("p90") is None for lv in result.levels)
    result.figure().savefig(Path("unserved.png"), dpi=50)  # the test's own cwd (a tmp home)
