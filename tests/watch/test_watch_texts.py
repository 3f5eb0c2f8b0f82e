"""What people read from the watch: from the catalog (pseudo-locale), in both languages, short."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_i18n_pseudo import _widget_texts, pseudo, pseudo_mo, unmarked

from lmreg_nb import i18n
from lmreg_nb.models import ms_to_datetime
from lmreg_nb.settings import Settings
from lmreg_nb.watch.alerts import DAY_MS, Event, ModelState
from lmreg_nb.watch.messages import (
    DIGEST_AFTER,
    KIND_TEXT,
    format_duration,
    render,
    round_messages,
    trial_message,
)
from lmreg_nb.watch.state import HistoryRow
from lmreg_nb.watch.status_html import render_status

__all__ = ["pseudo", "pseudo_mo"]  # fixtures used below

T = 1_790_000_000_000
DOWN = ModelState(
    "mdl_0123",
    "campus-llm",
    host="llm.school.example",
    status="down",
    fails=3,
    since_ms=T,
    kind="timeout",
    detail="no complete reply within 10 s",
    checked_ms=T + 180_000,
    alerted_ms=T + 120_000,
    tls_days=5,
    tls_expires_ms=T + 5 * DAY_MS,
    tls_issuer="Test CA",
)
UP = ModelState("mdl_0456", "other-llm", status="up", latency_s=0.42, last_ok_ms=T)
EVENTS = [
    Event("alert", DOWN, T + 120_000, since_ms=T),
    Event("recovery", UP, T + 3_720_000, since_ms=T),
    Event("tls-warning", DOWN, T),
]


@pytest.fixture
def chinese(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("TZ", raising=False)
    i18n.set_language("zh-CN")
    yield
    i18n.set_language("en")


def _all_texts() -> list[str]:
    texts = []
    for message in [*(render(e, "Schoolname") for e in EVENTS), trial_message("Schoolname")]:
        texts += [message.title, message.body]
    texts += [m.body for m in round_messages(EVENTS * 2, "Schoolname")]  # a digest
    history = {"mdl_0123": [HistoryRow(1, "mdl_0123", T, False, None, "timeout")]}
    texts.append(
        render_status(
            [DOWN, UP], history, school="Schoolname", generated_ms=T, round_number=4, fail_after=3
        )
    )
    return texts


def test_every_text_comes_from_the_catalog(pseudo: None) -> None:
    page = _all_texts()
    values = {"Schoolname", "campus-llm", "other-llm", "Test CA", "mdl_0123", "mdl_0456"}
    values |= {"no complete reply within 10 s"}  # a probe detail: the probe's own text
    import re

    strip = r"<style>.*?</style>|<script>.*?</script>|<[^>]+>"  # the page's own CSS, sorter
    plain = [re.sub(strip, " ", t, flags=re.S) for t in page]
    found = unmarked("\n".join(plain), values)
    assert found == [], found


def test_the_form_comes_from_the_catalog(pseudo: None, tmp_path: Path) -> None:
    pytest.importorskip("ipywidgets")
    from lmreg_nb.ui import MonitorForm
    from lmreg_nb.watch import Monitor

    monitor = Monitor("Schoolname", state_path=tmp_path / "s.sqlite3", settings=Settings())
    form = MonitorForm(monitor, contact_email="li@school.example")
    texts = list(_widget_texts(form.container))
    assert any("li@school.example" in t for t in texts)
    assert unmarked("\n".join(texts), {"Schoolname", "mailtos", "dingtalk"}) == []


def test_the_alert_in_english_fits_a_phone() -> None:
    alert = render(EVENTS[0], "No. 1 Middle School")
    assert alert.title == "[No. 1 Middle School] model campus-llm is down"
    assert alert.notify_type == "failure"
    assert alert.body.splitlines() == [
        "School: No. 1 Middle School",
        "Model: campus-llm (modelId mdl_0123)",
        f"Down since: {i18n.format_local_time(ms_to_datetime(T))} (3 checks in a row failed)",
        "What failed: it did not reply in time: no complete reply within 10 s",
        "What to do: Check that the model server runs and is not overloaded (GPU memory, queue).",
    ]
    recovery = render(EVENTS[1], "No. 1 Middle School")
    assert "It was down for 1 h 2 min" in recovery.body and recovery.notify_type == "success"
    warning = render(EVENTS[2], "No. 1 Middle School")
    assert warning.title.endswith("TLS certificate of campus-llm expires in 5 days")
    assert "issued by Test CA" in warning.body and warning.notify_type == "warning"
    for message in (alert, recovery, warning):
        assert len(message.body) < 400 and all(len(ln) <= 100 for ln in message.body.splitlines())


def test_the_alert_in_chinese(chinese: None) -> None:
    alert = render(EVENTS[0], "第一中学")
    assert alert.title == "【第一中学】模型「campus-llm」无法使用"
    lines = alert.body.splitlines()
    assert lines[0] == "学校：第一中学" and lines[1] == "模型：campus-llm（modelId mdl_0123）"
    assert "Asia/Shanghai (UTC+08:00)，已连续 3 次检查失败" in lines[2]
    assert lines[3].startswith("故障原因：没有按时回复：")
    assert lines[4] == "处理建议：请检查模型服务是否在运行、是否过载（显存、排队）。"
    recovery = render(EVENTS[1], "第一中学")
    assert recovery.title == "【第一中学】模型「other-llm」已恢复"
    assert "共中断 1 小时 2 分钟" in recovery.body
    warning = render(EVENTS[2], "第一中学")
    assert warning.title == "【第一中学】模型「campus-llm」的 TLS 证书将在 5 天后到期"
    assert trial_message("第一中学").title == "【第一中学】lmreg-nb watch 测试告警"
    assert all(i18n._(text) != text for text in KIND_TEXT.values())  # each kind translated


def test_many_events_of_one_round_go_as_one_digest() -> None:
    assert len(round_messages(EVENTS, "S")) == len(EVENTS) <= DIGEST_AFTER
    many = [Event("alert", DOWN, T, since_ms=T)] * 12 + [Event("recovery", UP, T, since_ms=T)]
    (digest,) = round_messages(many, "S")
    assert digest.title == "[S] 13 models changed state" and digest.notify_type == "failure"
    lines = digest.body.splitlines()
    assert len(lines) == 12  # the school, 10 models, "and 3 more"
    assert lines[1].startswith("down: campus-llm (modelId mdl_0123): it did not reply in time")
    assert lines[-1] == "… and 3 more: see the status page"


@pytest.mark.parametrize(
    ("ms", "en", "zh"),
    [
        (42_000, "42 s", "42 秒"),
        (3 * 60_000, "3 min", "3 分钟"),
        (125 * 60_000, "2 h 5 min", "2 小时 5 分钟"),
        (26 * 3600_000, "1 d 2 h", "1 天 2 小时"),
    ],
)
def test_durations_in_both_languages(ms: int, en: str, zh: str) -> None:
    assert format_duration(ms) == en
    i18n.set_language("zh-CN")
    try:
        assert format_duration(ms) == zh
    finally:
        i18n.set_language("en")


def test_the_status_page_escapes_and_orders(chinese: None) -> None:
    hostile = ModelState(
        "m<1>",
        "<script>x</script>",
        status="failing",
        fails=1,
        kind="http-5xx",
        detail="<b>500</b>",
    )
    page = render_status(
        [UP, hostile, DOWN], {}, school="第一中学", generated_ms=T, round_number=2, fail_after=3
    )
    assert "<script>x" not in page and "&lt;script&gt;" in page and "<b>500" not in page
    assert page.index("campus-llm") < page.index("&lt;script") < page.index("other-llm")
    assert '<html lang="zh-CN">' in page and "第一中学已注册的模型" in page
    from lmreg_nb.watch.status_html import _SORT

    # The page's one script is its own sorter (a fixed text); nothing from a server runs.
    assert page.count("<script") == 1 and _SORT in page
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")
