"""A check's severity in words that mean what they say (the JSON keeps the identifier).

``error`` means the check must pass before go-live: *required*; ``warning`` is
advice: *recommended*; ``info`` only informs. Forms, records and the CLI all use
these words, so "✔ reachable error" never reads as if something went wrong.
"""

from __future__ import annotations

from .i18n import pgettext

__all__ = ["severity_label"]


def severity_label(severity: str) -> str:
    """``error`` -> required, ``warning`` -> recommended, ``info`` -> info (translated)."""
    if severity == "error":
        return pgettext("severity", "required")
    if severity == "warning":
        return pgettext("severity", "recommended")
    if severity == "info":
        return pgettext("severity", "info")
    return severity
