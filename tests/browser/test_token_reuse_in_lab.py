"""A school engineer without LMREG_APP_SECRET: the appSecret typed into notebook 01's form
gives a token that notebook 02 reuses to register (issue: 02 stopped with "LMREG_APP_SECRET
未设置"). In Chinese, as the issue was found; the capacity form's labels are not cut.

JupyterLab runs with the account's appId but no appSecret in its kernels' environment.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from lab_driver import Lab, LabServer, lab_environment, running_lab
from lab_helpers import CJK, CLICK_TIMEOUT_MS, connect_in_01, platform_models

if TYPE_CHECKING:
    from lmreg_nb.sandbox.process import SandboxInfo

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]
LANG = "zh-CN"
TOKEN, REGISTER, CHAT = (
    "01_get_token.ipynb",
    "02_register_model.ipynb",
    "05_test_chat_endpoint.ipynb",
)
CHECKS_TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def account(sandbox_process: SandboxInfo) -> dict[str, str]:
    made = sandbox_process.add_app("browser-token-reuse")
    return {
        **sandbox_process.env(),
        "LMREG_APP_ID": made["app_id"],
        "LMREG_APP_SECRET": made["app_secret"],
    }


@pytest.fixture(scope="module")
def lab_server(
    account: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LabServer]:
    """This module's JupyterLab (instead of the session's): kernels without LMREG_APP_SECRET."""
    from lmreg_nb.runner.shipped import copy_notebooks

    root = tmp_path_factory.mktemp("lab-reuse") / "notebooks"
    copy_notebooks(root, lang=LANG)
    home = tmp_path_factory.mktemp("lab-reuse-home")
    kernels = {k: v for k, v in account.items() if k != "LMREG_APP_SECRET"}
    kernels["LMREG_LANG"] = LANG
    with running_lab(root, home, lab_environment(home, kernels), LANG) as server:
        yield server


def test_secret_typed_in_01_serves_02(lab: Lab, account: dict[str, str]) -> None:
    from playwright.sync_api import expect

    form = connect_in_01(lab, TOKEN, account["LMREG_APP_SECRET"])  # the masked token shown
    expect(form.locator(".lmreg-message")).to_have_text("")

    lab.open(REGISTER)
    register = lab.run_all(REGISTER)
    form = register.locator(".lmreg-register-form")
    expect(form).to_be_visible()
    name = f"reuse-{secrets.token_hex(4)}"
    form.locator(".lmreg-model-name input").fill(name)
    form.locator(".lmreg-registry-url input").fill(account["LMREG_MODEL_URL"])
    form.locator(".lmreg-register-button").click()
    expect(form.locator(".lmreg-result")).to_contain_text(name, timeout=CLICK_TIMEOUT_MS)
    message = form.locator(".lmreg-message").inner_text()
    assert "LMREG_APP_SECRET" not in message and "error" not in message.lower(), message
    assert [m["modelName"] for m in platform_models(account)].count(name) == 1
    assert account["LMREG_APP_SECRET"] not in lab.page.content()
    # The two notebooks' kernels talk over ipc: no port another process could take first.
    assert lab.server.kernel_transports() == {"ipc"}


def test_capacity_form_labels_are_not_cut(lab: Lab) -> None:
    from playwright.sync_api import expect

    lab.start(CHAT)
    lab.hide_file_browser()
    panel = lab.run_all(CHAT)
    form = panel.locator(".lmreg-capacity-form")
    expect(form).to_be_visible(timeout=CHECKS_TIMEOUT_MS)
    labels = form.locator(".widget-label")
    shown = [labels.nth(i) for i in range(labels.count()) if labels.nth(i).inner_text().strip()]
    assert len(shown) >= 3
    for label in shown:
        text = label.inner_text().strip()
        assert CJK.search(text), text
        cut = label.evaluate("(el) => el.scrollWidth > el.clientWidth")
        assert not cut, f"label cut: {text!r}"
        assert "…" not in text
