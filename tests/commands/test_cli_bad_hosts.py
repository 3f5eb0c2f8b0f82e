"""Hosts httpx cannot use: one line and exit 2 from `lmreg-nb` (CliRunner), never a traceback.

Issue 20 (6): ``0177.0.0.1`` and ``256.1.1.1`` passed validation and then crashed
``check`` with httpx.InvalidURL; any InvalidURL that still reaches a command is one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from lmreg_nb.cli import main

KEY = "sk-bad-hosts-0123456789abcdef"


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


def _lmreg(tmp_path: Path, *args: str, **env: str) -> Done:
    """``lmreg-nb ARGS`` in this process (CliRunner), English, a private home and cache."""
    base = {"HOME": str(tmp_path), "LMREG_LANG": "en",
            "LMREG_TOKEN_CACHE": str(tmp_path / "tokens.json")}  # fmt: skip
    # catch_exceptions=False: a traceback fails the test instead of hiding in the result.
    result = CliRunner().invoke(main, list(args), env={**base, **env}, catch_exceptions=False)
    return Done(result.exit_code, result.stdout, result.stderr)


def _one_line(done: Done) -> str:
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert KEY not in done.stdout + done.stderr
    return lines[0]


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


@pytest.mark.parametrize("host", ["0177.0.0.1", "256.1.1.1"])
def test_models_refuses_such_a_host_in_the_base_url(tmp_path: Path, host: str) -> None:
    done = _lmreg(
        tmp_path, "models",
        LMREG_BASE_URL=f"https://{host}", LMREG_APP_ID="app", LMREG_APP_SECRET=KEY,
    )  # fmt: skip
    line = _one_line(done)
    assert done.returncode == 2 and "LMREG_BASE_URL" in line and host in line


def test_any_invalid_url_left_is_one_line(tmp_path: Path) -> None:
    # Fullwidth letters: a valid name per IDNA's UTS46 mapping, refused by httpx itself.
    done = _lmreg(
        tmp_path, "models",
        LMREG_BASE_URL="https://\uff21\uff22\uff23.example", LMREG_APP_ID="app",
        LMREG_APP_SECRET=KEY,
    )  # fmt: skip
    line = _one_line(done)
    assert done.returncode == 2 and line.startswith("error: ") and "not a usable address" in line
