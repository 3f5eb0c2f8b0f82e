"""The checks panel of the interactive onboarding: the checks run after registering.

In ``onboarding.ipynb`` run top to bottom, the forms come first and are empty.
This panel waits for the register step: the checks then run against the
registered model by themselves (never against LMREG_MODEL_URL before anything
is registered), and again after each register or modify.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets

from ..i18n import _
from ..onboarding import Onboarding
from ..summary import StepName
from ._common import Form, follow

__all__ = ["ChecksPanel"]

#: Steps after which the checks run again by themselves (the registered model changed).
_CHECK_AFTER = (StepName.REGISTER, StepName.MODIFY)


class ChecksPanel(Form):
    """The chat-endpoint checks of the registered model: they run by themselves after the
    register step; "Run checks" runs them again. Shows the table of checks; the verdict
    and the load test's chart are the notebook's next cells (shown once, not twice)."""

    def __init__(self, run: Onboarding, requests: int = 0, concurrency: int = 1) -> None:
        self.run_: Onboarding = run
        self.requests = requests
        self.concurrency = concurrency
        button = widgets.Button(description=_("Run checks"), button_style="primary")
        button.add_class("lmreg-checks-button")
        super().__init__("lmreg-checks-panel", [], button)
        follow(run, self._after_step)
        if run.model is None:
            self.message.value = html.escape(
                _("The checks run here once your model is registered (step 3).")
            )

    def _after_step(self, step: str) -> None:
        if step in _CHECK_AFTER:
            self.submit()

    def submit(self) -> Any:
        """Check the registered model's endpoint (or, with none, the configured one)."""
        return self.run(self._check, step=StepName.CHECKS)

    def _check(self) -> tuple[Any, ...]:
        return (self.run_.check_endpoint(self.requests, self.concurrency),)
