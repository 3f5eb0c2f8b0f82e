"""One line of a notebook's output, updated in place while a step runs (its progress)."""

from __future__ import annotations

import time
from typing import Any

__all__ = ["LiveLine", "StepView"]


class LiveLine:
    """Shows the latest progress as one plain-text output line, in place; nothing outside IPython.

    Updates come from the step's worker thread; at most a few a second reach
    the notebook (each is a message to the frontend, and one more update kept
    by papermill). :meth:`clear` empties the line when the step is done: the
    result shown after it says the rest.
    """

    EVERY_S = 0.25

    def __init__(self) -> None:
        self.handle: Any = None
        self.shown_at = 0.0
        try:
            from IPython.core.interactiveshell import InteractiveShell
        except ImportError:  # pragma: no cover - IPython comes with the notebook extra
            return
        if InteractiveShell.initialized():
            from IPython.display import display

            self.handle = display({"text/plain": ""}, raw=True, display_id=True)

    def show(self, progress: Any) -> None:
        """Show a :class:`~lmreg_nb.probe.load.capacity.Progress` in words."""
        from ..probe.text.capacity_text import progress_text

        now = time.monotonic()
        if self.handle is None or (now - self.shown_at < self.EVERY_S and progress.level is None):
            return
        self.shown_at = now
        self.handle.update({"text/plain": progress_text(progress)}, raw=True)

    def clear(self) -> None:
        """Empty the line (the step is done)."""
        if self.handle is not None:
            self.handle.update({"text/plain": ""}, raw=True)


class StepView:
    """A cell's result that follows the run: shown with a display id, redrawn in place
    after every step, so a cell below a form never keeps saying "not checked yet"."""

    def __init__(self, render: Any) -> None:
        self.render = render
        self.handle: Any = None

    def _ipython_display_(self) -> None:
        from IPython.display import display

        self.handle = display(self.render(), display_id=True)

    def refresh(self) -> None:
        """Redraw with what the run knows now (nothing before it was shown)."""
        if self.handle is not None:
            self.handle.update(self.render())
