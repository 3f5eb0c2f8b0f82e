"""The school's contact card (spec section 1, phase 2): monitoring alerts go here."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ValidationError
from ..i18n import _
from ..validate import check_email, check_mobile

__all__ = ["Contact", "check_contact"]

_MAX_NAME = 64


@dataclass(frozen=True)
class Contact:
    """The school's contact for the local model: alerts about the model go here."""

    name: str
    mobile: str
    email: str

    def to_dict(self) -> dict[str, str]:
        """The record's ``contact`` object."""
        return {"name": self.name, "mobile": self.mobile, "email": self.email}


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
