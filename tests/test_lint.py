"""The lint lane is wired: scripts/lint runs ruff and mypy, and CI runs it before pytest.

The tools themselves run in their own lane (``bash scripts/lint``), not here: mypy
alone takes over a minute on two cores. What this checks is that the lane cannot
drop out of CI unnoticed, and that a failing tool fails the lane. And the repository's
root holds no generated file (issue 43 item 5: a chart is written only when asked).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT = ROOT / "scripts" / "lint"


def _command(text: str, pattern: str) -> str:
    found = re.findall(pattern, text, flags=re.MULTILINE)
    assert len(found) == 1, f"expected one test command, found {found}"
    return found[0]


def test_ci_runs_the_readme_command_with_the_lint_lane_first() -> None:
    ci = _command((ROOT / ".ci" / "run").read_text(encoding="utf-8"), r"^python3 -m venv .*$")
    for readme in ("README.md", "README.zh-CN.md"):
        text = (ROOT / readme).read_text(encoding="utf-8")
        shown = _command(text, r"^python3 -m venv .*scripts/lint.*$")
        # CI installs quietly (-q); otherwise the same command
        assert ci == shown.replace("pip install -r", "pip install -q -r"), readme
    steps = [s.strip() for s in ci.split("&&")]
    assert steps[-2:] == ["bash scripts/lint", "pytest"]


def test_the_lint_lane_runs_each_tool() -> None:
    text = LINT.read_text(encoding="utf-8")
    for tool in ("ruff check .", "ruff format --check .", "mypy"):
        assert f'"{tool}"' in text, tool


def _fake_tools(tmp_path: Path, failing: str) -> dict[str, str]:
    """A python whose ``-m ruff``/``-m mypy`` print their arguments and fail for ``failing``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "python"
    fake.write_text(
        "#!/bin/sh\n"
        f'echo "ran $*" >> "{tmp_path}/ran"\n'
        f'case "$*" in *"{failing}"*) exit 3;; esac\n'
        "exit 0\n"
    )
    fake.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


@pytest.mark.slow  # runs scripts/lint, as CI does
@pytest.mark.parametrize(("failing", "code"), [("nothing", 0), ("format", 1), ("mypy", 1)])
def test_the_lint_lane_fails_when_a_tool_fails(tmp_path: Path, failing: str, code: int) -> None:
    env = _fake_tools(tmp_path, failing)
    done = subprocess.run(
        ["bash", str(LINT)], env=env, capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == code, done.stdout + done.stderr
    # every tool runs, also after one failed: the lane shows all the problems at once
    ran = (tmp_path / "ran").read_text().splitlines()
    assert ran == ["ran -m ruff check .", "ran -m ruff format --check .", "ran -m mypy"]


# -- the repository root ------------------------------------------------------------

#: What a run, a build or a browser leaves behind; none of it belongs at the root.
GENERATED = (".png", ".jpg", ".jpeg", ".svg", ".gif", ".html", ".sqlite", ".sqlite3", ".db",
             ".log", ".ipynb")  # fmt: skip


def _root_files() -> list[str]:
    """The files at the repository's root: committed ones (git), else those on disk."""
    try:
        listed = subprocess.run(
            ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return [p.name for p in ROOT.iterdir() if p.is_file()]
    return [name for name in listed if "/" not in name]


@pytest.mark.slow  # asks git which files are committed
def test_the_repository_root_holds_no_generated_file() -> None:
    files = _root_files()
    assert "README.md" in files  # the listing sees the root
    generated = [name for name in files if name.lower().endswith(GENERATED)]
    assert generated == [], "generated files at the root: " + ", ".join(generated)
