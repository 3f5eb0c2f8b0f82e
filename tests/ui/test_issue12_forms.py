"""Issue 12's form findings, each driven as a person would: type, click, look."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

import pytest

from lmreg_nb.onboarding import Onboarding, Outcome
from lmreg_nb.probe.load.capacity import Progress
from lmreg_nb.settings import Settings
from lmreg_nb.ui import (
    CapacityForm,
    ChatBox,
    CredentialsForm,
    ModelsTable,
    ModifyForm,
    RegisterForm,
)

if TYPE_CHECKING:
    import pytest

    from lmreg_nb.sandbox.process import SandboxInfo


#: Nothing listens here (the discard port refuses at once): a call to it fails fast.
UNUSED_URL = "http://127.0.0.1:9/v1/chat/completions"


def _run(sandbox: SandboxInfo, name: str, **extra: str) -> tuple[Onboarding, dict[str, str]]:
    """A run on a fresh account of the sandbox (so tests do not see each other's models)."""
    app = sandbox.add_app(name)
    env = {**sandbox.env(), "LMREG_APP_ID": app["app_id"], "LMREG_APP_SECRET": app["app_secret"]}
    env.update(extra)
    return Onboarding(name, settings=Settings.load(environ=env)), app


def _position(form: Any, widget: Any) -> int:
    children = list(form.container.children)
    return next(i for i, c in enumerate(children) if c is widget or widget in _flat(c))


def _flat(widget: Any) -> list[Any]:
    kids = list(getattr(widget, "children", ()))
    return kids + [k for kid in kids for k in _flat(kid)]


def test_empty_secret_after_a_wrong_one_uses_the_environment_again(
    sandbox: SandboxInfo,
) -> None:
    run, app = _run(sandbox, "ui-wrong-then-env")
    form = CredentialsForm(run)
    form.app_secret.value = "wrong-secret-xyz-123456"
    form.button.click()
    assert form.last_error is not None and "appSecret" in form.last_error

    form.button.click()  # the field is empty now: "empty: use LMREG_APP_SECRET"
    assert form.last_error is None, form.last_error
    assert run.token is not None and run.token.env == app["env"]


def test_modify_form_shows_no_stray_none(
    sandbox: SandboxInfo, capsys: pytest.CaptureFixture[str]
) -> None:
    run, _ = _run(sandbox, "ui-modify-none")
    run.register("none-a", "https://a.school.edu/v1/chat/completions", "key-a-0123456789")
    capsys.readouterr()
    form = ModifyForm(run)
    # Outside a kernel a displayed value is printed: loading the dropdown displays nothing.
    assert "None" not in capsys.readouterr().out
    assert form.last_error is None and form.models


def test_modify_shows_old_to_new_below_the_buttons_and_the_new_name_in_the_dropdown(
    sandbox: SandboxInfo, capsys: pytest.CaptureFixture[str]
) -> None:
    run, _ = _run(sandbox, "ui-modify-flow")
    first = run.register(
        "flow-a", "https://a.school.edu/v1/chat/completions", "key-a-0123456789"
    ).value
    form = ModifyForm(run)
    form.select.value = first.model_id
    form.model_name.value = "flow-a2"
    form.button.click()
    # The confirmation names old and new values, and replaces any previous outcome.
    assert "flow-a" in form.message.value and "flow-a2" in form.message.value
    assert "→" in form.message.value and "…6789" in form.message.value
    assert "0123456789" not in form.message.value
    assert form.confirm.layout.display is None
    capsys.readouterr()
    form.confirm.click()
    assert form.last_error is None, form.last_error
    outcome = form.last_result
    assert isinstance(outcome, Outcome)
    assert ("modelName", "flow-a → flow-a2") in outcome.rows
    assert "flow-a → flow-a2" in capsys.readouterr().out  # shown in the result area
    assert form.message.value == ""  # the confirmation gave way to the outcome
    labels = dict((v, k) for k, v in form.select.options)
    assert form.select.value == first.model_id
    assert labels[first.model_id].startswith("flow-a2 ")  # the dropdown shows the new name
    # Top to bottom: fields, Modify…, the confirmation, Confirm, then the outcome.
    order = [form.button, form.message, form.confirm, form.result]
    assert [_position(form, w) for w in order] == sorted(_position(form, w) for w in order)


def test_models_table_is_filled_at_once_and_follows_the_register_form(
    sandbox: SandboxInfo,
) -> None:
    run, _ = _run(sandbox, "ui-table-at-once")
    run.register("at-once", api_key="at-once-key-0123456789")
    run.list_models()
    table = ModelsTable(run, load=False)  # as the notebooks show it after listing
    assert [row[0] for row in table.last_result.rows] == ["at-once"]

    form = RegisterForm(run, update_existing=False)
    form.model_name.value = "second"
    form.api_key.value = "second-key-0123456789"
    form.button.click()
    assert form.last_error is None, form.last_error
    assert [row[0] for row in table.last_result.rows] == ["at-once", "second"]


def test_register_form_does_not_take_the_servers_model_name(sandbox: SandboxInfo) -> None:
    run, _ = _run(sandbox, "ui-register-name", LMREG_MODEL_NAME="qwen2.5-7b-instruct")
    form = RegisterForm(run)
    assert form.model_name.value == ""  # modelName is the platform's name, not the body's
    assert RegisterForm(run, model_name="school-assistant").model_name.value == "school-assistant"


def test_register_form_warnings_one_per_line_and_wide_fields(sandbox: SandboxInfo) -> None:
    run, _ = _run(sandbox, "ui-register-warn")
    form = RegisterForm(run)
    form.registry_url.value = "http://192.168.1.20:8000/chat"  # three warnings at once
    shown = form.fields["registry-url"].error.value
    assert shown.count("<div") == 3 and "; registryUrl" not in shown  # not one long line
    for widget in (form.model_name, form.registry_url, form.api_key):
        assert "46em" in (widget.layout.width or "")


def _checked_run(sandbox: SandboxInfo, name: str) -> Onboarding:
    """Notebook 05 so far: LMREG_MODEL_URL points nowhere, the checks ran on ``model_url``."""
    env = {**sandbox.env(), "LMREG_MODEL_URL": UNUSED_URL}
    run = Onboarding(name, settings=Settings.load(environ=env))
    run.check_endpoint(model_url=sandbox.model_url)
    return run


def test_chat_box_calls_the_checked_endpoint_and_replies_below_send(
    sandbox: SandboxInfo,
) -> None:
    run = _checked_run(sandbox, "ui-chat-url")
    box = ChatBox(run)  # as notebook 05 shows it, model_url empty
    box.prompt.value = "hello"
    box.button.click()
    assert box.last_error is None, box.last_error  # LMREG_MODEL_URL would be refused
    assert box.text and html.escape(box.text[:20]) in box.reply.value
    assert _position(box, box.button) < _position(box, box.reply)

    given = ChatBox(run, model_url=UNUSED_URL)  # a model_url given wins
    given.prompt.value = "hello"
    given.button.click()
    assert given.last_error is not None and "127.0.0.1:9" in given.last_error


def test_chat_box_empty_prompt_is_a_one_line_error() -> None:
    run = Onboarding("ui-chat-empty", settings=Settings.load(environ={}))
    box = ChatBox(run)
    box.button.click()
    assert box.last_error is not None and "prompt" in box.last_error
    assert "\n" not in box.message.value


def test_capacity_form_presets_slo_and_what_it_shows() -> None:
    run = Onboarding("ui-capacity", settings=Settings.load(environ={}))
    called: list[tuple[int | None, float]] = []
    endpoints: list[dict[str, str]] = []

    class Result:
        levels = ({"concurrency": 20, "requests": 40, "errors": 0, "meets_slo": True},)

    shown: list[str] = []

    def capacity(class_size: int | None, slo_ttft_ms: float, **kw: Any) -> Outcome:
        called.append((class_size, slo_ttft_ms))
        progress = kw.pop("on_progress")
        endpoints.append(kw)
        # The search reports where it is; the form shows it under the button meanwhile.
        progress(Progress(20, 57))
        shown.append(form.message.value)
        run.capacity_result = Result()
        return Outcome("serves 24 chats at once; a class of 40 needs more", ok=False)

    run.capacity = capacity  # type: ignore[method-assign,assignment]
    run.capacity_figure = lambda: "charts"  # type: ignore[method-assign]
    form = CapacityForm(run, model_url="https://given.school.edu/v1/chat/completions")
    assert form.slo.value == 2000 and form.class_size.value == 40
    assert [v for _, v in form.preset.options] == [10, 20, 40]
    form.preset.value = 20
    assert form.class_size.value == 20
    form.slo.value = -5  # a mistake: refused beside the field, nothing measured
    form.button.click()
    assert called == [] and "60000 ms" in form.fields["slo-ttft"].error.value
    form.slo.value = 1500
    form.button.click()
    assert called == [(20, 1500)]
    assert endpoints == [{"model_url": "https://given.school.edu/v1/chat/completions", "model": ""}]
    assert form.last_result[0].title.startswith("serves 24")
    table, charts = form.last_result[1:]
    assert table.rows[0][0] == "20" and table.rows[0][-1] == "✔" and charts == "charts"
    assert shown == ["concurrency 20: 57 requests so far…"]
    assert form.message.value == ""  # done: the result says the rest


@pytest.mark.slow  # a real search or process: CI's lane, not the inner loop
def test_capacity_form_measures_the_checked_endpoint(sandbox: SandboxInfo) -> None:
    run = _checked_run(sandbox, "ui-capacity-e2e")
    # Replies of 4 tokens (80 ms, not 32 tokens' 360 ms): each level is settled on 22 or
    # more whole replies, and the form shows the same verdict, table and charts.
    run.max_tokens = 4
    form = CapacityForm(run, class_size=1)  # the smallest search: a few seconds
    assert form.preset.value is None  # 1 is not a preset: the number field holds it
    form.button.click()
    assert form.last_error is None, form.last_error
    verdict, table, figure = form.last_result
    assert isinstance(verdict, Outcome) and verdict.ok and "1" in verdict.title
    assert table.rows[0][0] == "1" and table.rows[0][-1] == "✔"  # the record's columns
    assert figure._repr_png_().startswith(b"\x89PNG")
    assert [s.name for s in run.steps] == ["chat endpoint checks", "capacity"]


def test_an_unexpected_error_is_one_line_with_secrets_masked() -> None:
    key = "sk-unexpected-0123456789abcdef"
    run = Onboarding("ui-unexpected", settings=Settings.load(environ={"LMREG_MODEL_API_KEY": key}))

    def chat(prompt: str, on_piece: Any = None, **kw: Any) -> str:
        raise RuntimeError(f"server sent garbage after {key}\nline two")

    run.chat = chat  # type: ignore[method-assign]
    box = ChatBox(run)
    box.prompt.value = "hello"
    box.button.click()  # no traceback escapes the click
    assert box.last_error is not None and "RuntimeError" in box.last_error
    assert key not in box.last_error + box.message.value
    assert "\n" not in box.last_error and not box.button.disabled
