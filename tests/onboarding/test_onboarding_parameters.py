"""The onboarding's class_size (40 by default, 0 blocks go-live) and context_need parameters.

At the parameter level: the stored notebooks' defaults, what ``Onboarding.begin``
makes of them, what ``lmreg-nb onboard`` hands the run, and what the checks
step passes to the probe. One run against the sandbox shows the record's
blocker when the capacity test is skipped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner

from lmreg_nb import i18n
from lmreg_nb.cli import main
from lmreg_nb.errors import LmregError
from lmreg_nb.onboarding import Onboarding
from lmreg_nb.settings import Settings

if TYPE_CHECKING:
    from lmreg_nb.sandbox.process import SandboxInfo

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
CARD = ("Parameter School", "Li Hua", "13812345678", "ops@school.edu.cn")


def _parameters(path: Path) -> dict[str, Any]:
    """The values the notebook's ``parameters`` cell sets (run as papermill would, unchanged)."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    cell = next(c for c in cells if "parameters" in c.get("metadata", {}).get("tags", []))
    found: dict[str, Any] = {}
    exec("".join(cell["source"]), {}, found)
    return found


@pytest.mark.parametrize("folder", [NOTEBOOKS, NOTEBOOKS / "zh-CN"], ids=["en", "zh-CN"])
def test_the_onboarding_measures_capacity_for_40_unless_told_otherwise(folder: Path) -> None:
    found = _parameters(folder / "onboarding.ipynb")
    assert found["class_size"] == 40 and found["context_need"] == 8000
    run = Onboarding.begin(
        *CARD, class_size=found["class_size"], context_need=found["context_need"], lang="en"
    )
    assert run.stopped_by is None and run.class_size == 40 and run.context_need == 8000
    # The capacity step is expected: until it ran, the record says it is not done.
    blockers = run.summary().go_live.blockers
    assert any("capacity" in b and "not done" in b for b in blockers), blockers


@pytest.mark.parametrize(
    ("lang", "words"), [("en", "No capacity measured"), ("zh-CN", "没有测量容量")]
)
def test_class_size_0_names_the_missing_capacity_as_a_blocker(lang: str, words: str) -> None:
    run = Onboarding.begin(*CARD, class_size=0, lang=lang)
    try:
        assert "skipped" in run.capacity().title or "跳过" in run.capacity().title
        blockers = run.summary().go_live.blockers
        assert any(words in b for b in blockers), blockers
    finally:
        i18n.set_language("en")


@pytest.mark.parametrize("bad", [0, -1, 1_000_000, "lots"])
def test_a_bad_context_need_stops_a_headless_run_and_is_the_reason(bad: object) -> None:
    run = Onboarding.begin(*CARD, context_need=bad)  # type: ignore[arg-type]
    assert run.stopped_by == "parameters" and "skipped" in run.connect().title
    assert "context_need" in run.summary().reason and "131072" in run.summary().reason


def test_the_checks_step_passes_context_need_to_the_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    import lmreg_nb.probe

    seen: dict[str, Any] = {}

    def record(*args: Any, **kwargs: Any) -> Any:
        seen.update(kwargs)
        raise LmregError("recorded")

    monkeypatch.setattr(lmreg_nb.probe, "check_endpoint", record)
    monkeypatch.setenv("LMREG_MODEL_API_KEY", "sk-param-0123456789")
    monkeypatch.setenv("LMREG_MODEL_NAME", "m")
    run = Onboarding.begin(*CARD, context_need=3000)
    run.check_endpoint(model_url="https://llm.example/v1/chat/completions")
    assert seen["context_need"] == 3000


ONBOARD = ["onboard", "-p", "school", "S", "-p", "contact_name", "Li Hua",
           "-p", "contact_mobile", "13812345678", "-p", "contact_email", "a@b.example",
           "-p", "model_name", "m"]  # fmt: skip


def test_onboard_leaves_class_size_to_the_notebook_and_takes_context_need(
    recorded: list[dict[str, Any]],
) -> None:
    result = CliRunner().invoke(main, ONBOARD)
    assert result.exit_code == 0, result.output
    assert "class_size" not in recorded[0]["parameters"]  # the notebook's 40 applies
    result = CliRunner().invoke(main, [*ONBOARD, "-p", "context_need", "16000"])
    assert result.exit_code == 0 and recorded[1]["parameters"]["context_need"] == 16000


@pytest.mark.parametrize("bad", ["0", "1000000", "lots"])
def test_onboard_refuses_a_bad_context_need_in_one_line(
    recorded: list[dict[str, Any]], bad: str
) -> None:
    result = CliRunner().invoke(main, [*ONBOARD, "-p", "context_need", bad])
    assert result.exit_code == 2 and "context_need" in result.stderr
    assert result.stderr.count("\n") == 1 and not recorded


def test_a_run_without_capacity_records_the_blocker(sandbox: SandboxInfo) -> None:
    app = sandbox.add_app("No Capacity School")
    env = {**sandbox.env(), "LMREG_APP_ID": app["app_id"], "LMREG_APP_SECRET": app["app_secret"]}
    run = Onboarding.begin(
        "No Capacity School", *CARD[1:], class_size=0, settings=Settings.load(environ=env)
    )
    run.connect()
    run.register("no-capacity-model")
    run.list_models()
    run.check_endpoint()
    summary = run.summary()
    assert summary.status == "ok", summary.reason  # every step that was asked for ran
    assert summary.capacity is None and not summary.go_live.ready
    assert any("No capacity measured" in b for b in summary.go_live.blockers)
    names = {c.name for c in summary.checks}
    assert {"system-role", "context-window", "streams-not-cut", "reasoning-separated"} <= names
    assert summary.performance is not None and summary.performance.first_answer_ms is not None
