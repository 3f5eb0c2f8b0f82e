"""The school's contact card (spec section 1, phase 2): monitoring alerts go here.

:class:`Contact` is the summary's (a value of the core); this module checks one.
"""

from __future__ import annotations

from ..errors import ValidationError
from ..i18n import _
from ..summary import Contact, Step
from ..terminal import shown_name
from ..validate import check_email, check_mobile
from .display import Outcome

__all__ = ["Contact", "card_outcome", "check_contact"]

_MAX_NAME = 64


def check_contact(name: object, mobile: object, email: object) -> Contact:
    """Validate a contact card; raises one ValidationError naming every field to fix."""
    errors: list[ValidationError] = []
    values: list[str] = []
    for check, value in ((_check_name, name), (check_mobile, mobile), (check_email, email)):
        try:
            values.append(check(value))
        except ValidationError as exc:
            errors.append(exc)
    if errors:
        raise ValidationError.every(errors)
    return Contact(*values)


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ValidationError("contact_name", _("must be the contact's name, e.g. Li Hua"))
    clean = " ".join(name.split())
    if len(clean) > _MAX_NAME or not clean.isprintable():
        raise ValidationError(
            "contact_name", _("must be at most {n} printable characters").format(n=_MAX_NAME)
        )
    return clean


def card_outcome(school: str, contact: Contact | None, failed: Step | None = None) -> Outcome:
    """The contact card as the notebook shows it, or why there is none (``failed``: its step)."""
    if contact is None:
        if failed is not None and not failed.passed:
            return Outcome(_("contact card: failed"), [(_("error"), failed.detail)], ok=False)
        return Outcome(_("no contact card yet: fill in the form below"), ok=False, pending=True)
    return Outcome(
        _("contact for {school}").format(school=shown_name(school) if school else _("the school")),
        [(_("name"), contact.name), (_("mobile"), contact.mobile), (_("e-mail"), contact.email)],
        value=contact,
    )
