"""The forms, driven without Jupyter: set values, click, look at the fields and the platform."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from lmreg_nb.onboarding import Onboarding, Outcome
from lmreg_nb.settings import Settings
from lmreg_nb.ui import ChatBox, ContactForm, CredentialsForm, ModelsTable, ModifyForm, RegisterForm

if TYPE_CHECKING:
    from lmreg_nb.sandbox.process import SandboxInfo


def _run(sandbox: SandboxInfo, name: str, **drop: bool) -> tuple[Onboarding, dict[str, str]]:
    """A run on a fresh account of the sandbox (so tests do not see each other's models)."""
    app = sandbox.add_app(name)
    env = {**sandbox.env(), "LMREG_APP_ID": app["app_id"], "LMREG_APP_SECRET": app["app_secret"]}
    for var in drop:
        env.pop(var)
    return Onboarding(name, settings=Settings.load(environ=env)), app


def _classes(widget: Any) -> set[str]:
    return set(widget._dom_classes)


def test_register_form_validates_as_you_type_and_registers(sandbox: SandboxInfo) -> None:
    run, _ = _run(sandbox, "ui-register")
    form = RegisterForm(run)
    assert {"lmreg-register-form"} <= _classes(form.container)
    assert "lmreg-register-button" in _classes(form.button)
    assert "lmreg-result" in _classes(form.result)
    url = form.fields["registry-url"]
    assert {"lmreg-error", "lmreg-registry-url-error"} <= _classes(url.error)

    form.registry_url.value = "ftp://llm.school.edu/v1/chat/completions"
    assert "https://" in url.error.value
    assert "registryUrl:" not in url.error.value  # the label beside it names the field
    form.registry_url.value = sandbox.model_url
    assert "loopback" in url.error.value  # a warning, not a refusal
    form.model_name.value = "   "  # empty once trimmed (the field starts empty)
    assert "must not be empty" in form.fields["model-name"].error.value

    form.button.click()  # invalid: nothing is sent
    assert run.client.find_model("ui-model") is None

    form.model_name.value = "ui-model"
    form.api_key.value = "typed-key-0123456789"
    form.req_params.value = "temperature\nmax_tokens"
    form.button.click()
    assert form.api_key.value == ""  # cleared the moment it was read
    assert form.last_error is None, form.last_error
    assert isinstance(form.last_result, Outcome)
    assert form.last_result.title.startswith("model registered")
    # The mock model refuses a key it does not know: registered, but said in red (issue 32).
    assert not form.last_result.ok and "HTTP 401" in repr(form.last_result)
    stored = run.client.find_model("ui-model")
    assert stored is not None and stored.api_key.reveal() == "typed-key-0123456789"
    assert not form.button.disabled

    form.button.click()  # same name again: a one-line error beside the button, not a traceback
    assert form.last_error is not None and "already used" in form.last_error
    assert "\n" not in form.message.value and "error:" in form.message.value


def test_register_button_is_disabled_while_the_call_runs(sandbox: SandboxInfo) -> None:
    run, _ = _run(sandbox, "ui-busy")
    form = RegisterForm(run, model_name="busy-model")
    seen: list[bool] = []

    def register(*args: Any, **kwargs: Any) -> Outcome:
        seen.append(form.button.disabled)
        return Outcome("fake")

    run.register = register  # type: ignore[method-assign]
    form.button.click()
    assert seen == [True] and form.button.disabled is False


def test_credentials_form_clears_the_secret_and_connects(sandbox: SandboxInfo) -> None:
    run, app = _run(sandbox, "ui-credentials", LMREG_APP_SECRET=True)
    form = CredentialsForm(run)
    assert "lmreg-credentials-form" in _classes(form.container)
    assert "lmreg-app-id" in _classes(form.app_id) and "lmreg-app-secret" in _classes(
        form.app_secret
    )
    assert "lmreg-connect-button" in _classes(form.button)
    assert form.app_id.value == app["app_id"]  # prefilled from LMREG_APP_ID

    form.app_secret.value = "wrong-secret-xyz-123456"
    form.button.click()
    assert form.app_secret.value == ""
    assert form.last_error is not None and "appSecret" in form.last_error
    assert "wrong-secret" not in form.last_error + form.message.value

    form.app_secret.value = app["app_secret"]
    form.button.click()
    assert form.app_secret.value == ""
    assert form.last_error is None, form.last_error
    assert run.token is not None and run.token.env == app["env"]
    shown = repr(form.last_result) + form.last_result._repr_html_()
    assert app["app_secret"] not in shown and run.token.token.reveal() not in shown


def test_modify_form_prefills_asks_to_confirm_and_keeps_the_key(sandbox: SandboxInfo) -> None:
    run, _ = _run(sandbox, "ui-modify")
    first = run.register(
        "mod-a", "https://a.school.edu/v1/chat/completions", "key-a-0123456789"
    ).value
    run.register("mod-b", "https://b.school.edu/v1/chat/completions", "key-b-0123456789")
    form = ModifyForm(run)
    assert next(v for _, v in form.select.options) == first.model_id
    form.select.value = first.model_id
    assert form.model_name.value == "mod-a" and form.api_key.value == ""
    assert form.registry_url.value == "https://a.school.edu/v1/chat/completions"

    form.model_name.value = "mod-b"  # taken: the preview says so, nothing to confirm (issue 40)
    form.button.click()
    assert form.confirm.layout.display == "none" and "already used" in form.message.value

    form.model_name.value = "mod-a2"
    form.button.click()
    assert run.find(model_id=first.model_id).model_name == "mod-a"  # not yet: needs confirm
    form.confirm.click()
    assert form.last_error is None, form.last_error
    changed = run.find(model_id=first.model_id)
    assert changed.model_name == "mod-a2" and changed.api_key.reveal() == "key-a-0123456789"
    assert changed.create_time_ms == first.create_time_ms
    # The time row says "updated" as the register outcome and the models table do
    # (更新时间 in Chinese), never the field name updateTime.
    labels = [label for label, _value in form.last_result.rows]
    assert "updated" in labels and "updateTime" not in labels


def test_models_table_refreshes(sandbox: SandboxInfo) -> None:
    run, _ = _run(sandbox, "ui-table")
    table = ModelsTable(run)
    assert "lmreg-models-table" in _classes(table.container)
    assert "lmreg-refresh-button" in _classes(table.button)
    assert table.last_result.rows == []
    run.register("table-model", api_key="table-key-0123456789")
    table.button.click()
    shown = table.last_result
    assert [row[0] for row in shown.rows] == ["table-model"]
    assert "table-key" not in repr(shown) + shown._repr_html_()


def test_contact_form_shows_the_error_beside_the_field() -> None:
    run = Onboarding("ui-contact", settings=Settings.load(environ={}))
    run.school = ""
    form = ContactForm(run)
    form.school.value = "Form School"
    form.name.value = "Li Hua"
    form.mobile.value = "12345"
    field = form.fields["contact-mobile"]
    assert "lmreg-contact-mobile-error" in _classes(field.error)
    assert "mainland China mobile" in field.error.value
    form.email.value = "ops@school.edu.cn"
    form.button.click()
    assert run.contact is None and run.steps == []
    form.mobile.value = "+86 138 1234 5678"
    assert field.error.value == ""
    form.button.click()
    assert run.contact is not None and run.contact.mobile == "13812345678"
    assert run.school == "Form School" and run.steps[-1].passed


@pytest.mark.parametrize("reply_html", ["<img src=x onerror=alert(1)>"])
def test_chat_box_streams_and_escapes_the_reply(reply_html: str) -> None:
    run = Onboarding("ui-chat", settings=Settings.load(environ={}))
    box = ChatBox(run)
    seen: list[str] = []

    def chat(prompt: str, on_piece: Any = None, **kw: Any) -> str:
        for piece in ("Hello ", reply_html):
            on_piece(piece)
            seen.append(box.reply.value)
        return "Hello " + reply_html

    run.chat = chat  # type: ignore[method-assign]
    box.prompt.value = "hi"
    box.button.click()
    assert "Hello" in seen[0] and "onerror" not in seen[0]  # shown as the first piece arrived
    assert "<img" not in box.reply.value and "&lt;img" in box.reply.value
    assert box.last_result == "Hello " + reply_html


def test_a_key_pasted_as_the_model_name_is_refused_and_cleared() -> None:
    # Red-team pass (issue 44): the apiKey pasted into the modelName field was registered
    # as the name, and stayed on screen (and in widget state a save may keep).
    from fakes.registry_fakes import API_KEY, FakePlatform

    from lmreg_nb.registry.client import RegistryClient

    platform = FakePlatform()
    settings = platform.settings(model_url="http://127.0.0.1:9/v1/chat/completions",
                                 model_api_key=API_KEY)  # fmt: skip
    run = Onboarding("ui", settings=settings,
                     client=RegistryClient(settings, transport=platform.transport()))  # fmt: skip
    form = RegisterForm(run)
    form.model_name.value = API_KEY
    form.registry_url.value = "http://127.0.0.1:9/v1/chat/completions"
    form.button.click()
    assert form.last_error is not None and "Type the model's name" in form.last_error
    assert API_KEY not in form.last_error and API_KEY not in form.message.value
    assert form.model_name.value == ""  # off the screen
    assert platform.models == []
