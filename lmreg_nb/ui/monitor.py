"""The monitoring form: add an alert target, send a test alert, run one round of the watch."""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from ..i18n import _
from ..watch.monitor import Monitor, contact_mail_url
from ._common import Field, Form, password

__all__ = ["MonitorForm"]


def _check_url(value: str) -> str:
    # Checked by Apprise on "Add"; as you type, only that something is there.
    from ..errors import ValidationError

    if not value.strip():
        raise ValidationError("notify", _("paste an Apprise URL, e.g. mailtos://... or json://..."))
    return value.strip()


class MonitorForm(Form):
    """An Apprise URL field (a secret: read, then cleared), "Add"; "Send a test alert" and
    "Run one round" below. The contact card's e-mail is offered as a ready URL to complete
    with the school's SMTP account."""

    def __init__(self, monitor: Monitor | None = None, *, contact_email: str = "") -> None:
        self.monitor = monitor or Monitor()
        self.url = password(_("alert target"), wide=True, placeholder="mailtos://, dingtalk://, …")
        hints = [
            _("Apprise URLs: e-mail, DingTalk, WeCom, Feishu, webhooks. They hold passwords and "
              "tokens: the field is cleared once read and nothing is saved in the notebook."),
        ]  # fmt: skip
        if contact_email.strip():
            hints.append(
                _("E-mail the contact: {url} (fill in the school's SMTP account)").format(
                    url=contact_mail_url(contact_email)
                )
            )
        hint = widgets.HTML("<br>".join(f"<small>{_escape(h)}</small>" for h in hints))
        add = widgets.Button(description=_("Add"), icon="plus")
        add.add_class("lmreg-add-target")
        self.test_button = widgets.Button(description=_("Send a test alert"), icon="bell")
        self.test_button.add_class("lmreg-test-alert")
        self.round_button = widgets.Button(
            description=_("Run one round"), icon="refresh", button_style="primary"
        )
        self.round_button.add_class("lmreg-run-round")
        self.remove_button = widgets.Button(description=_("Remove the last added"), icon="minus")
        self.remove_button.add_class("lmreg-remove-target")
        self.rehearsal = widgets.Checkbox(
            value=self.monitor.rehearsal,
            description=_("Rehearsal: alert only the targets above, never the contact"),
            indent=False,
            layout=widgets.Layout(width="auto"),
        )
        self.rehearsal.add_class("lmreg-rehearsal")
        super().__init__(
            "lmreg-monitor-form",
            [Field("notify-url", self.url, _check_url, optional=True)],
            add,
            hint,
            after=[
                self.rehearsal,
                widgets.HBox([self.remove_button, self.test_button, self.round_button]),
            ],
        )
        self.rehearsal.observe(
            lambda change: self.run(lambda: self.monitor.set_rehearsal(bool(change["new"]))),
            names="value",
        )
        self.test_button.on_click(lambda _b: self.test_alert())
        self.round_button.on_click(lambda _b: self.run_round())
        self.remove_button.on_click(lambda _b: self.remove_target())

    def submit(self) -> Any:
        """Add the URL typed (read and cleared at once), then show the targets."""
        value = self.fields["notify-url"].take()
        if not value.strip() or not self.valid(taken={"notify-url": value}):
            return self.run(self.monitor.targets_table)
        return self.run(lambda: (self.monitor.add_target(value), self.monitor.targets_table()))

    def remove_target(self) -> Any:
        """Stop using the target added last (one added by mistake), then show the targets."""
        return self.run(lambda: (self.monitor.remove_target(), self.monitor.targets_table()))

    def test_alert(self) -> Any:
        """Send the test alert to every target."""
        return self.run(self.monitor.send_test_alert)

    def run_round(self) -> Any:
        """One round, then the state table and the latency chart."""
        return self.run(
            lambda: (
                self.monitor.run_round(),
                self.monitor.state_table(),
                self.monitor.latency_chart(),
            )
        )


def _escape(text: str) -> str:
    import html

    return html.escape(text)
