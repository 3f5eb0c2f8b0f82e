"""Helpers of the browser tests: the platform over raw HTTP, the page's language, and a
parameter typed into a notebook before JupyterLab opens it.

A test looks at what the platform really stores after clicking through a form
(raw HTTP, not the toolkit's client), independently of the code under test.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from lab_driver import Lab
    from playwright.sync_api import Locator

#: Any CJK ideograph: a zh-CN page shows the toolkit's own texts in Chinese.
CJK = re.compile(r"[\u4e00-\u9fff]")
#: Milliseconds to wait for a click's effect (a round trip to the sandbox).
CLICK_TIMEOUT_MS = 30_000


def expect_language(lang: str, target: Locator, english: str) -> None:
    """``target`` speaks ``lang``: Chinese characters in zh-CN, ``english`` in English.

    In zh-CN this fails while the catalog lacks the text: the toolkit's own
    words must be Chinese there, not merely JupyterLab's.
    """
    from playwright.sync_api import expect

    if lang == "zh-CN":
        expect(target).to_contain_text(CJK)
    else:
        expect(target).to_contain_text(english)


def _call(env: dict[str, str], path: str, body: dict[str, Any]) -> dict[str, Any]:
    with httpx.Client(base_url=env["LMREG_BASE_URL"], timeout=10.0) as http:
        answer = http.post(
            env["LMREG_TOKEN_PATH"],
            json={"appId": env["LMREG_APP_ID"], "appSecret": env["LMREG_APP_SECRET"]},
        )
        answer.raise_for_status()
        data = answer.json()["data"]
        headers = {"Authorization": f"Bearer {data['token']}", "X-ENV": data["env"]}
        answer = http.post(path, json=body, headers=headers)
        answer.raise_for_status()
        payload = answer.json()
        assert payload["code"] == 0, payload
        return dict(payload["data"])


def platform_models(env: dict[str, str]) -> list[dict[str, Any]]:
    """The account's models as the platform stores them."""
    return list(_call(env, "/openapi/v1/query-models", {})["models"])


def platform_register(env: dict[str, str], name: str, url: str, api_key: str) -> str:
    """Register a model straight on the platform; its modelId."""
    body = {"modelName": name, "registryUrl": url, "apiKey": api_key}
    return str(_call(env, "/openapi/v1/registry-model", body)["modelId"])


def connect_in_01(lab: Lab, notebook: str, app_secret: str) -> Locator:
    """Open notebook 01 as an engineer does, type the appSecret and click Connect; the
    credentials form once it shows the masked token."""
    from playwright.sync_api import expect

    lab.start(notebook)
    lab.hide_file_browser()
    panel = lab.run_all(notebook)
    form = panel.locator(".lmreg-credentials-form")
    form.locator(".lmreg-app-secret input").fill(app_secret)
    form.locator(".lmreg-connect-button").click()
    expect(form.locator(".lmreg-result")).to_contain_text("…", timeout=CLICK_TIMEOUT_MS)
    return form


def set_parameter(root: Path, notebook: str, shipped: str, typed: str) -> None:
    """The engineer changes one line of ``notebook``'s parameters cell."""
    import nbformat

    path = root / notebook
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    assert shipped in cell.source
    cell.source = cell.source.replace(shipped, typed)
    nbformat.write(nb, path)
