"""The onboarding facade without Jupyter: contact card, steps on a real sandbox, the summary."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from fakes.hostile import hostile_server

from lmreg_nb.display import Outcome, Table
from lmreg_nb.errors import LmregError, ValidationError
from lmreg_nb.i18n import current_language
from lmreg_nb.models import RegisteredModel
from lmreg_nb.onboarding import Onboarding
from lmreg_nb.onboarding.configuration import configuration
from lmreg_nb.onboarding.contact import Contact, check_contact
from lmreg_nb.probe.text.capacity_text import verdict
from lmreg_nb.secret import Secret
from lmreg_nb.settings import Settings
from lmreg_nb.summary import Step, build_summary

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


def test_begin_with_invalid_card_records_it_and_skips_every_later_step() -> None:
    run = Onboarding.begin("Example School", "Li Hua", "12345", "ops@school.edu.cn")
    assert run.headless and run.stopped_by == "contact card"
    (card,) = run.steps
    assert not card.passed and card.detail.startswith("contact_mobile:")
    assert not run.contact_card().ok and "contact_mobile" in repr(run.contact_card())
    # Nothing is sent: no platform is even configured, yet nothing raises.
    skipped = run.connect()
    assert isinstance(skipped, Outcome) and not skipped.ok and "skipped" in skipped.title
    assert run.register("never").title.startswith("register the model: skipped")
    summary = run.summary()
    assert summary.status == "failed" and summary.reason.startswith("contact card: contact_mobile")
    assert not summary.go_live.ready


def test_begin_with_no_parameters_is_interactive_and_school_is_required_otherwise() -> None:
    assert Onboarding.begin().headless is False
    run = Onboarding.begin("", "Li Hua", "13812345678", "ops@school.edu.cn")
    assert run.headless and run.steps[0].detail.startswith("school:")
    run = Onboarding.begin("Example School", "Li Hua", "13812345678", "ops@school.edu.cn")
    assert run.headless
    assert [s.to_json() for s in run.steps] == [
        {"name": "contact card", "passed": True, "detail": "Li Hua, 13812345678, ops@school.edu.cn"}
    ]


def test_begin_chooses_the_language_and_the_summary_records_it() -> None:
    run = Onboarding.begin(lang="zh-CN")
    try:
        assert current_language() == "zh-CN" and run.summary().lang == "zh-CN"
    finally:
        Onboarding.begin(lang="en")
    assert current_language() == "en"


def test_an_interactive_run_with_nothing_done_is_incomplete() -> None:
    run = Onboarding.begin()
    summary = run.summary()
    assert summary.status == "incomplete" and not summary.go_live.ready
    assert summary.school == "" and summary.steps == []


def test_interactive_steps_raise_for_the_form_and_are_recorded() -> None:
    run = Onboarding("S", settings=Settings.load(environ={}))
    with pytest.raises(ValidationError, match="contact_email"):
        run.set_contact("Li Hua", "13812345678", "nope")
    with pytest.raises(LmregError, match="LMREG_BASE_URL"):
        run.connect()
    assert [(s.name, s.passed) for s in run.steps] == [("contact card", False), ("token", False)]
    assert run.stopped_by is None  # interactive: the next click may fix it


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


def test_summary_never_holds_an_api_key() -> None:
    steps = [Step(n, True, "ok") for n in ("contact card", "token", "register", "list models")]
    summary = build_summary(
        school="Example School",
        contact=Contact("Li Hua", "13812345678", "ops@school.edu.cn"),
        base_url="https://ai.school.example",
        env="prod",
        steps=steps,
        models=[_model()],
        checks=[],
        generated_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
    )
    data = summary.to_json()
    contact = {"name": "Li Hua", "mobile": "13812345678", "email": "ops@school.edu.cn"}
    assert data["contact"] == contact
    assert data["models"][0]["createTime"] == "2023-11-14T22:13:20+00:00"
    assert [p["done"] for p in data["phases"]] == [True, True, False]
    assert data["status"] == "incomplete"  # the checks have not run
    text = json.dumps(data)
    assert '"apiKey"' not in text and "zq9w" not in text and "secret-key" not in text


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
    assert ".env: none found" in repr(outcome)


def test_outcome_html_escapes_server_text() -> None:
    html = Outcome("<b>x</b>", [("name", "<script>alert(1)</script>")])._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_table_escapes_html_and_aligns_text() -> None:
    table = Table(["name", "detail"], [["a", "<b>bold</b>"], ["long-name", "x"]])
    assert "<b>bold" not in table._repr_html_() and "&lt;b&gt;bold" in table._repr_html_()
    assert repr(table).splitlines() == [
        "name       detail",
        "a          <b>bold</b>",
        "long-name  x",
    ]
    assert list(table.frame()["name"]) == ["a", "long-name"]


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
    assert second.title.startswith("model updated") and second.value.model_id == first.model_id
    # Its address does not answer from here: a warning with the cause, never a green tick.
    assert second.warning and second.ok and second.mark == "⚠", second
    again.list_models()
    assert [m.model_name for m in again.models] == ["twice-model"]
    assert again.models[0].registry_url == "https://llm.twice.example/v1/chat/completions"


def _interactive(sandbox: SandboxInfo, school: str) -> Onboarding:
    app = sandbox.add_app(school)
    env = {**sandbox.env(), "LMREG_APP_ID": app["app_id"], "LMREG_APP_SECRET": app["app_secret"]}
    return Onboarding(school, settings=Settings.load(environ=env))


def test_failed_step_is_recorded_and_raised_in_an_interactive_run(sandbox: SandboxInfo) -> None:
    run = _interactive(sandbox, "Conflict School")
    run.register("taken")
    with pytest.raises(LmregError, match="already used"):
        run.register("taken", update_existing=False)
    assert run.steps[-1].name == "register" and run.steps[-1].passed is False
    with pytest.raises(LmregError, match="no model named"):
        run.update("missing-model")
    assert run.steps[-1] == Step("modify", False, run.steps[-1].detail)


def test_a_headless_failed_step_is_shown_not_raised(sandbox: SandboxInfo) -> None:
    run = _run(sandbox, "Headless Conflict School")
    run.register("taken-too", update_existing=False)
    shown = run.register("taken-too", update_existing=False)
    assert isinstance(shown, Outcome) and not shown.ok and "already used" in repr(shown)
    assert run.stopped_by == "register"
    assert "skipped" in run.list_models().title  # type: ignore[union-attr]


def test_update_keeps_the_current_key_and_shows_old_and_new(sandbox: SandboxInfo) -> None:
    run = _interactive(sandbox, "Modify School")
    run.register("mod-model", api_key="first-key-123456")
    changed = run.update("mod-model", new_model_name="mod-model-2")
    model = changed.value
    assert model.model_name == "mod-model-2" and model.api_key.reveal() == "first-key-123456"
    assert run.changes == [("modelName", "mod-model", "mod-model-2")]
    assert ("modelName", "mod-model → mod-model-2") in changed.rows
    changed = run.update("mod-model-2", api_key_from_env=True)
    assert changed.value.api_key.reveal() == sandbox.model_api_key
    assert [f for f, _old, _new in run.changes] == ["apiKey"]
    assert sandbox.model_api_key not in repr(changed) + changed._repr_html_()


def test_models_are_listed_once_with_local_times(
    sandbox: SandboxInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "UTC")
    run = _interactive(sandbox, "List School")
    run.register("listed-model")
    table = run.list_models()
    assert isinstance(table, Table)
    assert table.columns == ["modelName", "modelId", "registryUrl", "apiKey", "created", "updated"]
    (row,) = table.rows
    assert row[0] == "listed-model" and row[3].startswith("…")
    # The cell holds the time alone; the zone is said once, under the table.
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", row[4]), row[4]
    assert table.note == "Times are local: UTC" and repr(table).endswith(table.note)
    assert "<caption" in table._repr_html_() and table._repr_html_().count(" UTC<") == 1


def test_a_zone_with_summer_time_names_both_offsets_under_the_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lmreg_nb.models import RegisteredModel
    from lmreg_nb.onboarding.registry_steps import models_table
    from lmreg_nb.secret import Secret

    monkeypatch.setenv("TZ", "Europe/Berlin")
    winter, summer = 1767268800000, 1782907200000  # 2026-01-01 and 2026-07-01, 12:00 UTC
    model = RegisteredModel("m1", "m", "https://x.example/v1/chat/completions",
                            Secret("sk-0123456789abcdef"), winter, summer)  # fmt: skip
    table = models_table([model])
    assert table.rows[0][4:] == ["2026-01-01 13:00", "2026-07-01 14:00"]
    berlin = "Europe/Berlin (UTC+01:00), Europe/Berlin (UTC+02:00)"
    assert table.note == f"Times are local: {berlin}"


def test_headless_onboarding_against_the_sandbox_is_ok_but_not_ready_for_go_live(
    sandbox: SandboxInfo,
) -> None:
    run = _run(sandbox, "Rehearsal School")
    run.connect()
    run.register("rehearsal-model")
    run.list_models()
    table = run.check_endpoint(chat_prompt="Say hello")
    assert isinstance(table, Table) and table.rows
    assert run.target is not None and run.target.registered_name == "rehearsal-model"
    reply = run.reply()
    assert reply.ok and len(dict(reply.rows)["reply"]) > 0
    summary = run.summary()
    assert summary.status == "ok", summary.reason
    assert not summary.go_live.ready
    assert any("127.0.0.1" in b and "cannot reach" in b for b in summary.go_live.blockers)
    assert [s.name for s in summary.steps] == [
        "contact card", "token", "register", "list models", "chat endpoint checks", "chat",
    ]  # fmt: skip


@pytest.fixture
def failing_endpoint() -> Iterator[str]:
    with hostile_server() as base:
        yield f"{base}/e500all/v1/chat/completions"


def test_an_endpoint_answering_500_leaves_a_failed_summary_with_the_reason(
    sandbox: SandboxInfo, failing_endpoint: str
) -> None:
    run = _run(sandbox, "Broken Model School")
    run.connect()
    run.register("broken-model", failing_endpoint)
    run.list_models()
    shown = run.check_endpoint(chat_prompt="Hello")
    assert isinstance(shown, Table)
    assert not run.verdict().ok and not run.reply().ok
    summary = run.summary()
    assert summary.status == "failed"
    assert "500" in summary.reason, summary.reason
    assert any("500" in b for b in summary.go_live.blockers)
    # The capacity step after a failed one is skipped, and finish still records.
    assert "skipped" in run.capacity(4).title
    run.finish()


def test_a_probe_that_raises_is_a_failed_step_and_the_summary_says_why(
    sandbox: SandboxInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lmreg_nb.probe

    def boom(*args: object, **kwargs: object) -> None:
        raise LmregError("could not connect to https://llm.example/v1/chat/completions")

    monkeypatch.setattr(lmreg_nb.probe, "check_endpoint", boom)
    run = _run(sandbox, "Raising School")
    shown = run.check_endpoint(model_url="https://llm.example/v1/chat/completions")
    assert isinstance(shown, Outcome) and not shown.ok
    summary = run.summary()
    assert summary.status == "failed"
    assert summary.reason.startswith("chat endpoint checks: could not connect")
    assert run.figure().title.startswith("no load test")


def test_an_empty_app_secret_goes_back_to_the_configured_one_not_one_typed_before() -> None:
    environ = {
        "LMREG_BASE_URL": "https://ai.school.example",
        "LMREG_APP_ID": "app-1",
        "LMREG_APP_SECRET": "configured-secret-123",
        "LMREG_TOKEN": "token-from-elsewhere",
    }
    run = Onboarding("S", settings=Settings.load(environ=environ))
    run.use_credentials("app-1", "typed-wrong-secret")
    assert run.settings.app_secret is not None
    assert run.settings.app_secret.reveal() == "typed-wrong-secret"
    assert run.settings.token is None  # a token from other credentials is not reused
    run.use_credentials("", "")
    assert run.settings.app_secret.reveal() == "configured-secret-123"
    assert run.settings.app_id == "app-1"


def test_an_interactive_summary_is_rewritten_in_place_as_steps_finish(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    from lmreg_nb.records import RECORD_MIME

    InteractiveShell.instance()  # record() displays only inside IPython
    shown: list[tuple[dict[str, object], dict[str, object]]] = []
    monkeypatch.setattr("IPython.display.display", lambda obj, **kw: shown.append((obj, kw)))
    run = Onboarding("", settings=Settings.load(environ={}))
    run.finish()
    run.set_contact("Li Hua", "13812345678", "ops@school.edu.cn", "Live School")
    assert [kw.get("update") for _obj, kw in shown] == [False, True]
    assert shown[0][1]["display_id"] == shown[1][1]["display_id"] is not None
    first, last = (obj[RECORD_MIME]["value"] for obj, _kw in shown)  # type: ignore[index]
    assert first["steps"] == [] and first["status"] == "incomplete"
    assert last["school"] == "Live School" and last["steps"][0]["name"] == "contact card"


def test_a_headless_summary_is_recorded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    InteractiveShell.instance()
    shown: list[dict[str, object]] = []
    monkeypatch.setattr("IPython.display.display", lambda obj, **kw: shown.append(kw))
    run = Onboarding.begin("S", "Li Hua", "12345", "ops@school.edu.cn")
    run.finish()
    run.connect()  # skipped, and the recorded summary stays as it was
    assert shown == [{"raw": True}]


def test_a_failed_step_never_shows_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-echoed-secret-key-0123456789"
    settings = Settings.load(environ={"LMREG_MODEL_API_KEY": key, "LMREG_MODEL_NAME": "m"})

    def echo(*args: object, **kwargs: object) -> None:
        raise RuntimeError(f"server said: bad key {key}")  # not a toolkit error: still masked

    import lmreg_nb.probe

    monkeypatch.setattr(lmreg_nb.probe, "check_endpoint", echo)
    run = Onboarding("S", settings=settings)
    run.headless = True
    shown = run.check_endpoint(model_url="https://llm.example/v1/chat/completions")
    text = repr(shown) + shown._repr_html_() + repr(run.summary().to_json())
    assert "RuntimeError: server said: bad key" in text
    assert key not in text and key[8:16] not in text


def test_the_language_can_come_from_a_dot_env_file(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("LMREG_LANG=zh-CN\n", encoding="utf-8")
    settings = Settings.load(environ={}, env_file=env_file)
    if getattr(settings, "lang", None) is None:
        pytest.skip("Settings does not read LMREG_LANG yet")
    try:
        Onboarding.begin(settings=settings)
        assert current_language() == "zh-CN"
        Onboarding.begin(lang="en", settings=settings)  # the parameter wins
        assert current_language() == "en"
    finally:
        Onboarding.begin(lang="en")


def test_configuration_says_which_env_file_was_read(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("LMREG_BASE_URL=https://ai.school.example\nLMREG_APP_ID=a\n")
    settings = Settings.load(environ={}, env_file=env_file)
    if getattr(settings, "env_file", None) is None:
        pytest.skip("Settings does not say which .env it read yet")
    assert f".env: read from {env_file}" in repr(configuration(settings))


def test_a_bad_class_size_stops_a_headless_run_and_is_the_reason() -> None:
    run = Onboarding.begin(
        "S",
        "Li Hua",
        "13812345678",
        "ops@school.edu.cn",
        class_size="forty",  # type: ignore[arg-type]
    )
    assert run.stopped_by == "parameters" and "skipped" in run.connect().title
    summary = run.summary()
    assert summary.status == "failed" and summary.reason.startswith(
        "the notebook's parameters: class_size:"
    )
    with pytest.raises(ValidationError, match="class_size"):
        Onboarding.begin(class_size=-1)


def test_capacity_and_chat_call_the_endpoint_the_checks_were_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import lmreg_nb.probe
    import lmreg_nb.probe.load.capacity
    from lmreg_nb.probe import Target

    called: list[tuple[str, str]] = []

    class _Report:
        def __init__(self) -> None:
            self.checks: list[object] = []
            self.performance: dict[str, object] = {}

        def figure(self) -> None:
            return None

    def fake_check(target: Target, **kw: object) -> _Report:
        called.append((target.url, target.model))
        return _Report()

    def fake_capacity(target: Target, **kw: object) -> None:
        called.append((target.url, target.model))
        raise LmregError("stop here")

    def fake_chat(target: Target, prompt: str) -> list[str]:
        called.append((target.url, target.model))
        return ["hi"]

    monkeypatch.setattr(lmreg_nb.probe, "check_endpoint", fake_check)
    monkeypatch.setattr(lmreg_nb.probe.load.capacity, "find_capacity", fake_capacity)
    monkeypatch.setattr(lmreg_nb.probe, "stream_chat", fake_chat)
    environ = {
        "LMREG_MODEL_URL": "https://env.example/v1/chat/completions",
        "LMREG_MODEL_API_KEY": "k" * 20,
        "LMREG_MODEL_NAME": "env-model",
    }
    run = Onboarding("", settings=Settings.load(environ=environ))
    given = "https://given.example/v1/chat/completions"
    run.check_endpoint(model_url=given, model="given-model")
    with pytest.raises(LmregError, match="stop here"):
        run.capacity(4)
    assert run.chat("hello") == "hi"
    assert called == [(given, "given-model")] * 3


def test_a_registered_model_shows_local_times_as_the_list_does(
    sandbox: SandboxInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "UTC")
    run = _interactive(sandbox, "Timed School")
    shown = dict(run.register("timed-model").rows)
    listed = run.list_models()
    assert isinstance(listed, Table)
    # The outcome's time says its zone; the table's says it once, under the table.
    assert shown["created"] == f"{listed.rows[0][4]} UTC" and listed.note.endswith(": UTC")
    assert "+00:00" not in repr(shown) and "createTime" not in shown


def test_register_before_connect_records_the_token_the_client_got(sandbox: SandboxInfo) -> None:
    # People click Register first; the client exchanges a token on its own, and the
    # record must not then say the token phase was never done.
    run = _interactive(sandbox, "Eager School")
    run.register("eager-model")
    names = [s.name for s in run.steps]
    assert names.index("token") < names.index("register")
    token_step = next(s for s in run.steps if s.name == "token")
    assert token_step.passed and "env" in token_step.detail
    assert run.summary().env == run.token.env  # type: ignore[union-attr]


def test_the_recorded_capacity_is_the_probe_json_with_verdict_and_class_size() -> None:
    from lmreg_nb.onboarding.endpoint_steps import capacity_record
    from lmreg_nb.probe.load.capacity import SLO, CapacityResult, Level

    pct = {"p50": 100.0, "p90": 150.5, "p99": 200.0}
    levels = [
        Level(c, requests=2 * c, errors=0, ttft_ms=pct, itl_ms=pct, latency_ms=pct,
              requests_per_s=1.5 * c, output_tokens_per_s=40.0 * c, meets_slo=c <= 4)
        for c in (1, 2, 4, 8)
    ]  # fmt: skip
    levels[-1].failed = "ttft"
    result = CapacityResult(SLO(ttft_ms=2000), levels, need=40)
    recorded = capacity_record(result, 40)
    # What the summary recorded before it was typed: the probe's JSON plus two keys.
    expected = {**result.to_json(), "verdict": verdict(result, 40), "class_size": 40}
    assert recorded.to_json() == expected
    assert (recorded.concurrency, recorded.limited_by) == (4, "ttft")


def test_the_notebooks_show_a_secret_a_model_name_holds_masked_as_the_cli_does() -> None:
    # Red-team pass (issue 44): notebook 04's table and the register form's result showed
    # an apiKey or the appSecret registered as a modelName in clear (the CLI masked it).
    from fakes.registry_fakes import API_KEY, APP_SECRET, FakePlatform

    from lmreg_nb.registry.client import RegistryClient

    platform = FakePlatform()
    # 127.0.0.1:9: the register step's one chat to the address is refused at once, locally.
    settings = platform.settings(model_url="http://127.0.0.1:9/v1/chat/completions",
                                 model_api_key=API_KEY)  # fmt: skip
    client = RegistryClient(settings, transport=platform.transport())
    run = Onboarding("Example School", settings=settings, client=client)
    run.register("school-llm")
    platform.models.append({**platform.models[0], "modelId": "m2", "modelName": APP_SECRET})
    platform.models.append({**platform.models[0], "modelId": "m3", "modelName": API_KEY})
    shown = [run.list_models(), run.models_frame().to_string(), run.update("school-llm")]
    text = "\n".join(f"{view!r} {getattr(view, '_repr_html_', str)()}" for view in shown)
    assert APP_SECRET not in text and API_KEY not in text and "school-llm" in text
    assert {m.model_name for m in run.models} >= {APP_SECRET, API_KEY}  # kept as sent
