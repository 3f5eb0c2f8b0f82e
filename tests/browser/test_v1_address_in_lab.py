"""The most common mistake, in a real JupyterLab (issue 40 item 2): a registryUrl that stops
at ``/v1``. Notebook 02's register form says in red that the address cannot answer a chat
and names the school's own address to register; notebook 05, checking the model as
registered, makes the path the finding (url-path, with that address) and judges neither
the key nor the model name on the 404.

``BROWSER_TEST_SHOTS=docs pytest -m browser tests/browser/test_v1_address_in_lab.py``
keeps the screenshots.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from lab_driver import Lab, LabServer, lab_environment, running_lab
from lab_helpers import CLICK_TIMEOUT_MS, set_parameter

if TYPE_CHECKING:
    from lmreg_nb.sandbox.process import SandboxInfo

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]
REGISTER, CHAT = "02_register_model.ipynb", "05_test_chat_endpoint.ipynb"
NAME = f"v1-{secrets.token_hex(3)}"
CHECKS_TIMEOUT_MS = 120_000


@pytest.fixture(scope="module")
def account(sandbox_process: SandboxInfo) -> dict[str, str]:
    made = sandbox_process.add_app("browser-v1")
    return {
        **sandbox_process.env(),
        "LMREG_APP_ID": made["app_id"],
        "LMREG_APP_SECRET": made["app_secret"],
    }


@pytest.fixture(scope="module")
def lab_server(
    account: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LabServer]:
    """This module's JupyterLab (instead of the session's), 05 naming the model of 02."""
    from lmreg_nb.runner.shipped import copy_notebooks

    root = tmp_path_factory.mktemp("lab-v1") / "notebooks"
    copy_notebooks(root, lang="en")
    # 05 checks the model registered in 02, by its name.
    set_parameter(root, CHAT, 'registered: str = ""', f'registered: str = "{NAME}"')
    home = tmp_path_factory.mktemp("lab-v1-home")
    with running_lab(root, home, lab_environment(home, account), "en") as server:
        yield server


def test_a_v1_address_is_named_as_the_fix_in_02_and_05(lab: Lab, account: dict[str, str]) -> None:
    from playwright.sync_api import expect

    stops_at_v1 = account["LMREG_MODEL_URL"].removesuffix("/chat/completions")
    fixed = stops_at_v1 + "/chat/completions"

    lab.start(REGISTER)
    lab.hide_file_browser()
    panel = lab.run_all(REGISTER)
    form = panel.locator(".lmreg-register-form")
    expect(form).to_be_visible()
    form.locator(".lmreg-model-name input").fill(NAME)
    form.locator(".lmreg-registry-url input").fill(stops_at_v1)
    form.locator(".lmreg-api-key input").fill(account["LMREG_MODEL_API_KEY"])
    form.locator(".lmreg-register-button").click()
    result = form.locator(".lmreg-result")
    expect(result).to_contain_text("cannot answer a chat", timeout=CHECKS_TIMEOUT_MS)
    expect(result).to_contain_text(f"Register {fixed}", timeout=CLICK_TIMEOUT_MS)
    assert "✔" not in result.inner_text().split("\n")[0]
    lab.shot(result, "register_v1_address.png")

    lab.open(CHAT)
    lab.hide_file_browser()
    panel = lab.run_all(CHAT)
    table = panel.locator("table.lmreg-table").first
    expect(table).to_contain_text("url-path", timeout=CHECKS_TIMEOUT_MS)
    rows = {
        r.locator("td").nth(0).inner_text(): r.inner_text() for r in table.locator("tbody tr").all()
    }
    assert fixed in rows["url-path"] and "✘" in rows["url-path"]
    for name in ("key-accepted", "model-name-served", "errors-are-json"):
        assert "not judged" in rows[name] and "–" in rows[name], rows[name]
    assert "the key was accepted" not in table.inner_text()
    lab.shot(table, "check_table_v1_address.png")
