"""The onboarding ``summary``: its types (:mod:`.model`) and the rule deciding its verdicts.

:func:`build_summary` is the one place that decides ``status`` and ``go_live``
(DESIGN.md, "Contract: records"); :meth:`Summary.from_json` reads records
written by any version, including older ones without ``status``/``go_live``.
"""

from __future__ import annotations

from .model import (
    CAPACITY_STEP,
    EXPECTED_STEPS,
    STEP_LABELS,
    Check,
    GoLive,
    Step,
    Summary,
    step_label,
)
from .rules import build_summary, decide

__all__ = [
    "CAPACITY_STEP",
    "EXPECTED_STEPS",
    "STEP_LABELS",
    "Check",
    "GoLive",
    "Step",
    "Summary",
    "build_summary",
    "decide",
    "step_label",
]
