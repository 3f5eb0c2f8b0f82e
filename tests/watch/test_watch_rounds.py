"""Rounds against real loopback servers: the sandbox platform, a mock school model, targets.

Each test has its own account, so the models it registers are its own; rounds
run in-process (one ``asyncio.run`` each), registrations change between them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from watch_helpers import MODEL_KEY, T0, Account, Clock, SchoolModel, Smtp, Webhook, run_round

from lmreg_nb import i18n
from lmreg_nb.watch.notify import Notifier, parse_targets
from lmreg_nb.watch.state import StateStore
from lmreg_nb.watch.watcher import WatchConfig, Watcher


def _watcher(
    account: Account,
    state: Path,
    urls: list[str],
    clock: Clock,
    *,
    fail_after: int = 2,
    school: str = "Canary Middle School",
    timeout: float | None = None,
) -> Watcher:
    """``timeout``: the models' calls' (LMREG_TIMEOUT) instead of the account's."""
    targets = parse_targets(urls)
    config = WatchConfig(state_path=state, fail_after=fail_after, school=school, allow_private=True)
    store = StateStore(state)
    store.acquire()
    settings = account.settings if timeout is None else replace(account.settings, timeout=timeout)
    return Watcher(
        settings, account.client(), store, targets, Notifier(targets), config, clock=clock
    )


@pytest.fixture
def state(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "watch" / "state.sqlite3"


def _close(watcher: Watcher) -> None:
    watcher.store.close()
    watcher.registry.close()


def test_one_alert_after_n_failed_rounds_and_one_recovery(
    account: Account, school_model: SchoolModel, webhook: Webhook, state: Path
) -> None:
    clock = Clock()
    model_id = account.register("qwen-watch", school_model.url())
    watcher = _watcher(account, state, [webhook.url], clock)
    try:
        first = run_round(watcher, clock)
        assert [s.status for s in first.states] == ["up"] and webhook.posts == []  # baseline
        account.modify(model_id, "qwen-watch", school_model.url("status-500"))
        assert [e.type for e in run_round(watcher, clock).events] == []  # 1 of 2: not yet
        assert [e.type for e in run_round(watcher, clock).events] == ["alert"]
        assert [e.type for e in run_round(watcher, clock).events] == []  # still down: no repeat
        assert [p["type"] for p in webhook.posts] == ["failure"]
        account.modify(model_id, "qwen-watch", school_model.url())
        back = run_round(watcher, clock)
        assert [e.type for e in back.events] == ["recovery"] and back.down == []
        run_round(watcher, clock)
    finally:
        _close(watcher)
    assert [p["type"] for p in webhook.posts] == ["failure", "success"]
    alert, recovery = webhook.posts
    assert "Canary Middle School" in alert["message"] and "qwen-watch" in alert["title"]
    assert f"modelId {model_id}" in alert["message"]
    assert "HTTP 5xx" in alert["message"] and "What to do:" in alert["message"]
    assert "Down since: " in alert["message"] and "(2 checks in a row failed)" in alert["message"]
    # Down from the first failed round (round 2) to the passing one (round 5): 3 minutes.
    assert "It was down for 3 min" in recovery["message"]


def test_a_restart_during_an_outage_neither_alerts_again_nor_forgets_the_start(
    account: Account, school_model: SchoolModel, webhook: Webhook, state: Path
) -> None:
    clock = Clock()
    model_id = account.register("restart-me", school_model.url("status-500"))
    watcher = _watcher(account, state, [webhook.url], clock)
    try:
        run_round(watcher, clock)
        run_round(watcher, clock)
    finally:
        _close(watcher)
    assert [p["type"] for p in webhook.posts] == ["failure"]
    clock.now += 3600  # the process was away for an hour
    again = _watcher(account, state, [webhook.url], clock)
    try:
        report = run_round(again, clock)
        assert report.events == [] and report.down[0].since_ms == int(T0 * 1000)
        account.modify(model_id, "restart-me", school_model.url())
        assert [e.type for e in run_round(again, clock).events] == ["recovery"]
    finally:
        _close(again)
    assert [p["type"] for p in webhook.posts] == ["failure", "success"]
    assert "It was down for 1 h 3 min" in webhook.posts[1]["message"]


def test_models_registered_or_removed_mid_watch_are_picked_up_or_dropped(
    account: Account, school_model: SchoolModel, webhook: Webhook, state: Path
) -> None:
    clock = Clock()
    account.register("first", school_model.url())
    watcher = _watcher(account, state, [webhook.url], clock, fail_after=1)
    try:
        assert [s.model_name for s in run_round(watcher, clock).states] == ["first"]
        late = account.register("late", school_model.url("status-500"))
        report = run_round(watcher, clock)
        assert sorted(s.model_name for s in report.states) == ["first", "late"]
        assert [(e.type, e.state.model_id) for e in report.events] == [("alert", late)]
        account.modify(late, "late-renamed", school_model.url("status-500"))
        report = run_round(watcher, clock)
        assert report.events == [] and {s.model_name for s in report.down} == {"late-renamed"}
        account.remove(late)
        report = run_round(watcher, clock)
        assert [s.model_name for s in report.states] == ["first"] and report.events == []
        assert set(watcher.store.models()) == {s.key for s in report.states}
        assert {h.key for h in watcher.store.history()} == {report.states[0].key}
    finally:
        _close(watcher)


def test_an_smtp_alert_arrives_with_what_a_person_needs(
    account: Account, school_model: SchoolModel, smtp: Smtp, state: Path
) -> None:
    clock = Clock()
    model_id = account.register("mail-me", school_model.url("slow"))
    # The model hangs: a short timeout ends its call (the mail is what is tested).
    watcher = _watcher(account, state, [smtp.url], clock, fail_after=1, timeout=0.5)
    try:
        report = run_round(watcher, clock)
    finally:
        _close(watcher)
    assert [e.type for e in report.events] == ["alert"]
    assert len(smtp.mails) == 1
    mail = smtp.mails[0]
    assert mail["To"] == "li.hua@school.example" and "mail-me" in mail["Subject"]
    body = mail.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert f"modelId {model_id}" in body and "did not reply in time" in body
    assert "What to do: Check that the model server runs" in body


def test_a_target_that_fails_is_retried_next_round_and_never_stops_the_watch(
    account: Account,
    school_model: SchoolModel,
    webhook: Webhook,
    state: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    account.register("retry-me", school_model.url("status-500"))
    dead = "json://127.0.0.1:9/nobody/listens"  # port 9: refused
    watcher = _watcher(account, state, [webhook.url, dead], clock, fail_after=1)
    webhook.fail = True
    caplog.set_level(logging.INFO, logger="lmreg_nb.watch")
    try:
        run_round(watcher, clock)
        assert webhook.posts == []
        assert "could not send to json://127.0.0.1:" in caplog.text
        assert "trying again next round" in caplog.text
        webhook.fail = False
        run_round(watcher, clock)
        assert len(watcher.store.pending(watcher.targets[1].id)) == 1  # the dead one keeps it
    finally:
        _close(watcher)
    assert [p["type"] for p in webhook.posts] == ["failure"]  # once, a round late


def test_alerts_in_chinese(
    account: Account,
    school_model: SchoolModel,
    webhook: Webhook,
    state: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TZ", raising=False)
    i18n.set_language("zh-CN")
    clock = Clock()
    model_id = account.register("中文模型", school_model.url("replacement-char"))
    watcher = _watcher(account, state, [webhook.url], clock, fail_after=1, school="第一中学")
    try:
        run_round(watcher, clock)
        account.modify(model_id, "中文模型", school_model.url())
        run_round(watcher, clock)
    finally:
        _close(watcher)
        i18n.set_language("en")
    alert, recovery = webhook.posts
    assert alert["title"] == "【第一中学】模型「中文模型」无法使用"
    lines = alert["message"].splitlines()
    assert lines[0] == "学校：第一中学"
    assert lines[1] == f"模型：中文模型（modelId {model_id}）"
    assert lines[2].startswith("故障开始：") and "Asia/Shanghai (UTC+08:00)" in lines[2]
    assert "连续 1 次检查失败" in lines[2]
    assert lines[3].startswith("故障原因：") and "乱码" in lines[3] and "U+FFFD" in lines[3]
    assert lines[4].startswith("处理建议：")
    assert recovery["title"] == "【第一中学】模型「中文模型」已恢复"
    assert "共中断 1 分钟" in recovery["message"]
    assert all(len(line) <= 120 for p in webhook.posts for line in p["message"].splitlines())


def test_a_refused_key_is_said_in_plain_words(
    account: Account, school_model: SchoolModel, webhook: Webhook, state: Path
) -> None:
    clock = Clock()
    account.register("wrong-key", school_model.url(), key="sk-not-the-right-key-0000")
    watcher = _watcher(account, state, [webhook.url], clock, fail_after=1)
    try:
        report = run_round(watcher, clock)
    finally:
        _close(watcher)
    assert report.states[0].kind == "refused-key"
    assert "refused the registered apiKey" in webhook.posts[0]["message"]
    assert MODEL_KEY not in webhook.posts[0]["message"]


def test_the_watch_and_the_checks_judge_an_address_by_one_rule() -> None:
    # The watch's guard (do not post the apiKey to the provider's own network) had its own
    # copy of the rule, which the check's url-public-host had too, and both missed
    # carrier-grade NAT and IPv6 addresses carrying a private IPv4 one.
    import asyncio

    from lmreg_nb.probe.checks.conformance import private_only
    from lmreg_nb.watch.rounds import unreachable_address

    for address in ("127.0.0.1", "100.64.0.1", "::ffff:10.0.0.1", "::127.0.0.1", "fe80::1%2",
                    "8.8.8.8", "2606:4700::1111"):  # fmt: skip
        blocked = asyncio.run(unreachable_address(address, 1.0))
        assert (blocked == address) is private_only([address]), address
    assert asyncio.run(unreachable_address("100.64.0.1", 1.0)) == "100.64.0.1"
    assert asyncio.run(unreachable_address("8.8.8.8", 1.0)) is None
