"""The principal's page fits one 1280x800 screen in headless Chromium, in both languages,
also in its worst case (every kind of obstacle, a long school name and capacity sentence).

``BROWSER_TEST_SHOTS=docs pytest -m browser tests/browser/test_principal_page.py``
refreshes docs/principal_page[.zh-CN].png from the demo-like summary.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from fakes.summaries import CAPACITY, demo_summary  # tests/ is on the path (its conftest)

from lmreg_nb import i18n
from lmreg_nb.records.principal import obstacles, render_principal_html
from lmreg_nb.summary import Check, Step

if TYPE_CHECKING:
    from playwright.sync_api import Browser


pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]
REPO = Path(__file__).resolve().parents[2]
SCREEN = {"width": 1280, "height": 800}


@pytest.fixture(autouse=True)
def _english_after(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("TZ", raising=False)
    yield
    i18n.set_language("en")


def _worst(lang: str):  # type: ignore[no-untyped-def]
    steps = [
        Step("contact card", False, "contact_mobile: bad"),
        Step("token", False, "40102"),
        Step("register", False, "registryUrl refused"),
    ]
    checks = [
        Check("tls-certificate", False, "error", "self-signed"),
        Check("stream", False, "error", "no [DONE]"),
        Check("url-public-host", False, "warning", "private"),
        Check("url-https", False, "warning", "http"),
    ]
    long_verdict = str(CAPACITY["verdict"]) + " " + "The model serves 2 chats at once. " * 4
    return demo_summary(
        lang,
        school="北京市海淀区某某实验学校高中部（示例学校名称比较长）" if lang == "zh-CN"
        else "Example Experimental Secondary School, Upper School Campus (a long name)",
        steps=steps, checks=checks, capacity={**CAPACITY, "verdict": long_verdict},
    )  # fmt: skip


def _height(browser: Browser, page_html: str, shot: Path) -> int:
    page = browser.new_page(viewport=SCREEN)
    try:
        page.set_content(page_html, wait_until="load")
        page.screenshot(path=str(shot))
        return int(page.evaluate("document.documentElement.scrollHeight"))
    finally:
        page.close()


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_the_principals_page_fits_one_screen(chromium: Browser, tmp_path: Path, lang: str) -> None:
    i18n.set_language(lang)
    name = "principal_page.png" if lang == "en" else f"principal_page.{lang}.png"
    demo = render_principal_html(demo_summary(lang), full_record="onboarding.html")
    assert _height(chromium, demo, tmp_path / name) <= SCREEN["height"]
    worst = _worst(lang)
    assert len(obstacles(worst)) >= 5
    assert _height(chromium, render_principal_html(worst, full_record="x.html"),
                   tmp_path / f"worst-{name}") <= SCREEN["height"]  # fmt: skip
    extra = os.environ.get("BROWSER_TEST_SHOTS")
    if extra:
        (REPO / extra).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tmp_path / name, REPO / extra / name)
