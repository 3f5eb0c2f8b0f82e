"""No form of the apiKey or of a notification URL's secret in anything the watch writes.

The school model echoes the Authorization header everywhere it can (the
``/canary/`` paths of tests/fakes/hostile.py, as in tests/commands/test_canary_leaks.py); the
targets' URLs carry a token and a password. Alerts (webhook, e-mail), log
lines, the state file (and its WAL), the page and the metrics (what /metrics serves:
test_watch_e2e.py) are searched with the canary test's own detector (tests/leaks.py).
Everything in this process.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.hostile import hostile_server
from leaks import CANARY_KEY, leaks_in
from watch_helpers import SMTP_PASSWORD, WEBHOOK_TOKEN, Account, Smtp, Webhook

from lmreg_nb.watch.metrics import WatchMetrics
from lmreg_nb.watch.notify import Notifier, parse_targets
from lmreg_nb.watch.state import StateStore
from lmreg_nb.watch.watcher import WatchConfig, Watcher

SECRETS = {"apiKey": CANARY_KEY, "webhook token": WEBHOOK_TOKEN, "smtp password": SMTP_PASSWORD}


@pytest.fixture
def echo() -> Iterator[str]:
    with hostile_server() as base:
        yield f"{base}/canary"


def test_nothing_the_watch_writes_holds_a_secret(
    account: Account,
    echo: str,
    webhook: Webhook,
    smtp: Smtp,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    failing = account.register("echo-500", f"{echo}/e500/v1/chat/completions", key=CANARY_KEY)
    account.register("echo-html", f"{echo}/ehtml/v1/chat/completions", key=CANARY_KEY)
    account.register("echo-reply", f"{echo}/ereply/v1/chat/completions", key=CANARY_KEY)
    state = tmp_path / "state.sqlite3"
    targets = parse_targets([webhook.url, smtp.url])
    config = WatchConfig(state_path=state, fail_after=1, school="Canary School", allow_private=True)
    metrics = WatchMetrics()
    store = StateStore(state)
    caplog.set_level(logging.DEBUG, logger="lmreg_nb")
    watcher = Watcher(
        account.settings,
        account.client(),
        store,
        targets,
        Notifier(targets),
        config,
        metrics=metrics,
    )

    async def rounds() -> None:
        async with watcher:
            await watcher.round()
            account.modify(failing, "echo-500", f"{echo}/ereply/v1/chat/completions", CANARY_KEY)
            await watcher.round()

    try:
        asyncio.run(rounds())
        scraped = metrics.text()
    finally:
        store.close()
        watcher.registry.close()

    # What was written is there (so the search below can find something).
    assert [p["type"] for p in webhook.posts] == ["failure", "failure", "success"]
    assert len(smtp.mails) == 3
    assert re.search(
        r'lmreg_model_up\{model="echo-reply",model_id="[^"]+",run_id="",school=""\} 1.0', scraped
    )
    assert "echo-500" in caplog.text and "could not" not in caplog.text
    page = config.status_path.read_text(encoding="utf-8")
    assert "echo-html" in page
    written = {
        "alerts (webhook)": json.dumps(webhook.posts, ensure_ascii=False),
        "alerts (e-mail)": "\n".join(m.as_string() for m in smtp.mails),
        "log": caplog.text,
        "metrics": scraped,
        "status page": page,
    }
    for path in tmp_path.glob("state.sqlite3*"):
        written[path.name] = path.read_bytes().decode("utf-8", "replace")
    assert "state.sqlite3" in written
    leaked = {what: leaks_in(text, SECRETS) for what, text in written.items()}
    assert {what: found for what, found in leaked.items() if found} == {}
