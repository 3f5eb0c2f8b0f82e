"""The third walkthrough (issue 32), as a school engineer does it in JupyterLab, in Chinese.

The appSecret is typed into notebook 01's form, never in the environment. Then:
the onboarding notebook shows no red token error anywhere (its configuration
and token form see the cached token); registering there runs the checks, and
every result cell below follows them (no "尚未检查", no "未做压力测试"); notebook
05 checks the model registered in step 2 by its name, with no model address or
key in the environment, and its check table keeps 必需/建议 on one line.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from lab_driver import Lab, LabServer, lab_environment, running_lab
from lab_helpers import connect_in_01, platform_models, set_parameter

if TYPE_CHECKING:
    from playwright.sync_api import Locator

    from lmreg_nb.sandbox.process import SandboxInfo

pytestmark = [pytest.mark.browser, pytest.mark.timeout(420)]
LANG = "zh-CN"
TOKEN, ONBOARDING, CHAT = "01_get_token.ipynb", "onboarding.ipynb", "05_test_chat_endpoint.ipynb"
CHECKS_TIMEOUT_MS = 120_000
MODEL = f"walk-{secrets.token_hex(3)}"
#: Kernels know the platform and the appId only: no secret, no model address or key.
HIDDEN = ("LMREG_APP_SECRET", "LMREG_MODEL_URL", "LMREG_MODEL_API_KEY")


@pytest.fixture(scope="module")
def account(sandbox_process: SandboxInfo) -> dict[str, str]:
    made = sandbox_process.add_app("browser-walkthrough")
    return {
        **sandbox_process.env(),
        "LMREG_APP_ID": made["app_id"],
        "LMREG_APP_SECRET": made["app_secret"],
    }


@pytest.fixture(scope="module")
def lab_server(
    account: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LabServer]:
    """This module's JupyterLab (instead of the session's), its notebooks as the engineer
    edits them."""
    from lmreg_nb.runner.shipped import copy_notebooks

    root = tmp_path_factory.mktemp("lab-walk") / "notebooks"
    copy_notebooks(root, lang=LANG)
    # 05 checks the model registered in step 2 by its name.
    set_parameter(root, CHAT, 'registered: str = ""', f'registered: str = "{MODEL}"')
    # A smaller load test (one round of 4 at once instead of 5): what is proven here is
    # that the cells below follow the checks, not the load test's figures.
    set_parameter(root, ONBOARDING, "check_requests: int = 20", "check_requests: int = 4")
    home = tmp_path_factory.mktemp("lab-walk-home")
    kernels = {k: v for k, v in account.items() if k not in HIDDEN}
    kernels["LMREG_LANG"] = LANG
    with running_lab(root, home, lab_environment(home, kernels), LANG) as server:
        yield server


def _red(panel: Locator) -> list[str]:
    """Texts the page shows in the toolkit's red (an error or a failed outcome)."""
    return panel.evaluate(
        """(root) => Array.from(root.querySelectorAll('*'))
            .filter(el => getComputedStyle(el).color === 'rgb(207, 34, 46)')
            .map(el => el.innerText.trim()).filter(t => t)"""
    )


def _cell_with(panel: Locator, source: str) -> Locator:
    return panel.locator(".jp-CodeCell", has=panel.page.get_by_text(source, exact=True))


def test_01_then_onboarding_then_05_tell_one_truth(lab: Lab, account: dict[str, str]) -> None:
    from playwright.sync_api import expect

    # 01: the appSecret typed into the form.
    connect_in_01(lab, TOKEN, account["LMREG_APP_SECRET"])

    # The onboarding: no red token error; the configuration and the form see the token.
    lab.open(ONBOARDING)
    lab.hide_file_browser()
    panel = lab.run_all(ONBOARDING)
    red = _red(panel)
    assert not [t for t in red if "LMREG_APP_ID" in t or "LMREG_APP_SECRET" in t], red
    expect(panel.locator(".lmreg-outcome").first).to_contain_text("已缓存令牌")
    secret_box = panel.locator(".lmreg-credentials-form .lmreg-app-secret input")
    assert "有效期至" in (secret_box.get_attribute("placeholder") or "")
    lab.shot(panel.locator(".lmreg-outcome").first, "onboarding_configuration.png", publish=True)

    # Register there: the checks panel runs, and every result cell below follows it.
    register = panel.locator(".lmreg-register-form")
    register.locator(".lmreg-model-name input").fill(MODEL)
    register.locator(".lmreg-registry-url input").fill(account["LMREG_MODEL_URL"])
    register.locator(".lmreg-api-key input").fill(account["LMREG_MODEL_API_KEY"])
    register.locator(".lmreg-register-button").click()
    checks = panel.locator(".lmreg-checks-panel .lmreg-result")
    expect(checks).to_contain_text("reachable", timeout=CHECKS_TIMEOUT_MS)
    verdict = _cell_with(panel, "run.live(run.verdict)")
    figure = _cell_with(panel, "run.live(run.figure)")
    expect(verdict.locator(".jp-OutputArea")).not_to_contain_text(
        "尚未检查", timeout=CHECKS_TIMEOUT_MS
    )
    expect(figure.locator(".jp-OutputArea img")).to_be_visible(timeout=CHECKS_TIMEOUT_MS)
    assert "未做压力测试" not in figure.inner_text()
    assert [m["modelName"] for m in platform_models(account)].count(MODEL) == 1
    lab.shot(verdict, "onboarding_verdict_follows.png", publish=True)

    # 05: the model registered above, picked by its name; no LMREG_MODEL_URL anywhere.
    lab.open(CHAT)
    lab.hide_file_browser()
    panel = lab.run_all(CHAT)
    text = panel.inner_text()
    assert MODEL in text and "LMREG_MODEL_URL" not in text.split("## ")[-1]
    table = panel.locator("table.lmreg-table").first
    expect(table).to_be_visible()
    for word in ("必需", "建议"):
        cell = table.locator("td", has_text=word).first
        # One line box per line of text: "必需" stacked one character a line gives two.
        lines = cell.evaluate(
            "(el) => { const r = document.createRange(); r.selectNodeContents(el);"
            " return new Set(Array.from(r.getClientRects()).map(b => Math.round(b.top))).size; }"
        )
        assert lines <= 1, f"{word} wraps over {lines} lines"
    lab.shot(table, "check_table.png", publish=True)
    assert account["LMREG_APP_SECRET"] not in lab.page.content()
    assert account["LMREG_MODEL_API_KEY"] not in lab.page.content()
