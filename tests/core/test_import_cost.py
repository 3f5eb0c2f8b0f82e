"""What a fresh interpreter loads: `import lmreg_nb` stays cheap, a probe leaf stays a leaf.

A fresh interpreter is the point: a notebook's first cell and a kernel's warm-up
start from nothing, and what a third-party library pulls in at import time shows
only there (the CLI's own start-up, which concerns our modules only, is tested
in-process in tests/commands/test_cli_start.py).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # each case starts a Python interpreter


def test_import_is_cheap() -> None:
    """`import lmreg_nb` must not pull in the heavy libraries (notebooks start faster)."""
    code = (
        "import sys, lmreg_nb, lmreg_nb.cli; "
        "heavy = ('pandas', 'matplotlib', 'httpx', 'fastapi', 'papermill', 'ipywidgets'); "
        "print(','.join(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"imported at import time: {out.stdout.strip()}"


def _imported_after(code: str, watched: tuple[str, ...]) -> list[str]:
    check = f"import sys\n{code}\nprint(','.join(m for m in {watched!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True)
    return [m for m in out.stdout.strip().split(",") if m]


def test_one_probe_module_does_not_import_the_whole_probe() -> None:
    """The warm-up imports leaves one at a time: a leaf must not pull in the package."""
    heavy = (
        "lmreg_nb.probe.report",
        "lmreg_nb.probe.load.fixed",
        "lmreg_nb.probe.checks.suite",
        "httpx",
    )
    assert _imported_after("import lmreg_nb.probe.wire.sse", heavy) == []
    assert _imported_after("from lmreg_nb.probe import SSEDecoder", heavy) == []
    # The public names still come from the package, each on first use.
    found = _imported_after("from lmreg_nb.probe import check_endpoint, Target", heavy)
    assert "lmreg_nb.probe.report" in found
