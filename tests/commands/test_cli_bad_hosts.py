"""Hosts httpx cannot use: one line and exit 2 from real `lmreg-nb` processes, never a traceback.

Issue 20 (6): ``0177.0.0.1`` and ``256.1.1.1`` passed validation and then crashed
``check`` with httpx.InvalidURL; any InvalidURL that still reaches a command is one line.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

KEY = "sk-bad-hosts-0123456789abcdef"


def _lmreg(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("LMREG_")}
    base.update(
        HOME=str(tmp_path), LMREG_LANG="en", LMREG_TOKEN_CACHE=str(tmp_path / "tokens.json")
    )
    return subprocess.run(
        [sys.executable, "-m", "lmreg_nb", *args],
        env={**base, **env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert KEY not in done.stdout + done.stderr
    return lines[0]


@pytest.mark.slow  # a real lmreg-nb process, as a person runs it
@pytest.mark.parametrize("host", ["0177.0.0.1", "256.1.1.1", "127.1"])
def test_check_refuses_a_numeric_host_that_is_no_dotted_quad(tmp_path: Path, host: str) -> None:
    done = _lmreg(
        tmp_path, "check", "--requests", "1", "--concurrency", "1",
        LMREG_MODEL_URL=f"http://{host}:9/v1/chat/completions",
        LMREG_MODEL_API_KEY=KEY, LMREG_MODEL_NAME="m",
    )  # fmt: skip
    line = _one_line(done)
    assert done.returncode == 2
    assert host in line and "four numbers from 0 to 255" in line


@pytest.mark.slow  # a real lmreg-nb process, as a person runs it
@pytest.mark.parametrize("host", ["0177.0.0.1", "256.1.1.1"])
def test_models_refuses_such_a_host_in_the_base_url(tmp_path: Path, host: str) -> None:
    done = _lmreg(
        tmp_path, "models",
        LMREG_BASE_URL=f"https://{host}", LMREG_APP_ID="app", LMREG_APP_SECRET=KEY,
    )  # fmt: skip
    line = _one_line(done)
    assert done.returncode == 2 and "LMREG_BASE_URL" in line and host in line


@pytest.mark.slow  # a real lmreg-nb process, as a person runs it
def test_any_invalid_url_left_is_one_line(tmp_path: Path) -> None:
    # Fullwidth letters: a valid name per IDNA's UTS46 mapping, refused by httpx itself.
    done = _lmreg(
        tmp_path, "models",
        LMREG_BASE_URL="https://\uff21\uff22\uff23.example", LMREG_APP_ID="app",
        LMREG_APP_SECRET=KEY,
    )  # fmt: skip
    line = _one_line(done)
    assert done.returncode == 2 and line.startswith("error: ") and "not a usable address" in line
