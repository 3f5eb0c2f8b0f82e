"""Every mistake of a plan at once: a collector, and the one error that carries them all."""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import ConfigurationError
from ..i18n import ngettext
from ..terminal import terminal_text

__all__ = ["PlanError", "Problems"]


class PlanError(ConfigurationError):
    """A plan with mistakes: :attr:`problems` holds one line each (the CLI prints them all).

    ``str()`` is one line too, as for every toolkit error: the first mistake, and how
    many more there are.
    """

    def __init__(self, problems: Iterable[str]) -> None:
        # One line each, safe on a terminal (cells come from a file others may write).
        self.problems = [terminal_text(" ".join(p.split())) for p in problems]
        first = self.problems[0] if self.problems else ""
        more = len(self.problems) - 1
        message = first
        if more:
            message = ngettext(
                "{first} (and {n} more mistake in the plan)",
                "{first} (and {n} more mistakes in the plan)",
                more,
            ).format(first=first, n=more)
        super().__init__(message)


class Problems:
    """The plan's mistakes as they are found; :meth:`raise_any` at the end."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, line: str) -> None:
        """One mistake, said in one line naming the line and the column."""
        self.lines.append(line)

    def __bool__(self) -> bool:
        return bool(self.lines)

    def __len__(self) -> int:
        return len(self.lines)

    def raise_any(self) -> None:
        """Raise one PlanError naming every mistake found, if there is any."""
        if self.lines:
            raise PlanError(self.lines)
