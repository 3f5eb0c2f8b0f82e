"""What a step shows in a notebook: escaped HTML and plain text, no widgets and no pandas.

Headless runs stay fast and readable with these; widgets are for interactive use. The
onboarding's steps and the watch's notebook view both show their results with these.
"""

from __future__ import annotations

import html
import unicodedata
from dataclasses import dataclass, field, replace
from typing import Any

from .i18n import _
from .terminal import terminal_text

__all__ = ["FigureView", "Outcome", "Table"]


@dataclass
class Outcome:
    """What a step shows in the notebook: a title, label/value rows, and the value itself.

    Renders as escaped HTML (values may come from a server) and as plain text.
    ``pending``: not done yet (neither passed nor failed), shown in grey. ``warning``:
    done, but with something to look at (an address that did not answer), in amber ⚠.
    """

    title: str
    rows: list[tuple[str, str]] = field(default_factory=list)
    ok: bool = True
    value: Any = None
    pending: bool = False
    warning: bool = False

    def holding(self, value: Any) -> Outcome:
        """This outcome as shown, with ``value`` for the code that uses it (the model as
        the platform has it, where the rows show it with its secrets masked)."""
        return replace(self, value=value)

    @property
    def mark(self) -> str:
        """…, ⚠, ✔ or ✘."""
        if self.pending:
            return "…"
        if self.ok and self.warning:
            return "⚠"
        return "✔" if self.ok else "✘"

    def _repr_html_(self) -> str:
        mark = self.mark
        color = (
            "#57606a"
            if self.pending
            else "#9a6700"
            if self.ok and self.warning
            else "#1a7f37"
            if self.ok
            else "#cf222e"
        )
        body = "".join(
            f"<tr><th style='text-align:left;padding-right:1em'>{_e(k)}</th>"
            f"<td style='text-align:left'>{_e(v)}</td></tr>"
            for k, v in self.rows
        )
        return (
            f"<div class='lmreg-outcome'><b style='color:{color}'>{mark} "
            f"{_e(self.title)}</b><table>{body}</table></div>"
        )

    def __repr__(self) -> str:
        if self.pending:
            lines = [f"… {self.title}"]
        else:
            state = (
                _("warning") if self.ok and self.warning else _("ok") if self.ok else _("FAILED")
            )
            lines = [f"{state}: {self.title}"]
        lines += [f"  {k}: {v}" for k, v in self.rows]
        return _shown("\n".join(lines))


@dataclass
class Table:
    """A small table shown as escaped HTML and aligned text, without importing pandas.

    Headless runs stay fast this way; :meth:`frame` gives a DataFrame when wanted.
    """

    columns: list[str]
    rows: list[list[str]]
    #: A line under the table for what every row shares (the zone of its times).
    note: str = ""

    def frame(self) -> Any:
        """The same table as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame(self.rows, columns=self.columns)

    def _repr_html_(self) -> str:
        # Short columns never wrap ("必需" one character a line); the last one (a detail) does.
        last = len(self.columns) - 1
        styles = [
            "text-align:left" if i == last else "text-align:left;white-space:nowrap"
            for i in range(len(self.columns))
        ]
        head = "".join(
            f"<th style='{style}'>{_e(c)}</th>"
            for c, style in zip(self.columns, styles, strict=True)
        )
        body = "".join(
            "<tr>"
            + "".join(
                f"<td style='{style}'>{_e(v)}</td>" for v, style in zip(row, styles, strict=True)
            )
            + "</tr>"
            for row in self.rows
        )
        note = (
            f"<caption style='caption-side:bottom;text-align:left'>{_e(self.note)}</caption>"
            if self.note
            else ""
        )
        return (
            f"<table class='lmreg-table'>{note}<thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table>"
        )

    def __repr__(self) -> str:
        if not self.rows:
            return _("(no rows)") + " " + " | ".join(self.columns)
        widths = [
            max(_columns(c), *(_columns(r[i]) for r in self.rows))
            for i, c in enumerate(self.columns)
        ]

        def line(cells: list[str]) -> str:
            # Padded by the columns a terminal gives each character (a CJK one takes two).
            padded = (v + " " * (w - _columns(v)) for v, w in zip(cells, widths, strict=True))
            return "  ".join(padded).rstrip()

        lines = [line(self.columns), *(line(r) for r in self.rows)]
        return _shown("\n".join(lines + ([self.note] if self.note else [])))


def _shown(text: str) -> str:
    """Text a step shows: values may come from a server, so control and bidi characters
    become a visible U+FFFD (the terminal's rule); names are made safe where they are put."""
    return terminal_text(text, lines=True, limit=None)


def _e(text: str) -> str:
    return html.escape(_shown(text))


def _columns(text: str) -> int:
    """How many columns ``text`` takes in a terminal or a fixed-width font."""
    return sum(
        0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
        for ch in text
    )


class FigureView:
    """A matplotlib Figure shown as a PNG without pyplot (a headless kernel has no backend set)."""

    def __init__(self, figure: Any) -> None:
        self.figure = figure

    def _repr_png_(self) -> bytes:
        import io

        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", bbox_inches="tight")
        return buffer.getvalue()

    def __repr__(self) -> str:
        return _("figures (a PNG image)")
