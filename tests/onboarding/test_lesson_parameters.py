"""The onboarding's lesson_tokens and the class_size limit: refused up front, in one line."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from lmreg_nb.cli import main
from lmreg_nb.errors import ValidationError
from lmreg_nb.onboarding import Onboarding
from lmreg_nb.onboarding.endpoint_steps import measure_capacity
from lmreg_nb.probe.target import Target

CARD = ("Lesson School", "Li Hua", "13812345678", "ops@school.edu.cn")
ONBOARD = ["onboard", "-p", "school", "S", "-p", "contact_name", "Li Hua",
           "-p", "contact_mobile", "13812345678", "-p", "contact_email", "a@b.example",
           "-p", "model_name", "m"]  # fmt: skip


def test_a_class_above_the_search_limit_stops_a_headless_run_at_its_parameters() -> None:
    run = Onboarding.begin(*CARD, class_size=2000, lang="en")
    assert run.stopped_by == "parameters"
    reason = run.summary().reason
    assert "class_size" in reason and "1024" in reason
    assert "max_concurrency" not in reason


def test_the_capacity_step_refuses_it_before_any_request() -> None:
    target = Target("http://127.0.0.1:9/v1/chat/completions", "sk-x-0123456789abcdef", "m")
    with pytest.raises(ValidationError) as info:
        measure_capacity(target, 2000, 2000.0, on_progress=lambda _p: None)
    assert info.value.field == "class_size" and "max_concurrency" not in str(info.value)


def test_lesson_tokens_goes_to_the_load_test_and_capacity() -> None:
    run = Onboarding.begin(*CARD, lesson_tokens=900, context_need=4000, lang="en")
    assert run.stopped_by is None
    spec = run.workload()
    assert spec.lesson_tokens == 900 and spec.context_need == 4000 and spec.name == "lesson"


def test_a_context_without_room_for_a_lesson_stops_the_run_at_its_parameters() -> None:
    run = Onboarding.begin(*CARD, context_need=400, lang="en")
    assert run.stopped_by == "parameters" and "context_need" in run.summary().reason
    assert Onboarding.begin(*CARD, context_need=2048, lang="en").stopped_by is None


@pytest.mark.parametrize(
    ("name", "value"), [("class_size", "2000"), ("lesson_tokens", "0"), ("lesson_tokens", "200000")]
)  # fmt: skip
def test_onboard_refuses_them_in_one_line_before_the_run(
    recorded: list[dict[str, Any]], name: str, value: str
) -> None:
    result = CliRunner().invoke(main, [*ONBOARD, "-p", name, value])
    assert result.exit_code == 2 and name in result.stderr, result.output
    assert result.stderr.count("\n") == 1 and not recorded
    assert "max_concurrency" not in result.stderr


def test_the_parameters_are_checked_once_when_the_run_begins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The notebook's parameters are checked by begin(); the checks and capacity take the
    # values it made as checked (issue 44: each input validated once).
    import lmreg_nb.probe.checks.context_window as window
    import lmreg_nb.probe.load.workload as workload

    counted = {"check_context_need": 0, "check_workload": 0}
    for module in (window, workload):
        name = "check_context_need" if module is window else "check_workload"
        original = getattr(module, name)

        def counting(*args: Any, _f: Any = original, _n: str = name) -> Any:
            counted[_n] += 1
            return _f(*args)

        monkeypatch.setattr(module, name, counting)
    run = Onboarding.begin(*CARD, lesson_tokens=900, context_need="4000", lang="en")
    assert run.stopped_by is None
    assert run.workload() is run.workload()  # the load test's and the capacity's: one value
    assert counted == {"check_context_need": 1, "check_workload": 1}
    run.context_need = 5000  # a new value is a new workload, checked as it is made
    assert run.workload().context_need == 5000
    assert counted == {"check_context_need": 2, "check_workload": 2}
