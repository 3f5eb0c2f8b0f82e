"""The onboarding notebook's own parameters, read by :meth:`Onboarding.begin`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import LmregError, ValidationError
from ..i18n import _

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = ["class_size_of", "configured_language", "context_need_of"]


def configured_language(settings: Settings | None) -> str | None:
    """LMREG_LANG from the settings (a .env file included), or None: the locale decides."""
    from ..settings import Settings

    try:
        current = settings or Settings.load()
    except LmregError:
        return None
    return current.lang or None


def class_size_of(value: object) -> tuple[int, ValidationError | None]:
    """The ``class_size`` parameter as a number, or 0 and the error saying what to give."""
    try:
        size = int(str(value).strip() or 0)
    except ValueError:
        message = _("must be a whole number of students, e.g. 40 (0 skips the test)")
        return 0, ValidationError("class_size", message)
    if size < 0:
        return 0, ValidationError("class_size", _("must be 0 or more"))
    return size, None


def context_need_of(value: object) -> tuple[int | None, ValidationError | None]:
    """The ``context_need`` parameter (None: the check's default), or None and the error."""
    if value is None:
        return None, None
    from ..probe.checks.context_window import check_context_need

    try:
        return check_context_need(value), None
    except ValidationError as exc:
        return None, exc
