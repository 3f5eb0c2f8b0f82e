"""Tolerant readers of recorded JSON values: a record of any version reads, odd values as None.

Used by the ``from_json`` of every part of the summary; the typed objects then
travel through the code, so these run once per record read (at the edge).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "float_or_none",
    "int_or_none",
    "list_of",
    "mapping_or_empty",
    "one_line",
    "text_or_none",
    "time_or_none",
]

#: The largest 13-digit millisecond timestamp; a bigger number is no time.
_MAX_MS = 9_999_999_999_999


def one_line(text: str) -> str:
    """``text`` on one line, without a trailing full stop (it goes inside a sentence)."""
    return " ".join(str(text).split()).rstrip(".")


def text_or_none(value: Any) -> str | None:
    """A non-empty value as text, else None."""
    return None if value in (None, "") else str(value)


def int_or_none(value: Any) -> int | None:
    """A whole number (not a bool), else None."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def float_or_none(value: Any) -> float | None:
    """A number (not a bool), else None."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def list_of(value: Any) -> list[Mapping[str, Any]]:
    """The mappings of a JSON list (anything else in it, or a value that is no list: dropped)."""
    items = value if isinstance(value, list | tuple) else []
    return [item for item in items if isinstance(item, Mapping)]


def mapping_or_empty(value: Any) -> Mapping[str, Any]:
    """A JSON object, or an empty one for anything else."""
    return value if isinstance(value, Mapping) else {}


def time_or_none(value: Any) -> datetime | None:
    """An ISO 8601 text (no zone: UTC), a datetime, or a millisecond timestamp; else None."""
    if isinstance(value, datetime):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_MS:
        return datetime.fromtimestamp(value / 1000, tz=UTC)
    if not isinstance(value, str) or not value:
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)
