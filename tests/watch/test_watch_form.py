"""The monitoring form: a target URL is read and cleared at once, then used for a test alert."""

from __future__ import annotations

from pathlib import Path

import pytest
from watch_helpers import WEBHOOK_TOKEN, Webhook

from lmreg_nb.secret import Secret
from lmreg_nb.settings import Settings

pytest.importorskip("ipywidgets")


def _texts(form: object) -> str:
    from fakes.pseudo import widget_texts

    return "\n".join(widget_texts(form.container))  # type: ignore[attr-defined]


def test_add_a_target_then_send_a_test_alert(webhook: Webhook, tmp_path: Path) -> None:
    from lmreg_nb.ui import MonitorForm
    from lmreg_nb.watch import Monitor

    monitor = Monitor("Form School", state_path=tmp_path / "s.sqlite3", settings=Settings())
    form = MonitorForm(monitor, contact_email="li.hua@school.example")
    assert "mailtos://USER:PASSWORD@SMTP.SERVER.EXAMPLE?to=li.hua@school.example" in _texts(form)
    form.url.value = webhook.url
    form.submit()
    assert form.url.value == "" and form.last_error is None  # read, then cleared
    shown = "\n".join(repr(item) for item in form.last_result)  # the outcome and the table
    assert WEBHOOK_TOKEN not in shown + _texts(form) and "/hook/…q4Lm" in shown
    outcome = form.test_alert()
    assert outcome is not None and outcome.ok, outcome
    assert [p["title"] for p in webhook.posts] == ["[Form School] test alert from lmreg-nb watch"]


def test_a_bad_url_is_one_line_under_the_form(tmp_path: Path) -> None:
    from lmreg_nb.ui import MonitorForm
    from lmreg_nb.watch import Monitor

    monitor = Monitor("S", state_path=tmp_path / "s.sqlite3", settings=Settings())
    form = MonitorForm(monitor)
    form.url.value = "nosuch://Secret-Token-123456789"
    form.submit()
    assert form.url.value == ""
    assert form.last_error is not None and "unknown scheme 'nosuch'" in form.last_error
    assert "Secret-Token-123456789" not in form.last_error + _texts(form)


def test_without_targets_the_test_alert_says_what_to_do(tmp_path: Path) -> None:
    from lmreg_nb.watch import Monitor

    outcome = Monitor("S", state_path=tmp_path / "s.sqlite3", settings=Settings()).send_test_alert()
    assert not outcome.ok and "set LMREG_NOTIFY" in outcome.title


def test_lmreg_notify_targets_are_listed_masked(webhook: Webhook, tmp_path: Path) -> None:
    from lmreg_nb.watch import Monitor

    settings = Settings(notify=Secret(webhook.url))
    table = Monitor("S", state_path=tmp_path / "s.sqlite3", settings=settings).targets_table()
    assert table.rows == [[f"json://127.0.0.1:{webhook.port}/hook/…q4Lm", "LMREG_NOTIFY"]]
