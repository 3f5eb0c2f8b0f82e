"""The principal's page, and the record's verdict badge, capacity box and one-request figures.

The principal's page is one screen in plain words: no code, no check names, no
addresses; the school, the verdict, what stands in the way and who must act, the
capacity sentence, the contact and the date, the full record linked below.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fakes.summaries import CAPACITY, CHECKS, demo_summary

from lmreg_nb import i18n
from lmreg_nb.records.html import render_summary_html
from lmreg_nb.records.principal import obstacles, render_principal_html
from lmreg_nb.records.text import render_summary_text
from lmreg_nb.summary import Check, Step


@pytest.fixture(autouse=True)
def _english_after(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("TZ", raising=False)
    yield
    i18n.set_language("en")


def _text(page: str) -> str:
    body = re.sub(r"<style>.*?</style>", "", page, flags=re.S)
    return re.sub(r"<[^>]+>", " ", body)


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_the_principals_page_is_plain_words(lang: str) -> None:
    i18n.set_language(lang)
    summary = demo_summary(lang)
    assert summary.status == "ok" and not summary.go_live.ready
    page = render_principal_html(summary, full_record="onboarding.html")
    text = _text(page)
    assert f'<html lang="{lang}">' in page
    for word in ("Demo Middle School", "Li Hua", "13800138000"):
        assert word in text
    served = "2 students chatting at once" if lang == "en" else "同时服务 2 名学生"
    assert served in text and "VERDICT-SENTENCE" not in text  # plain words, no percentile
    assert '<a href="onboarding.html">' in page
    # No code, no check names, no addresses, no field names.
    for jargon in [c.name for c in CHECKS] + ["registryUrl", "http://", "127.0.0.1", "env-demo",
                                               "usage.", "modelName", "demo-model"]:  # fmt: skip
        assert jargon not in text, jargon
    assert "<code" not in page and "<pre" not in page and "<script" not in page
    if lang == "zh-CN":
        assert "还不能" in text and "学校信息技术人员" in text
        assert "2026-09-01 14:05 Asia/Shanghai" in text
        rest = text
        for known in ("Demo Middle School", "Li Hua", "onboarding.html", "Asia/Shanghai",
                      "demo.example", "https"):  # fmt: skip
            rest = rest.replace(known, "")
        assert not re.search(r"[A-Za-z]{4,}", rest), rest  # every word of ours is Chinese
    found = obstacles(summary)
    assert len(found) == 3  # unreachable host, plain http, capacity below the class
    assert all(o.who == "school" for o in found)


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_a_ready_model_names_the_providers_next_step(lang: str) -> None:
    i18n.set_language(lang)
    url = "https://ai.school.example/v1/chat/completions"
    ready_capacity = {**CAPACITY, "capacity": {"concurrency": 8}}
    summary = demo_summary(
        lang, checks=[Check("reachable", True, "error", "ok")], capacity=ready_capacity,
        models=[{"modelName": "m", "registryUrl": url}], target_urls=[url],
    )  # fmt: skip
    assert summary.go_live.ready, summary.go_live.blockers
    text = _text(render_principal_html(summary))
    assert ("Provider" if lang == "en" else "服务商") in text
    assert obstacles(summary) == []


def test_a_failed_token_is_the_providers_to_fix() -> None:
    steps = [Step("contact card", True, ""), Step("token", False, "40102 wrong appSecret")]
    summary = demo_summary("en", steps=steps, capacity=None, checks=[])
    assert summary.status == "failed"
    found = obstacles(summary)
    assert found[0].who == "provider" and "account" in found[0].text
    assert "40102" not in _text(render_principal_html(summary))


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_no_green_badge_beside_not_ready(lang: str) -> None:
    i18n.set_language(lang)
    page = render_summary_html(demo_summary(lang))
    assert 'class="lmreg-status lmreg-status-ok"' not in page
    text = render_summary_text(demo_summary(lang)).splitlines()[0]
    assert ("not ready" if lang == "en" else "尚不能上线") in text
    assert not text.endswith(("OK", "成功"))


def test_a_capacity_below_the_class_is_not_ticked() -> None:
    page = render_summary_html(demo_summary("en"))
    step_line = next(li for li in page.split("<li>") if "capacity" in li and "VERDICT" in li)
    assert step_line.startswith("☒")
    ready = demo_summary("en", capacity={**CAPACITY, "capacity": {"concurrency": 4}})
    page = render_summary_html(ready)
    step_line = next(li for li in page.split("<li>") if "capacity" in li and "VERDICT" in li)
    assert step_line.startswith("☑")


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_figures_of_one_request_do_not_read_like_a_load_test(lang: str) -> None:
    i18n.set_language(lang)
    summary = demo_summary(lang)
    page = render_summary_html(summary)
    perf = page.split("lmreg-summary", 1)[1]
    perf = perf[perf.index(">Performance<" if lang == "en" else ">性能<") :]
    assert "p90" not in perf and "p99" not in perf
    assert ("one request" if lang == "en" else "一个请求") in perf
    assert "1 个请求," not in page  # no ASCII comma between Chinese words
    assert "p90" not in render_summary_text(summary)
