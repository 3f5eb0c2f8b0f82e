"""The models table: the account's models (apiKey masked, local times), filled at once."""

from __future__ import annotations

import ipywidgets as widgets

from ..display import Table
from ..i18n import _
from ..onboarding import Onboarding
from ..onboarding.registry_steps import models_table
from ..summary import StepName
from ._common import Form, follow

__all__ = ["ModelsTable"]

#: Steps after which the table queries the platform again by itself.
_REFRESH_AFTER = (StepName.REGISTER, StepName.MODIFY)


class ModelsTable(Form):
    """Lists the account's models; Refresh queries again.

    Filled at once: ``load`` True queries the platform now; ``load`` False shows
    what the run last listed, without a query. Either way the table refreshes
    itself when a form of the same run registers or modifies a model. Times are
    the school's local time with the zone, like everything a person reads.
    """

    def __init__(self, run: Onboarding | None = None, *, load: bool = True) -> None:
        self.run_: Onboarding = run or Onboarding("")
        button = widgets.Button(description=_("Refresh"), icon="refresh")
        button.add_class("lmreg-refresh-button")
        super().__init__("lmreg-models-table", [], button)
        follow(self.run_, self._after_step)
        if load:
            self.submit()
        else:
            self.last_result = self._known()
            self.show(self.last_result)

    def submit(self) -> Table | None:
        """Query the platform and show the table."""
        # Through the run, so an interactive onboarding records its "list models" step.
        result: Table | None = self.run(self.run_.list_models, step=StepName.LIST_MODELS)
        return result

    def _after_step(self, step: str) -> None:
        if step in _REFRESH_AFTER:
            self.submit()

    def _known(self) -> Table:
        return models_table(self.run_.models)
