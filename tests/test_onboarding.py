"""The onboarding flow without Jupyter: contact card, summary record, steps on a real sandbox."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest

from lmreg_nb.errors import ConfigurationError, LmregError, ValidationError
from lmreg_nb.models import RegisteredModel
from lmreg_nb.onboarding import (
    Contact,
    Onboarding,
    Step,
    build_summary,
    check_contact,
    configuration,
    notebook_path,
    summary_status,
)
from lmreg_nb.secret import Secret
from lmreg_nb.settings import Settings

if TYPE_CHECKING:
    from lmreg_nb.sandbox.process import SandboxInfo


# -- contact card ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mobile", "expected"),
    [
        ("13812345678", "13812345678"),
        ("+86 138 1234 5678", "13812345678"),
        ("86-138-1234-5678", "13812345678"),
    ],
)
def test_contact_accepts_mainland_mobiles_with_or_without_86(mobile: str, expected: str) -> None:
    contact = check_contact("  Li   Hua ", mobile, "ops@school.edu.cn")
    assert contact == Contact("Li Hua", expected, "ops@school.edu.cn")


@pytest.mark.parametrize(
    ("name", "mobile", "email", "field"),
    [
        ("", "13812345678", "a@school.cn", "contact_name"),
        ("Li\x00Hua", "13812345678", "a@school.cn", "contact_name"),
        ("Li Hua", "12812345678", "a@school.cn", "contact_mobile"),
        ("Li Hua", "1381234567", "a@school.cn", "contact_mobile"),
        ("Li Hua", "+1 415 555 0100", "a@school.cn", "contact_mobile"),
        ("Li Hua", "13812345678", "not-an-email", "contact_email"),
        ("Li Hua", "13812345678", "a@school", "contact_email"),
    ],
)
def test_invalid_contact_names_the_field_in_one_line(
    name: str, mobile: str, email: str, field: str
) -> None:
    with pytest.raises(ValidationError) as info:
        check_contact(name, mobile, email)
    assert info.value.field == field
    assert "\n" not in str(info.value)


def test_begin_with_invalid_card_stops_before_anything_is_sent() -> None:
    with pytest.raises(ValidationError, match="contact_mobile") as info:
        Onboarding.begin("Example School", "Li Hua", "12345", "ops@school.edu.cn")
    assert str(info.value).count("\n") == 0


def test_begin_with_no_parameters_is_interactive_and_school_is_required_otherwise() -> None:
    assert Onboarding.begin().headless is False
    with pytest.raises(ValidationError, match="school"):
        Onboarding.begin("", "Li Hua", "13812345678", "ops@school.edu.cn")
    run = Onboarding.begin("Example School", "Li Hua", "13812345678", "ops@school.edu.cn")
    assert run.headless
    assert [s.to_dict() for s in run.steps] == [
        {"name": "contact card", "passed": True, "detail": "Li Hua, 13812345678, ops@school.edu.cn"}
    ]


# -- summary record ----------------------------------------------------------------------------


def _model() -> RegisteredModel:
    return RegisteredModel(
        model_id="m1",
        model_name="school-llm",
        registry_url="https://llm.school.edu/v1/chat/completions",
        api_key=Secret("sk-very-secret-key-zq9w"),
        create_time_ms=1_700_000_000_000,
        update_time_ms=1_700_000_100_000,
    )


_STEPS = [
    Step("contact card", True, "ok"),
    Step("token", True, "ok"),
    Step("register", True, "ok"),
    Step("list models", True, "ok"),
]


def test_summary_has_the_agreed_shape_and_never_an_api_key() -> None:
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    checks = [{"name": "stream", "passed": False, "severity": "warning", "detail": "slow"}]
    summary = build_summary(
        school="Example School",
        contact=Contact("Li Hua", "13812345678", "ops@school.edu.cn"),
        base_url="https://ai.school.example",
        env="prod",
        steps=_STEPS,
        models=[_model()],
        checks=checks,
        performance={"requests": 3},
        generated_at=when,
    )
    assert set(summary) == {
        "school", "contact", "base_url", "env", "phases", "steps", "models", "checks",
        "performance", "status", "generated_at",
    }  # fmt: skip
    assert summary["contact"] == {
        "name": "Li Hua",
        "mobile": "13812345678",
        "email": "ops@school.edu.cn",
    }
    assert summary["models"] == [
        {
            "modelName": "school-llm",
            "modelId": "m1",
            "registryUrl": "https://llm.school.edu/v1/chat/completions",
            "createTime": "2023-11-14T22:13:20+00:00",
            "updateTime": "2023-11-14T22:15:00+00:00",
        }
    ]
    assert [p["name"] for p in summary["phases"]] == [
        "preparation",
        "technical integration",
        "go-live",
    ]
    assert [p["done"] for p in summary["phases"]] == [True, True, False]
    assert summary["status"] == "ok"  # a failed warning does not fail the run
    assert summary["generated_at"] == "2026-01-02T03:04:05+00:00"
    text = json.dumps(summary)
    assert '"apiKey"' not in text and "zq9w" not in text and "secret-key" not in text


@pytest.mark.parametrize(
    ("steps", "checks", "status"),
    [
        (_STEPS, [], "ok"),
        ([], [], "failed"),  # nothing done is not an onboarding
        ([*_STEPS[:2], Step("register", False, "409")], [], "failed"),
        (_STEPS, [{"name": "auth", "passed": False, "severity": "error", "detail": ""}], "failed"),
        (_STEPS, [{"name": "x", "passed": False, "severity": "info", "detail": ""}], "ok"),
    ],
)
def test_status_fails_on_a_failed_step_or_error_check_only(
    steps: list[Step], checks: list[dict[str, object]], status: str
) -> None:
    assert summary_status(steps, checks) == status


def test_summary_of_failed_run_says_what_is_missing() -> None:
    summary = build_summary(
        school="S", contact=None, base_url=None, env=None, steps=_STEPS[:2],
        models=[], checks=[], performance=None,
    )  # fmt: skip
    integration = summary["phases"][1]
    assert integration["done"] is False
    assert "register" in integration["detail"] and "list models" in integration["detail"]
    assert summary["status"] == "ok"  # the steps that ran passed; the phases say what is left


def test_configuration_masks_secrets() -> None:
    settings = Settings.load(
        environ={
            "LMREG_BASE_URL": "https://ai.school.example",
            "LMREG_APP_SECRET": "abcdefgh12345678",
        }
    )
    outcome = configuration(settings)
    text = repr(outcome) + outcome._repr_html_()
    assert "abcdefgh" not in text and "…5678" in text
    assert "LMREG_APP_ID: not set" in repr(outcome) and not outcome.ok


def test_outcome_html_escapes_server_text() -> None:
    from lmreg_nb.onboarding import Outcome

    html = Outcome("<b>x</b>", [("name", "<script>alert(1)</script>")])._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_table_escapes_html_and_aligns_text() -> None:
    from lmreg_nb.onboarding import Table

    table = Table(["name", "detail"], [["a", "<b>bold</b>"], ["long-name", "x"]])
    assert "<b>bold" not in table._repr_html_() and "&lt;b&gt;bold" in table._repr_html_()
    assert repr(table).splitlines() == [
        "name       detail",
        "a          <b>bold</b>",
        "long-name  x",
    ]
    assert list(table.frame()["name"]) == ["a", "long-name"]


def test_notebooks_are_found_from_the_package() -> None:
    assert notebook_path("onboarding").name == "onboarding.ipynb"
    with pytest.raises(ConfigurationError, match="LMREG_NOTEBOOKS"):
        notebook_path("no-such-notebook")


# -- steps against a real sandbox ------------------------------------------------------------


def _run(sandbox: SandboxInfo, school: str = "Test School") -> Onboarding:
    app = sandbox.add_app(school)
    env = {**sandbox.env(), "LMREG_APP_ID": app["app_id"], "LMREG_APP_SECRET": app["app_secret"]}
    settings = Settings.load(environ=env)
    return Onboarding.begin(school, "Li Hua", "13812345678", "ops@school.edu.cn", settings=settings)


def test_onboarding_twice_updates_without_duplicating(sandbox: SandboxInfo) -> None:
    run = _run(sandbox, "Twice School")
    run.connect()
    first = run.register("twice-model").value
    run.list_models()
    again = Onboarding.begin(
        "Twice School", "Li Hua", "13812345678", "ops@school.edu.cn", settings=run.settings
    )
    second = again.register("twice-model", "https://llm.twice.example/v1/chat/completions")
    assert second.title == "model updated" and second.value.model_id == first.model_id
    again.list_models()
    assert [m.model_name for m in again.models] == ["twice-model"]
    assert again.models[0].registry_url == "https://llm.twice.example/v1/chat/completions"


def test_failed_step_is_recorded_and_raised(sandbox: SandboxInfo) -> None:
    run = _run(sandbox, "Conflict School")
    run.register("taken")
    with pytest.raises(LmregError, match="already used"):
        run.register("taken", update_existing=False)
    assert run.steps[-1].name == "register" and run.steps[-1].passed is False
    with pytest.raises(LmregError, match="no model named"):
        run.update("missing-model")
    assert run.steps[-1] == Step("modify", False, run.steps[-1].detail)


def test_update_keeps_the_current_key_unless_asked(sandbox: SandboxInfo) -> None:
    run = _run(sandbox, "Modify School")
    run.register("mod-model", api_key="first-key-123456")
    changed = run.update("mod-model", new_model_name="mod-model-2")
    model = changed.value
    assert model.model_name == "mod-model-2" and model.api_key.reveal() == "first-key-123456"
    changed = run.update("mod-model-2", api_key_from_env=True)
    assert changed.value.api_key.reveal() == sandbox.model_api_key


def test_unreachable_endpoint_is_a_failed_check_and_the_summary_says_failed(
    sandbox: SandboxInfo,
) -> None:
    run = _run(sandbox, "Unreachable School")
    run.connect()
    run.register("unreachable-model", "http://127.0.0.1:9/v1/chat/completions")
    run.list_models()
    table = run.check_endpoint()
    assert table.columns == ["check", "passed", "severity", "detail"]
    assert any(row[1] == "✘" and row[2] == "error" for row in table.rows)
    assert not run.verdict().ok
    summary = run.summary()
    assert summary["status"] == "failed"
    assert any(not c["passed"] and c["severity"] == "error" for c in summary["checks"])
    assert (
        summary["steps"][-1]["name"] == "chat endpoint checks"
        and not summary["steps"][-1]["passed"]
    )


def test_a_probe_that_raises_is_recorded_as_a_failed_check(
    sandbox: SandboxInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lmreg_nb.probe

    def boom(*args: object, **kwargs: object) -> None:
        raise LmregError("could not connect to https://llm.example/v1/chat/completions")

    monkeypatch.setattr(lmreg_nb.probe, "check_endpoint", boom)
    run = _run(sandbox, "Raising School")
    table = run.check_endpoint(model_url="https://llm.example/v1/chat/completions")
    assert [row[:3] for row in table.rows] == [["endpoint reachable", "✘", "error"]]
    assert run.summary()["checks"][0]["detail"].startswith("could not connect")
    assert run.figure().title.startswith("no load test")
