"""Out of its own file descriptors, capacity gives no verdict about the model (issue 33, partial).

Before: with ``ulimit -n 60`` the search measured 54 chats at once as 432 errors
of 432 and named the model's capacity 53, ``limited_by: errors``. Now it says
the checking machine ran out of file descriptors, and gives no capacity.
A real process with a lowered RLIMIT_NOFILE against the real loopback sandbox.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from lmreg_nb.sandbox.process import SandboxInfo

resource = pytest.importorskip("resource")  # POSIX: Windows has no RLIMIT_NOFILE


def _limit_files(soft: int) -> None:
    _old, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_capacity_out_of_files_names_this_machine_not_the_model(
    tmp_path: Path, sandbox: SandboxInfo
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LMREG_")}
    env.update(
        HOME=str(tmp_path), LMREG_LANG="en", LMREG_ENV_FILE=os.devnull,
        LMREG_MODEL_URL=sandbox.model_url, LMREG_MODEL_API_KEY=sandbox.model_api_key,
        LMREG_MODEL_NAME="m",
    )  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "lmreg_nb", "capacity", "--need", "60", "--max-concurrency",
         "64", "--json"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
        preexec_fn=lambda: _limit_files(60),  # 60 chats at once cannot fit in 60 files
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 1
    assert "ran out of file descriptors" in done.stderr and "ulimit -n" in done.stderr
    assert "limited_by" not in done.stdout  # no capacity named for the model
    assert sandbox.model_api_key not in done.stdout + done.stderr
