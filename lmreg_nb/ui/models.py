"""The models table: the account's models (apiKey masked), with a Refresh button."""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from ..onboarding import Onboarding
from ._common import Form

__all__ = ["ModelsTable"]


class ModelsTable(Form):
    """Lists the account's models as a DataFrame; Refresh queries again."""

    def __init__(self, run: Onboarding | None = None, *, load: bool = True) -> None:
        self.run_ = run or Onboarding("")
        button = widgets.Button(description="Refresh", icon="refresh")
        button.add_class("lmreg-refresh-button")
        super().__init__("lmreg-models-table", [], button)
        if load:
            self.submit()

    def submit(self) -> Any:
        """Query the platform and show the table."""
        return self.run(self._frame)

    def _frame(self) -> Any:
        # Through the run, so an interactive onboarding records its "list models" step.
        return self.run_.models_frame()
