"""The onboarding flow as plain objects: the facade the notebooks and forms call.

:class:`Onboarding` (``facade``) is one class with one short method per step; the
work is done by plain functions taking the client and settings explicitly:
``registry_steps`` (register, modify, list the models) and ``endpoint_steps`` (the
chat-endpoint checks, the chat, the capacity step). The summary it records is
:mod:`lmreg_nb.summary`.
"""

from __future__ import annotations

from ..display import FigureView, Outcome, Table
from ..summary import Step, Summary, build_summary
from .configuration import configuration
from .contact import Contact, check_contact
from .facade import Onboarding
from .notebook import notebook_setup

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
]
