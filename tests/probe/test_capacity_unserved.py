"""`lmreg-nb capacity` when no level is served (issue 20, item 5; issue 40, item 7).

A model answering 500 leaves every level without a TTFT: the text output used to
die drawing its figure (``ValueError: Data cannot be log-scaled``). It now prints
the result and saves a figure that says so. A model that is not running once got
593 requests over 6 levels, a table, a chart and a raw English error inside a
Chinese sentence: the search now stops where every request is refused alike, and
says so in the checks' own sentence.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakes.hostile import hostile_server

from lmreg_nb.cli import main
from lmreg_nb.probe.load.capacity import SLO, CapacityResult, find_capacity
from lmreg_nb.probe.target import Target
from lmreg_nb.probe.text.capacity_text import verdict
from lmreg_nb.probe.text.plots import capacity_figure

pytestmark = pytest.mark.timeout(120)


def _closed_port_url() -> str:
    # Port 9 (discard): nothing listens there, the connection is refused at once.
    return "http://127.0.0.1:9/v1/chat/completions"


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
    if "/e500all/" not in unserved:  # the closed port
        assert not figure.exists()  # nothing was measured: no chart of nothing
        return
    assert figure.stat().st_size > 1000  # a PNG that says nothing was served


def test_capacity_figure_of_levels_without_any_figure_draws() -> None:
    with hostile_server() as base:
        target = Target(f"{base}/e500all/v1/chat/completions", "sk-unserved-0123456789", "m")
        result = find_capacity(target, slo=SLO(ttft_ms=2000), max_concurrency=2)
    assert isinstance(result, CapacityResult) and result.levels
    assert all(lv.ttft_ms.get("p90") is None for lv in result.levels)
    capacity_figure(result).savefig(Path("unserved.png"), dpi=50)  # the test's own cwd (a tmp home)


@pytest.mark.parametrize("lang", ["zh-CN", "en"])
def test_a_model_not_running_is_said_in_one_line_after_two_requests(lang: str) -> None:
    env = {
        "LMREG_MODEL_URL": _closed_port_url(),
        "LMREG_MODEL_API_KEY": "sk-unserved-0123456789",
        "LMREG_MODEL_NAME": "m",
        "LMREG_LANG": lang,
    }
    result = CliRunner().invoke(main, ["capacity", "--need", "40"], env=env)
    assert result.exit_code == 1
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout  # no table, no chart: the one sentence
    if lang == "en":
        assert lines[0].startswith("verdict: The model cannot be reached: nothing listens on")
    else:
        assert "没有服务在监听" in lines[0] and "Connect call failed" not in lines[0]
        assert "The model" not in lines[0]


def test_the_search_stops_at_the_first_level_where_every_request_is_refused() -> None:
    from lmreg_nb.probe.load.workload import WorkloadSpec

    target = Target(_closed_port_url(), "sk-unserved-0123456789", "m", timeout=2)
    lesson = find_capacity(target, need=40)  # its two calibration requests were refused
    assert lesson.levels == [] and lesson.stopped == "unreachable"
    assert lesson.capacity.limited_by == "unreachable"
    short = find_capacity(target, need=40, workload=WorkloadSpec(name="short"))
    assert [lv.concurrency for lv in short.levels] == [40]  # not 6 levels: 1
    assert short.capacity.limited_by == "unreachable"
    assert verdict(short, 40).startswith("The model cannot be reached: nothing listens on")
