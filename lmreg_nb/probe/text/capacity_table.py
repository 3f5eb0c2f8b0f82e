"""The capacity levels as people read them: the columns the record shows, in words.

The notebook's capacity form, ``lmreg-nb capacity`` and the record show the same
table: chats at once, requests, errors, first-token and inter-token p90 in whole
milliseconds, requests per second, and a mark for "within the target" (the SLO).
The JSON (``--json``, the record's data) keeps its identifiers.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ...i18n import N_, _

__all__ = ["level_headers", "level_rows", "levels_text", "limited_by_label"]

#: What stops the server from serving more (``limited_by``, an identifier) -> words.
_LIMITS = {
    "ttft": N_("the wait for the first token"),
    "itl": N_("the time between tokens"),
    "pause": N_("pauses in the middle of replies"),
    "errors": N_("failed requests"),
    "cut-streams": N_("replies cut off by new requests"),
    "saturation": N_("throughput that stops rising"),
    "max-concurrency": N_("the most chats tried"),
    "need-met": N_("the class size asked for, which it serves; the search stops there"),
    "time": N_("the time limit of the search"),
    "interrupted": N_("an interruption"),
    "unreachable": N_("a model that cannot be reached"),
}


def limited_by_label(limited_by: str | None, translate: Callable[[str], str] = _) -> str:
    """``limited_by`` in words (the JSON keeps the identifier); a chart passes its own
    ``translate`` (English when no CJK font is installed)."""
    if limited_by in _LIMITS:
        return translate(_LIMITS[limited_by])
    return limited_by or "-"


def level_headers() -> list[str]:
    """The table's column headings, translated."""
    return [
        _("chats at once"),
        _("requests"),
        _("errors"),
        _("first token p90 (ms)"),
        _("inter-token p90 (ms)"),
        _("requests/s"),
        _("within the SLO"),
    ]


def _get(level: Any, key: str) -> Any:
    return level.get(key) if isinstance(level, Mapping) else getattr(level, key, None)


def _p90(level: Any, key: str) -> str:
    found = _get(level, key)
    value = found.get("p90") if isinstance(found, Mapping) else None
    return "-" if value is None else f"{float(value):.0f}"


def _rate(value: Any) -> str:
    return "-" if value is None else f"{float(value):.1f}"


def level_rows(levels: Iterable[Any]) -> list[list[str]]:
    """One row per level (a probe Level or its JSON), by concurrency."""
    ordered = sorted(levels, key=lambda lv: _get(lv, "concurrency") or 0)
    return [
        [
            str(_get(lv, "concurrency")),
            str(_get(lv, "requests")),
            str(_get(lv, "errors")),
            _p90(lv, "ttft_ms"),
            _p90(lv, "itl_ms"),
            _rate(_get(lv, "requests_per_s")),
            "✔" if _get(lv, "meets_slo") else "✘",
        ]
        for lv in ordered
    ]


def _width(text: str) -> int:
    # A CJK character takes two columns in a terminal.
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def levels_text(levels: Iterable[Any]) -> str:
    """The table as aligned plain text (for the CLI)."""
    cells: list[Sequence[str]] = [level_headers(), *level_rows(levels)]
    widths = [max(_width(row[i]) for row in cells) for i in range(len(cells[0]))]
    return "\n".join(
        "  ".join(" " * (w - _width(v)) + v for v, w in zip(row, widths, strict=True)).rstrip()
        for row in cells
    )
