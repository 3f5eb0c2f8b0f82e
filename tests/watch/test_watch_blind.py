"""Red-team pass 3, the watch: blind without telling anyone (item 3), calling any address the
platform lists (item 4), one malformed entry hiding every model (item 5), a locked state file
(item 7). A scripted platform (tests/fakes/loopback_platform.py), the mock school model, a
catching server standing for the provider's internal service and a webhook target, all
served in this process (tests/fakes/hosts.py).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fakes import hosts
from fakes.loopback_platform import cli_env, envelope_error, loopback_platform
from watch_helpers import MODEL_KEY, SchoolModel, Webhook, run_round

from lmreg_nb.registry import retry
from lmreg_nb.registry.client import RegistryClient
from lmreg_nb.settings import Settings
from lmreg_nb.watch.config import RoundReport
from lmreg_nb.watch.metrics import WatchMetrics
from lmreg_nb.watch.notify import Notifier, parse_targets
from lmreg_nb.watch.state import StateStore
from lmreg_nb.watch.watcher import WatchConfig, Watcher


@dataclass
class Catcher:
    """An internal service: it records every request that reaches it."""

    port: int
    seen: list[str] = field(default_factory=list)


@pytest.fixture
def catcher() -> Iterator[Catcher]:
    box = Catcher(0)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = dict(scope["headers"])
        box.seen.append(headers.get(b"authorization", b"").decode("latin-1"))
        body = b'{"internal": "secret-ops-data"}'
        length = str(len(body)).encode()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", length)]})  # fmt: skip
        await send({"type": "http.response.body", "body": body})

    with hosts.served(app) as base:
        box.port = int(base.rsplit(":", 1)[1])
        yield box


def _model(name: str, url: str, model_id: str = "") -> dict[str, str]:
    return {"modelId": model_id or f"id-{name}", "modelName": name, "registryUrl": url,
            "apiKey": MODEL_KEY}  # fmt: skip


def _watcher(
    base_url: str,
    tmp_path: Path,
    webhook: Webhook,
    *,
    fail_after: int = 2,
    allow_private: bool = True,
    metrics: WatchMetrics | None = None,
    rounds: int | None = None,
) -> Watcher:
    settings = Settings.load(environ=cli_env(base_url, tmp_path) | {"LMREG_TIMEOUT": "3"})
    targets = parse_targets([webhook.url])
    state = tmp_path / "state.sqlite3"
    store = StateStore(state, busy_ms=200)
    store.acquire()
    config = WatchConfig(
        state_path=state,
        fail_after=fail_after,
        allow_private=allow_private,
        school="Blind School",
        rounds=rounds,
    )
    return Watcher(
        settings,
        RegistryClient(settings),
        store,
        targets,
        Notifier(targets),
        config,
        metrics=metrics,
    )


def _close(watcher: Watcher) -> None:
    watcher.store.close()
    assert watcher.registry is not None
    watcher.registry.close()


def test_a_platform_that_stops_answering_is_one_alert_one_recovery_and_exit_1(
    school_model: SchoolModel, webhook: Webhook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The client's retries of each 503 wait 10 ms, not 0.5 s and more: the rounds are the
    # point here (the backoff itself: tests/registry/test_client.py).
    monkeypatch.setattr(retry, "BACKOFF_BASE_S", 0.01)
    metrics = WatchMetrics()
    with loopback_platform() as (base, script):
        script.models = [_model("blind-llm", school_model.url())]
        watcher = _watcher(base, tmp_path, webhook, metrics=metrics, rounds=1)
        try:
            assert run_round(watcher).states[0].status == "up"
            script.query_error = (503, envelope_error(50300, "maintenance"), {})
            reports = [run_round(watcher) for _ in range(3)]
            assert [p["title"] for p in webhook.posts] == [
                "[Blind School] monitoring cannot see the models"
            ]
            assert all(r.blind for r in reports)
            # The model is not reported up as if nothing happened; the page says stale.
            text = metrics.text()
            assert 'lmreg_platform_up{run_id="",school=""} 0.0' in text
            assert "lmreg_last_read_timestamp_seconds" in text
            page = watcher.config.status_path.read_text(encoding="utf-8")
            assert "stale: the models cannot be read" in page and "cannot read the models" in page
            # --rounds ends with exit 1 while blind.
            assert asyncio.run(_run(watcher)) == 1
            script.query_error = None
            run_round(watcher)
            assert [p["type"] for p in webhook.posts] == ["failure", "success"]
            assert webhook.posts[1]["title"] == "[Blind School] monitoring sees the models again"
        finally:
            _close(watcher)


async def _run(watcher: Watcher) -> int:
    async with watcher:
        return await watcher.run(asyncio.Event())


def test_loopback_and_private_addresses_are_not_called(
    catcher: Catcher, webhook: Webhook, tmp_path: Path
) -> None:
    internal = f"http://127.0.0.1:{catcher.port}/v1/chat/completions"
    by_name = f"http://localhost:{catcher.port}/v1/chat/completions"
    with loopback_platform() as (base, script):
        script.models = [_model("internal", internal), _model("by-name", by_name)]
        watcher = _watcher(base, tmp_path, webhook, fail_after=1, allow_private=False)
        try:
            report = run_round(watcher)
        finally:
            _close(watcher)
    assert catcher.seen == []  # the apiKey went nowhere
    assert {s.kind for s in report.states} == {"private-address"}
    page = watcher.config.status_path.read_text(encoding="utf-8")
    assert "secret-ops-data" not in page
    assert "registered at an address the platform cannot reach" in page
    titles = sorted(p["title"] for p in webhook.posts)
    assert titles == [
        "[Blind School] model by-name is down",
        "[Blind School] model internal is down",
    ]
    assert "address the platform cannot reach" in webhook.posts[0]["message"]


def test_allow_private_calls_them_for_a_rehearsal(
    catcher: Catcher, webhook: Webhook, tmp_path: Path
) -> None:
    internal = f"http://127.0.0.1:{catcher.port}/v1/chat/completions"
    with loopback_platform() as (base, script):
        script.models = [_model("internal", internal)]
        watcher = _watcher(base, tmp_path, webhook, fail_after=1, allow_private=True)
        try:
            run_round(watcher)
        finally:
            _close(watcher)
    assert catcher.seen == [f"Bearer {MODEL_KEY}"]


def test_a_malformed_entry_is_skipped_and_the_rest_watched(
    school_model: SchoolModel, webhook: Webhook, tmp_path: Path
) -> None:
    with loopback_platform() as (base, script):
        good = _model("good-llm", school_model.url())
        script.models = [None, "oops", good]  # type: ignore[list-item]
        watcher = _watcher(base, tmp_path, webhook)
        try:
            report = run_round(watcher)
        finally:
            _close(watcher)
    assert [s.model_name for s in report.states] == ["good-llm"] and not report.blind


def test_a_locked_state_file_is_logged_and_the_round_kept_for_the_next(
    school_model: SchoolModel, webhook: Webhook, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with loopback_platform() as (base, script):
        script.models = [_model("locked-llm", school_model.url("status-500"))]
        watcher = _watcher(base, tmp_path, webhook, fail_after=2)
        other = sqlite3.connect(tmp_path / "state.sqlite3", isolation_level=None)
        try:
            run_round(watcher)  # 1 of 2, written
            other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
            second = run_round(watcher)  # 2 of 2: down, but the state cannot be written
            assert [e.type for e in second.events] == ["alert"]
            other.execute("ROLLBACK")
            third = run_round(watcher)
            assert third.events == []  # the alert is not decided twice
        finally:
            other.close()
            _close(watcher)
    assert "database is locked" in caplog.text and "Traceback" not in caplog.text
    assert [p["title"] for p in webhook.posts] == ["[Blind School] model locked-llm is down"]
    with StateStore(tmp_path / "state.sqlite3") as store:
        assert store.last_round() == 3 and store.models()["/id-locked-llm"].fails == 3


def _tls_round(
    webhook: Webhook, tmp_path: Path, urls: dict[str, str], concurrency: int = 8
) -> RoundReport:
    """One round over models at ``urls`` (name -> https address), 0.5 s each."""
    with loopback_platform() as (base, script):
        script.models = [_model(name, url) for name, url in urls.items()]
        settings = Settings.load(environ=cli_env(base, tmp_path) | {"LMREG_TIMEOUT": "0.5"})
        targets = parse_targets([webhook.url])
        store = StateStore(tmp_path / "state.sqlite3")
        store.acquire()
        config = WatchConfig(
            state_path=tmp_path / "state.sqlite3", concurrency=concurrency, allow_private=True
        )
        watcher = Watcher(
            settings, RegistryClient(settings), store, targets, Notifier(targets), config
        )
        try:
            return run_round(watcher)
        finally:
            _close(watcher)


def test_hanging_tls_handshakes_cost_one_timeout_however_many_hang(
    webhook: Webhook, tmp_path: Path
) -> None:
    from fakes.hostile import closing_server

    # 40 models behind one host whose TLS handshake never completes, 4 call slots and a
    # 0.5 s timeout: called one by one they would take 10 waves (10 s before: handshake,
    # then the call); the handshake made once, outside the slots, takes one timeout.
    with closing_server(silent=True) as port:
        url = f"https://127.0.0.1:{port}/v1/chat/completions"
        report = _tls_round(webhook, tmp_path, {f"tls-{i:02d}": url for i in range(40)}, 4)
    assert len(report.states) == 40 and {s.kind for s in report.states} == {"timeout"}
    assert "TLS handshake" in report.states[0].detail
    assert report.seconds < 2.5, report.seconds  # one 0.5 s bound, not ten


def test_a_host_that_drops_the_connection_is_not_blamed_on_tls(
    webhook: Webhook, tmp_path: Path
) -> None:
    from fakes.hostile import closing_server

    # A firewall that drops the packets: no TCP connection within the timeout. It read
    # "the TLS handshake ... did not complete", as for a port that accepts and never
    # answers the hello (a plain-http port), which is the other model here.
    dropped = hosts.serve_dropped()
    try:
        with closing_server(silent=True) as silent:
            report = _tls_round(webhook, tmp_path, {
                "dropped": f"https://127.0.0.1:{dropped}/v1/chat/completions",
                "plain": f"https://127.0.0.1:{silent}/v1/chat/completions",
            })  # fmt: skip
    finally:
        hosts.stop(dropped)
    details = sorted(s.detail for s in report.states)
    assert {s.kind for s in report.states} == {"timeout"}, details
    assert any(d.startswith(f"connecting to 127.0.0.1:{dropped} timed out") for d in details)
    assert any(f"TLS handshake with 127.0.0.1:{silent}" in d and "plain http" in d
               for d in details), details  # fmt: skip
    assert not any("TLS" in d and str(dropped) in d for d in details), details


def test_a_target_that_comes_back_gets_its_backlog_as_one_digest(
    school_model: SchoolModel, webhook: Webhook, tmp_path: Path
) -> None:
    with loopback_platform() as (base, script):
        watcher = _watcher(base, tmp_path, webhook, fail_after=1)
        webhook.fail = True
        try:
            for i in range(5):  # one more model down each round: five alerts wait
                script.models.append(_model(f"down-{i}", school_model.url("status-500")))
                run_round(watcher)
            assert webhook.posts == []
            webhook.fail = False
            run_round(watcher)
        finally:
            _close(watcher)
    assert len(webhook.posts) == 1, [p["title"] for p in webhook.posts]
    post = webhook.posts[0]
    assert post["title"] == "5 notifications from lmreg-nb watch" and post["type"] == "failure"
    assert all(f"model down-{i} is down" in post["message"] for i in range(5))


def test_names_are_neutralised_and_models_of_one_name_kept_apart(
    school_model: SchoolModel, webhook: Webhook, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    hostile = "evil\x1b[2J\u202ename\u200b\nline"
    metrics = WatchMetrics()
    with loopback_platform() as (base, script):
        script.models = [
            _model("twin", school_model.url("status-500"), "id-down"),
            _model("twin", school_model.url(), "id-up"),
            _model(hostile, school_model.url("status-500"), "id-hostile"),
        ]
        watcher = _watcher(base, tmp_path, webhook, fail_after=1, metrics=metrics)
        try:
            report = run_round(watcher)
        finally:
            _close(watcher)
    text = metrics.text()
    assert 'lmreg_model_up{model="twin",model_id="id-down",run_id="",school=""} 0.0' in text
    assert 'lmreg_model_up{model="twin",model_id="id-up",run_id="",school=""} 1.0' in text
    page = watcher.config.status_path.read_text(encoding="utf-8")
    for raw in ("\x1b", "\u202e", "\u200b"):
        assert raw not in text and raw not in page and raw not in caplog.text
        assert all(raw not in s.model_name for s in report.states)
    posts = "\n".join(p["title"] + p["message"] for p in webhook.posts)
    assert "evil" in caplog.text and "evil" in posts and "evil" in page  # shown, made visible
    assert "\nline" not in caplog.text and "\x1b" not in posts and "\u202e" not in posts
