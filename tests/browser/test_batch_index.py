"""The batch's index.html, the page support shares most, fits a 1280 px window in headless
Chromium without scrolling sideways, in both languages (issue 40 item 11): long school
names, long registryUrls in the go-live causes, a run that never got a token, one that
only measured the checks' request, one with a load test and a capacity.

``BROWSER_TEST_SHOTS=docs pytest -m browser tests/browser/test_batch_index.py`` keeps
the screenshots.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from lmreg_nb import i18n
from lmreg_nb.batch.report import key_figures, write_index_html
from lmreg_nb.summary import CapacityRecord, Check, ModelRecord, Step, Summary, build_summary

if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]
REPO = Path(__file__).resolve().parents[2]
SCREEN = {"width": 1280, "height": 800}
STEPS = ("contact card", "token", "register", "list models", "chat endpoint checks")


@pytest.fixture(autouse=True)
def _english_after() -> Iterator[None]:
    yield
    i18n.set_language("en")


def _summary(school: str, url: str, **kw: Any) -> Summary:
    steps = kw.pop("steps", [Step(n, True, "done") for n in STEPS])
    kw.setdefault("checks", [])
    performance = kw.pop("performance", None)
    made = build_summary(
        school=school, contact=None, base_url=None, env=None, steps=steps,
        models=[ModelRecord("campus-llm", "mdl_0123456789abcdef01234567", url)],
        target_urls=[url], **kw,
    )  # fmt: skip
    # The figures as a record keeps them: read back once, as every reader does.
    return Summary.from_json({**made.to_json(), "performance": performance})


def _runs(lang: str) -> list[dict[str, Any]]:
    long_school = (
        "北京市海淀区某某实验学校高中部（示例学校名称比较长）"
        if lang == "zh-CN"
        else "Example Experimental Secondary School, Upper School Campus (a long name)"
    )
    local = "http://192.168.100.200:18000/v1"
    public = "https://llm.example-experimental-secondary-school.edu.cn/v1/chat/completions"
    load = {
        "requests": 40, "errors": 2, "ttft_ms": {"p50": 423.824, "p90": 911.5, "p99": 1803.2},
        "latency_ms": {"p50": 4100.0}, "requests_per_s": 3.214, "output_tokens_per_s": 410.9,
        "load_test": True,
    }  # fmt: skip
    one = {"requests": 1, "errors": 0, "ttft_ms": {"p50": 88.4}, "load_test": False}
    path = Check.from_json({
        "name": "url-path", "passed": False, "severity": "error", "cause": "chat-path",
        "owner": "school", "detail": f"{local} serves nothing: register {local}/chat/completions",
        "facts": {"registered": local, "status": 404, "url": local + "/chat/completions"},
    })  # fmt: skip
    rows = [
        ("r01-" + "x" * 40, "failed", _summary(long_school, local, checks=[path],
                                              performance=one, class_size=40)),
        ("r02", "ok", _summary("Demo Middle School", public, performance=load,
                               capacity=CapacityRecord(28, need=40), class_size=40)),
        ("r03", "failed", _summary(long_school, public, steps=[Step("token", False,
                                   "getting a token failed: the appId or appSecret is wrong")])),
    ]  # fmt: skip
    runs = []
    for run_id, status, summary in rows:
        runs.append({"run_id": run_id, "status": status, "duration_s": 41.2,
                     "html": "onboarding.html", "short_html": "onboarding-short.html",
                     "notebook": "onboarding.ipynb", **key_figures(summary)})  # fmt: skip
    runs.append({"run_id": "r04", "status": "failed", "error": "kernel died " * 20})
    return runs


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_the_batch_index_fits_1280_px_without_scrolling_sideways(
    chromium: Browser, tmp_path: Path, lang: str
) -> None:
    i18n.set_language(lang)
    index = tmp_path / "index.html"
    write_index_html(index, _runs(lang))
    page = chromium.new_page(viewport=SCREEN)
    try:
        page.goto(index.as_uri(), wait_until="load")
        shot = tmp_path / f"batch_index.{lang}.png"
        page.screenshot(path=str(shot), full_page=True)
        wide = int(page.evaluate("document.documentElement.scrollWidth"))
        seen = int(page.evaluate("document.documentElement.clientWidth"))
        # No cell squeezed to one character a line: the status column reads whole.
        status_width = int(page.evaluate(
            "document.querySelector('tbody tr td:nth-child(2)').getBoundingClientRect().width"
        ))  # fmt: skip
    finally:
        page.close()
    assert wide <= seen <= SCREEN["width"], (wide, seen)
    assert status_width >= 30
    extra = os.environ.get("BROWSER_TEST_SHOTS")
    if extra:
        (REPO / extra).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, REPO / extra / shot.name)
