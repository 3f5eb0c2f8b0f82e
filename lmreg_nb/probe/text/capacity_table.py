"""The capacity levels as people read them: the columns the record shows, in words.

The notebook's capacity form, ``lmreg-nb capacity`` and the record (text and HTML) show
the same table, made here: chats at once, requests, errors, first-token and inter-token
p90 and the longest pause in the middle of a reply (p90 over the replies) in
milliseconds, requests per second, and a mark for "within the target" (the SLO).
The JSON (``--json``, the record's data) keeps its identifiers.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ...i18n import N_, _

__all__ = [
    "level_cells",
    "level_headers",
    "level_rows",
    "levels_text",
    "limited_by_label",
    "ordered_levels",
]

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
    """The table's column headings, translated (the last: within the SLO)."""
    return [
        _("chats at once"),
        _("requests"),
        _("errors"),
        _("first token p90 (ms)"),
        _("inter-token p90 (ms)"),
        _("longest pause p90 (ms)"),
        _("requests/s"),
        _("within the SLO"),
    ]


def _get(level: Any, key: str) -> Any:
    return level.get(key) if isinstance(level, Mapping) else getattr(level, key, None)


def _p90(level: Any, key: str) -> str:
    found = _get(level, key)
    value = found.get("p90") if isinstance(found, Mapping) else getattr(found, "p90", None)
    return _ms(value)


def _ms(value: Any) -> str:
    # Whole milliseconds: a level's p90 is not exact to a fraction of one.
    return "-" if value is None else f"{float(value):.0f}"


def _rate(value: Any) -> str:
    return "-" if value is None else f"{float(value):.1f}"


def ordered_levels(levels: Iterable[Any]) -> list[Any]:
    """The levels by concurrency, as every view lists them."""
    return sorted(levels, key=lambda lv: _get(lv, "concurrency") or 0)


def level_cells(level: Any) -> list[str]:
    """A level's cells but the last (its mark: each view draws its own ✔/✘), for a probe
    Level, a recorded CapacityLevel or its JSON."""
    return [
        str(_get(level, "concurrency")),
        str(_get(level, "requests")),
        str(_get(level, "errors")),
        _p90(level, "ttft_ms"),
        _p90(level, "itl_ms"),
        _ms(_get(level, "longest_pause_ms")),
        _rate(_get(level, "requests_per_s")),
    ]


def level_rows(levels: Iterable[Any]) -> list[list[str]]:
    """One row per level, by concurrency, the mark last."""
    return [
        [*level_cells(lv), "✔" if _get(lv, "meets_slo") else "✘"] for lv in ordered_levels(levels)
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
