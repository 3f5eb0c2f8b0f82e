"""The onboarding ``summary``: one typed object, made once, read once, passed around.

- :mod:`.model`: its parts (:class:`Step` with a :class:`StepName`, :class:`Check`,
  :class:`Contact`, :class:`ModelRecord`, :class:`Phase`, :class:`GoLive`) and the
  ``Status`` and ``Severity`` literals;
- :mod:`.capacity`: the recorded capacity search (:class:`CapacityRecord`);
- :mod:`.performance`: the probe's figures, a load test's or one request's (:class:`Performance`);
- :mod:`.client`: the client's own event-loop stalls while it measured (:class:`ClientLag`);
- :mod:`.server`: what the server measured itself meanwhile (:class:`ServerFigures`);
- :mod:`.rules`: the one rule deciding ``status`` and ``go_live`` (docs/reference.md,
  "The record"); it imports the parts, never the reverse;
- :mod:`.summary`: :class:`Summary` and :func:`build_summary`; :meth:`Summary.from_json`
  reads records written by any version, including older ones without ``status``/``go_live``.
"""

from __future__ import annotations

from .capacity import CapacityLevel, CapacityRecord, CapacitySLO, Percentiles
from .client import ClientLag
from .model import (
    CAPACITY_STEP,
    EXPECTED_STEPS,
    SEVERITIES,
    STATUSES,
    STEP_LABELS,
    Check,
    Contact,
    Fact,
    GoLive,
    ModelRecord,
    Obstacle,
    Owner,
    Phase,
    Severity,
    Status,
    Step,
    StepName,
    step_label,
)
from .performance import Performance
from .rules import decide
from .server import ServerFigures
from .summary import Summary, build_summary
from .workload import PrefixCache, Workload

__all__ = [
    "CAPACITY_STEP",
    "EXPECTED_STEPS",
    "SEVERITIES",
    "STATUSES",
    "STEP_LABELS",
    "CapacityLevel",
    "CapacityRecord",
    "CapacitySLO",
    "Check",
    "ClientLag",
    "Contact",
    "Fact",
    "GoLive",
    "ModelRecord",
    "Obstacle",
    "Owner",
    "Percentiles",
    "Performance",
    "Phase",
    "PrefixCache",
    "ServerFigures",
    "Severity",
    "Status",
    "Step",
    "StepName",
    "Summary",
    "Workload",
    "build_summary",
    "decide",
    "step_label",
]
