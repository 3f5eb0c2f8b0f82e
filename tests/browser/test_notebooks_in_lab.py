"""The register and list notebooks in a real JupyterLab, driven in headless Chromium.

A school engineer's path: open the models list, open the register notebook,
type a bad registryUrl and see the inline error, fix it, click Register, then
run the list again and see the new model; the sandbox platform (queried over
HTTP, independently of the toolkit's client) holds it.
"""

from __future__ import annotations

import re
import secrets
from typing import TYPE_CHECKING

import pytest
from lab_helpers import CLICK_TIMEOUT_MS, expect_language, platform_models

if TYPE_CHECKING:
    from conftest import Lab

    from lmreg_nb.sandbox.process import SandboxInfo

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]


REGISTER = "02_register_model.ipynb"
MODELS = "04_list_models.ipynb"
BAD_URL = "not a url"


def test_register_a_model_in_jupyterlab_and_see_it_listed(
    lab: Lab, lab_account: dict[str, str], sandbox_process: SandboxInfo
) -> None:
    from playwright.sync_api import expect

    name = f"browser-{secrets.token_hex(4)}"
    model_url = lab_account["LMREG_MODEL_URL"]

    # The list of the account, before anything is registered: filled at once.
    lab.start(MODELS)
    models_panel = lab.run_all(MODELS)
    table = models_panel.locator(".lmreg-table").first
    expect(table).to_be_visible()
    expect(table).to_contain_text("modelName")
    expect(table).not_to_contain_text(name)

    # The register form: a bad registryUrl shows its inline error and registers nothing.
    lab.open(REGISTER)
    lab.hide_file_browser()  # the screenshots show the notebook at full width
    register_panel = lab.run_all(REGISTER)
    form = register_panel.locator(".lmreg-register-form")
    expect(form).to_be_visible()
    expect_language(lab.server.lang, form.locator(".lmreg-register-button"), "Register")
    form.locator(".lmreg-model-name input").fill(name)
    api_key_input = form.locator(".lmreg-api-key input")
    # A secret never travels to the browser as widget state (it would be saved with it).
    assert api_key_input.input_value() != sandbox_process.model_api_key
    # A key of its own (not LMREG_MODEL_API_KEY) shows that the typed key is the one sent.
    typed_key = f"sk-browser-{secrets.token_hex(8)}"
    api_key_input.fill(typed_key)
    url_input = form.locator(".lmreg-registry-url input")
    url_error = form.locator(".lmreg-registry-url-error")
    url_input.fill(BAD_URL)
    url_input.blur()
    expect(url_error).to_have_class(re.compile(r"\blmreg-error\b"))
    expect(url_error).to_contain_text(re.compile(r"\S"), timeout=CLICK_TIMEOUT_MS)
    error_text = url_error.inner_text().strip()
    lab.shot(form, "register_form_error.png")
    form.locator(".lmreg-register-button").click()
    # The handler ran: it takes the key out of the field at once (no secret left in
    # widget state); then validation refuses the URL and nothing is sent.
    expect(api_key_input).to_have_value("", timeout=CLICK_TIMEOUT_MS)
    expect(url_error).to_have_text(error_text)
    expect(form.locator(".lmreg-result")).to_have_text("")
    assert all(m.get("modelName") != name for m in platform_models(lab_account))

    # Fixed: the error goes away (warnings about a loopback http URL may stay).
    url_input.fill(model_url)
    url_input.blur()
    expect(url_error).not_to_have_text(error_text, timeout=CLICK_TIMEOUT_MS)
    api_key_input.fill(typed_key)  # the form clears the key on every click
    form.locator(".lmreg-register-button").click()
    result = form.locator(".lmreg-result")
    expect(result).to_contain_text(name, timeout=CLICK_TIMEOUT_MS)
    expect(api_key_input).to_have_value("")
    lab.shot(
        register_panel.locator(".jp-Cell", has=lab.page.locator(".lmreg-register-form")),
        "register_form.png",
        publish=True,
    )

    stored = [m for m in platform_models(lab_account) if m.get("modelName") == name]
    assert len(stored) == 1, stored
    assert stored[0]["registryUrl"] == model_url
    assert stored[0]["apiKey"] == typed_key

    # The list, run again as its notebook says, shows the new model; its apiKey only masked.
    models_panel = lab.run_all(MODELS)
    expect(table).to_contain_text(name, timeout=CLICK_TIMEOUT_MS)
    expect(table).to_contain_text(model_url)
    lab.shot(
        models_panel.locator(".jp-CodeCell", has=lab.page.locator(".lmreg-table")).first,
        "models_table.png",
        publish=True,
    )
    page_text = lab.page.locator("body").inner_text()
    assert typed_key not in page_text
    assert typed_key[-4:] in page_text  # shown masked to its last 4 characters
    assert lab_account["LMREG_APP_SECRET"] not in lab.page.content()
