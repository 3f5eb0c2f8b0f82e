"""The onboarding notebook's own parameters, read by :meth:`Onboarding.begin`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import LmregError, ValidationError
from ..i18n import _

if TYPE_CHECKING:
    from ..probe.checks.context_window import ContextNeed
    from ..probe.load.workload import WorkloadSpec
    from ..settings import Settings

__all__ = [
    "MAX_CLASS_SIZE",
    "check_class_size",
    "checked_workload",
    "class_size_of",
    "configured_language",
    "context_need_of",
    "lesson_tokens_of",
    "max_tokens_of",
    "parameter_problem",
    "workload_of",
]

#: The most students at once the capacity test measures (its search's limit).
MAX_CLASS_SIZE = 1024


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
    try:
        return check_class_size(size), None
    except ValidationError as exc:
        return 0, exc


def check_class_size(size: int) -> int:
    """``size`` when the capacity test can measure that many students at once, else the error.

    Refused up front, before any step runs, not after the whole onboarding.
    """
    if size > MAX_CLASS_SIZE:
        raise ValidationError(
            "class_size",
            _("must be at most {n} students chatting at once (the most the capacity test"
              " measures)").format(n=MAX_CLASS_SIZE),
        )  # fmt: skip
    return size


def lesson_tokens_of(value: object) -> tuple[int | None, ValidationError | None]:
    """The ``lesson_tokens`` parameter (None: the workload's default), or None and the error."""
    from ..probe.load.workload import MAX_LESSON_TOKENS

    return _tokens_of(
        "lesson_tokens",
        value,
        MAX_LESSON_TOKENS,
        _("must be a whole number of tokens from 1 to {n}, e.g. 1500"),
    )


def max_tokens_of(value: object) -> tuple[int | None, ValidationError | None]:
    """The ``max_tokens`` parameter (None: the workload's default), or None and the error."""
    from ..probe.load.workload import MAX_REPLY_TOKENS

    return _tokens_of(
        "max_tokens",
        value,
        MAX_REPLY_TOKENS,
        _("must be a whole number of tokens from 1 to {n}, e.g. 300"),
    )


def _tokens_of(
    name: str, value: object, most: int, rule: str
) -> tuple[int | None, ValidationError | None]:
    """A count of tokens from 1 to ``most`` (None: not given), or None and the error that
    says ``rule`` (its ``{n}``: ``most``)."""
    if value is None:
        return None, None
    try:
        tokens = int(str(value).strip())
    except ValueError:
        tokens = 0
    if not 1 <= tokens <= most:
        return None, ValidationError(name, rule.format(n=most))
    return tokens, None


def context_need_of(value: object) -> tuple[ContextNeed | None, ValidationError | None]:
    """The ``context_need`` parameter, checked (None: the check's default), or None and the
    error. The check and the workload take it as checked, by its type."""
    if value is None:
        return None, None
    from ..probe.checks.context_window import ContextNeed

    try:
        return ContextNeed(value), None
    except ValidationError as exc:
        return None, exc


def parameter_problem(name: str, value: object) -> ValidationError | None:
    """Why a typed notebook parameter cannot be used, or None: the rules `onboard -p` and a
    batch plan's cells share, checked before any run starts."""
    from ..i18n import normalize_language

    if name == "lang":
        if normalize_language(str(value)) is None:
            return ValidationError(name, _("must be zh-CN or en"))
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    if value < 0:
        return ValidationError(name, _("must be 0 or more"))
    rule = {
        "class_size": class_size_of,
        "lesson_tokens": lesson_tokens_of,
        "max_tokens": max_tokens_of,
        "context_need": context_need_of,
    }.get(name)
    return rule(value)[1] if rule is not None else None


def workload_of(
    context_need: int | None, lesson_tokens: int | None, max_tokens: int | None = None
) -> WorkloadSpec:
    """The lesson workload of the load test and capacity, sized by the parameters (checked as
    it is made: a ValidationError names the parameter)."""
    from ..probe.checks.context_window import DEFAULT_CONTEXT_NEED
    from ..probe.load.workload import DEFAULT_LESSON_TOKENS, DEFAULT_MAX_TOKENS, WorkloadSpec

    return WorkloadSpec(
        lesson_tokens=lesson_tokens or DEFAULT_LESSON_TOKENS,
        max_tokens=max_tokens or DEFAULT_MAX_TOKENS,
        context_need=context_need or DEFAULT_CONTEXT_NEED,
    )


def checked_workload(
    context_need: int | None, lesson_tokens: int | None, max_tokens: int | None = None
) -> tuple[WorkloadSpec | None, ValidationError | None]:
    """The workload of :func:`workload_of`, or None and the error (e.g. the lesson, the
    instructions and a reply do not fit in ``context_need``)."""
    try:
        return workload_of(context_need, lesson_tokens, max_tokens), None
    except ValidationError as exc:
        return None, exc
