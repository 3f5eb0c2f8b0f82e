"""The models table: the account's models (apiKey masked), filled at once, with Refresh."""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from ..i18n import _
from ..onboarding import Onboarding
from ._common import Form, follow

__all__ = ["ModelsTable"]

#: Steps after which the table queries the platform again by itself.
_REFRESH_AFTER = ("register", "modify")


class ModelsTable(Form):
    """Lists the account's models as a DataFrame; Refresh queries again.

    Filled at once: ``load`` True queries the platform now; ``load`` False shows
    what the run last listed, without a query. Either way the table refreshes
    itself when a form of the same run registers or modifies a model.
    """

    def __init__(self, run: Onboarding | None = None, *, load: bool = True) -> None:
        self.run_ = run or Onboarding("")
        button = widgets.Button(description=_("Refresh"), icon="refresh")
        button.add_class("lmreg-refresh-button")
        super().__init__("lmreg-models-table", [], button)
        follow(self.run_, self._after_step)
        if load:
            self.submit()
        else:
            self.last_result = self._known()
            self.show(self.last_result)

    def submit(self) -> Any:
        """Query the platform and show the table."""
        return self.run(self._frame, step="list models")

    def _after_step(self, step: str) -> None:
        if step in _REFRESH_AFTER:
            self.submit()

    def _frame(self) -> Any:
        # Through the run, so an interactive onboarding records its "list models" step.
        return self.run_.models_frame()

    def _known(self) -> Any:
        from ..frames import models_frame

        return models_frame(self.run_.models)
