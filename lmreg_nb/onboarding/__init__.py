"""The onboarding flow as plain objects: the facade the notebooks and forms call.

:class:`Onboarding` (``facade``: contact card, token, summary) combines
``registry`` (register, modify, list the models) and ``endpoint`` (the
chat-endpoint checks, the chat, the capacity step); ``step`` is the rule that
records every step's outcome. The summary is :mod:`lmreg_nb.summary`.
"""

from __future__ import annotations

from ..summary import Step, Summary, build_summary
from .configuration import configuration
from .contact import Contact, check_contact
from .display import FigureView, Outcome, Table
from .facade import Onboarding
from .notebook import notebook_setup
from .step import step

__all__ = [
    "Contact",
    "FigureView",
    "Onboarding",
    "Outcome",
    "Step",
    "Summary",
    "Table",
    "build_summary",
    "check_contact",
    "configuration",
    "notebook_setup",
    "step",
]
