"""What CI holds the suite to (tests/conftest.py's hooks call these; test_ci_rules tests them).

- Under CI=1 a skip is a failure: CI installs what every test needs (`.ci/run`), so a
  skip there is a test that claims to run and does not.
- Tests marked ``peer`` run against a real vLLM or llama-server whose address the
  environment gives (minutes to install or build): they are the only ones that may skip,
  and they run only when the marker expression names them (`pytest -m peer`), never in
  `.ci/run`'s default selection.
"""

from __future__ import annotations

import os
from typing import Any

import pytest


def deselect_peers(config: pytest.Config, items: list[Any]) -> None:
    """Leave the ``peer`` tests out unless ``-m`` names them."""
    if "peer" in (config.getoption("markexpr") or ""):
        return
    peers = [item for item in items if item.get_closest_marker("peer")]
    if peers:
        config.hook.pytest_deselected(items=peers)
        items[:] = [item for item in items if not item.get_closest_marker("peer")]


def fail_skip_in_ci(report: pytest.TestReport | pytest.CollectReport, *, peer: bool) -> None:
    """Turn a skip into a failure when CI=1 (a ``peer`` test keeps its skip)."""
    if not report.skipped or peer or hasattr(report, "wasxfail"):
        return
    if os.environ.get("CI", "").lower() not in ("1", "true", "yes"):
        return
    reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr
    report.outcome = "failed"
    report.longrepr = f"skipped under CI=1, where every test must run: {reason}"
