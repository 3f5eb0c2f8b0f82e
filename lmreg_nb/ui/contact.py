"""The contact card form: who gets the monitoring alerts (spec section 1, phase 2)."""

from __future__ import annotations

import ipywidgets as widgets

from ..display import Outcome
from ..i18n import _
from ..onboarding import Onboarding
from ..onboarding.contact import check_contact
from ..summary import StepName
from ..validate import check_email, check_mobile
from ._common import Field, Form, required, text

__all__ = ["ContactForm"]


def _check_name(value: str) -> None:
    check_contact(value, "13800000000", "a@b.cn")


class ContactForm(Form):
    """School, name, mobile number and e-mail, validated as you type; Save keeps them."""

    def __init__(self, run: Onboarding) -> None:
        self.run_: Onboarding = run
        c = run.contact
        self.school = text(_("school"), value=run.school, wide=True)
        self.name = text(_("name"), value=c.name if c else "", wide=True)
        self.mobile = text(_("mobile"), value=c.mobile if c else "", placeholder="13812345678")
        self.email = text(
            _("e-mail"), value=c.email if c else "", wide=True, placeholder="name@school.edu.cn"
        )
        button = widgets.Button(description=_("Save contact"), button_style="primary")
        button.add_class("lmreg-contact-button")
        super().__init__(
            "lmreg-contact-form",
            [
                Field("school", self.school, required("school", _("enter the school's name"))),
                Field("contact-name", self.name, _check_name),
                Field("contact-mobile", self.mobile, check_mobile),
                Field("contact-email", self.email, check_email),
            ],
            button,
        )

    def submit(self) -> Outcome | None:
        """Validate and keep the card."""
        if not self.valid():
            return None
        return self.run(
            lambda: self.run_.set_contact(
                self.name.value, self.mobile.value, self.email.value, self.school.value
            ),
            step=StepName.CONTACT_CARD,
        )
