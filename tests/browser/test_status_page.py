"""The fleet's status page in headless Chromium at 1280 px, in Chinese: health first.

The page is rendered from a fleet's round (four schools: one all down, one partly
down, one that cannot sign in, one well; long Chinese names), as the watch writes
it. No school or model name wraps; the all-down school and the one that cannot
sign in are red and listed first; nothing links outside the page.

``BROWSER_TEST_SHOTS=docs pytest -m browser tests/browser/test_status_page.py`` keeps
the screenshot in docs/.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lmreg_nb import i18n
from lmreg_nb.watch.alerts import ModelState, SchoolState
from lmreg_nb.watch.state import HistoryRow
from lmreg_nb.watch.status_html import render_status

if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]
REPO = Path(__file__).resolve().parents[2]
SCREEN = {"width": 1280, "height": 800}
NOW = 1_790_000_000_000
NAMES = {
    "bj1": "北京市海淀区某某实验学校高中部",
    "sh2": "上海市第二中学",
    "gz3": "广州市第三中学（南校区）",
    "cd4": "成都市第四中学",
}


@pytest.fixture(autouse=True)
def _chinese(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("TZ", raising=False)
    i18n.set_language("zh-CN")
    yield
    i18n.set_language("en")


def _model(school: str, n: int, status: str, kind: str | None = None) -> ModelState:
    return ModelState(
        f"mdl_{school}_{n}",
        f"qwen2.5-72b-instruct-awq-{school}-{n}",
        host=f"llm.{school}.edu.cn",
        status=status,
        fails=0 if status == "up" else 4,
        since_ms=None if status == "up" else NOW - 3_600_000,
        kind=kind,
        detail="no complete reply within 10 s" if kind else "",
        last_ok_ms=NOW if status == "up" else NOW - 3_600_000,
        latency_s=0.42 if status == "up" else None,
        school=school,
        key=f"{school}/mdl_{school}_{n}",
    )


def _page() -> str:
    states = [
        *(_model("bj1", n, "down", "timeout") for n in range(3)),
        _model("sh2", 0, "down", "http-5xx"),
        _model("sh2", 1, "up"),
        _model("cd4", 0, "up"),
        _model("cd4", 1, "up"),
    ]
    schools = [
        SchoolState("bj1", NAMES["bj1"], last_ok_ms=NOW),
        SchoolState("sh2", NAMES["sh2"], last_ok_ms=NOW),
        SchoolState(
            "gz3",
            NAMES["gz3"],
            problem="sign-in",
            fails=2,
            since_ms=NOW - 120_000,
            detail="平台拒绝了 appId 或 appSecret（40102）",
        ),
        SchoolState("cd4", NAMES["cd4"], last_ok_ms=NOW),
    ]
    history = {
        s.key: [HistoryRow(r, s.key, NOW - (30 - r) * 60_000, s.status == "up",
                           0.4 if s.status == "up" else None, s.kind) for r in range(30)]
        for s in states
    }  # fmt: skip
    return render_status(
        states, history, school="", generated_ms=NOW, round_number=31, fail_after=3,
        schools=schools, names=NAMES, refresh_s=None,
    )  # fmt: skip


def test_the_fleet_page_is_health_first_and_names_never_wrap(
    chromium: Browser, tmp_path: Path
) -> None:
    html = _page()
    assert "href" not in html and "src=" not in html  # links nowhere outside itself
    page = chromium.new_page(viewport=SCREEN)
    try:
        page.set_content(html, wait_until="load")
        shot = tmp_path / "status_page.zh-CN.png"
        page.screenshot(path=str(shot), full_page=True)
        wrapped = page.evaluate(
            """() => Array.from(document.querySelectorAll('span.n')).filter(el =>
                el.getClientRects().length > 1 ||
                el.getBoundingClientRect().height > 1.6 * parseFloat(
                    getComputedStyle(el).fontSize)
            ).map(el => el.textContent)"""
        )
        assert wrapped == [], wrapped
        rows = page.evaluate(
            """() => Array.from(document.querySelectorAll('table.schools tbody tr')).map(
                tr => [tr.cells[1].innerText, getComputedStyle(tr.cells[0].firstElementChild)
                       .backgroundColor])"""
        )
        overflow = page.evaluate("document.documentElement.scrollWidth")
    finally:
        page.close()
    assert overflow <= SCREEN["width"], overflow
    order = [name for name, _colour in rows]
    colours = dict(rows)
    red = "rgb(253, 224, 224)"
    # The all-down school and the one that cannot sign in first, both red; then amber, green.
    assert set(order[:2]) == {NAMES["bj1"], NAMES["gz3"]}, order
    assert colours[NAMES["bj1"]] == red and colours[NAMES["gz3"]] == red
    assert order[2:] == [NAMES["sh2"], NAMES["cd4"]]
    assert colours[NAMES["sh2"]] == "rgb(255, 243, 205)"
    assert colours[NAMES["cd4"]] == "rgb(212, 244, 221)"
    extra = os.environ.get("BROWSER_TEST_SHOTS")
    if extra:
        (REPO / extra).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, REPO / extra / shot.name)
