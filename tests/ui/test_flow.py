"""The interactive onboarding's flow: forms in order, checks after registering, live summary."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lmreg_nb.onboarding import Onboarding
from lmreg_nb.settings import Settings
from lmreg_nb.ui import (
    ChecksPanel,
    ContactForm,
    CredentialsForm,
    ModelsTable,
    RegisterForm,
)

if TYPE_CHECKING:
    from lmreg_nb.sandbox.process import SandboxInfo

#: Nothing listens here (the discard port refuses at once): LMREG_MODEL_URL must not be called.
UNUSED_URL = "http://127.0.0.1:9/v1/chat/completions"


def _statuses(run: Onboarding) -> tuple[str, list[str]]:
    summary: Any = run.summary().to_json()
    return summary["status"], [s["name"] for s in summary["steps"]]


def test_interactive_onboarding_runs_the_steps_in_order(sandbox: SandboxInfo) -> None:
    app = sandbox.add_app("ui-flow")
    env = {
        **sandbox.env(),
        "LMREG_APP_ID": app["app_id"],
        "LMREG_APP_SECRET": app["app_secret"],
        "LMREG_MODEL_URL": UNUSED_URL,
    }
    run = Onboarding.begin(settings=Settings.load(environ=env))
    # Run All with empty forms: each cell's widget, top to bottom.
    contact = ContactForm(run)
    credentials = CredentialsForm(run)
    register = RegisterForm(run, update_existing=True)
    table = ModelsTable(run, load=False)
    checks = ChecksPanel(run)
    status, steps = _statuses(run)
    assert status != "ok" and steps == []
    assert run.report is None and "registered" in checks.message.value  # waits, checks nothing

    contact.school.value = "Flow School"
    contact.name.value = "Li Hua"
    contact.mobile.value = "13812345678"
    contact.email.value = "ops@flow.edu.cn"
    contact.button.click()
    assert _statuses(run)[1] == ["contact card"]  # refreshed as the step completed
    credentials.button.click()
    assert credentials.last_error is None, credentials.last_error
    assert _statuses(run)[0] != "ok"  # not everything is done yet

    register.model_name.value = "flow-model"
    register.registry_url.value = sandbox.model_url
    register.api_key.value = sandbox.model_api_key
    register.button.click()
    assert register.last_error is None, register.last_error
    # The table and the checks followed the register step by themselves.
    assert [row[0] for row in table.last_result.rows] == ["flow-model"]
    assert run.report is not None and run.report.url == sandbox.model_url
    assert checks.last_error is None, checks.last_error
    status, steps = _statuses(run)
    assert steps[:4] == ["contact card", "token", "register", "list models"]
    assert "chat endpoint checks" in steps
    assert status == "ok", run.summary().to_json()
