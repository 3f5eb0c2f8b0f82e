"""Our own "too many open files" is named as a limit here (ulimit -n), never as the server's fault.

Issue 20 (6). Real processes with a lowered RLIMIT_NOFILE against a real loopback
sandbox: the load test of `lmreg-nb check`, the registry client's error mapping, and
`capacity`, which then gives no verdict about the model (issue 33).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from lmreg_nb.sandbox.process import SandboxInfo

resource = pytest.importorskip("resource")  # POSIX: Windows has no RLIMIT_NOFILE

pytestmark = pytest.mark.slow  # processes whose file limit is lowered are the point


def _limit_files(soft: int) -> None:
    _old, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LMREG_")}
    env.update(HOME=str(tmp_path), LMREG_LANG="en", **extra)
    return env


def test_the_load_test_names_our_open_files_limit(
    tmp_path: Path, sandbox_process: SandboxInfo
) -> None:
    env = _env(
        tmp_path, LMREG_MODEL_URL=sandbox_process.model_url,
        LMREG_MODEL_API_KEY=sandbox_process.model_api_key, LMREG_MODEL_NAME="m",
    )  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "lmreg_nb", "check", "--requests", "200", "--concurrency",
         "150", "--json"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
        preexec_fn=lambda: _limit_files(100),  # 150 sockets at once cannot fit in 100 files
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    report = json.loads(done.stdout)
    (load,) = [c for c in report["checks"] if c["name"] == "load-test"]
    assert not load["passed"]
    assert "too many open files here (ulimit -n)" in load["detail"], load["detail"]
    assert "cannot connect" not in load["detail"]
    assert "The platform will see such failures" not in load["detail"]


_CLIENT = textwrap.dedent(
    """
    import os, resource, sys
    from lmreg_nb.registry.client import RegistryClient
    from lmreg_nb.errors import LmregError
    from lmreg_nb.secret import mask_text
    from lmreg_nb.settings import Settings

    settings = Settings.load(environ={}, base_url=sys.argv[1], app_id=sys.argv[2],
                             app_secret=sys.argv[3], token_cache=sys.argv[4])
    client = RegistryClient(settings, max_retries=0)
    mask_text("warm", ["up-the-lazy-imports"])  # codecs load from files too
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))
    held = []
    while True:  # use up every file descriptor left, as a busy process would
        try:
            held.append(os.open(os.devnull, os.O_RDONLY))
        except OSError:
            break
    try:
        client.query_models()
    except LmregError as exc:
        for fd in held:
            os.close(fd)
        print(type(exc).__name__, exc)
    """
)


def test_the_registry_client_names_our_open_files_limit(
    tmp_path: Path, sandbox_process: SandboxInfo
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CLIENT, sandbox_process.base_url, sandbox_process.app_id,
         sandbox_process.app_secret, str(tmp_path / "tokens.json")],
        env=_env(tmp_path), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    line = done.stdout.strip()
    assert "limit of 64 open files (ulimit -n)" in line, line
    assert "could not connect" not in line and "not a fault of 127.0.0.1" in line
    assert sandbox_process.app_secret not in done.stdout + done.stderr


def test_capacity_out_of_files_names_this_machine_not_the_model(
    tmp_path: Path, sandbox_process: SandboxInfo
) -> None:
    # Before (issue 33): with ``ulimit -n 60`` the search measured 54 chats at once as 432
    # errors of 432 and named the model's capacity 53, ``limited_by: errors``.
    env = _env(
        tmp_path, LMREG_ENV_FILE=os.devnull, LMREG_MODEL_URL=sandbox_process.model_url,
        LMREG_MODEL_API_KEY=sandbox_process.model_api_key, LMREG_MODEL_NAME="m",
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
    assert sandbox_process.model_api_key not in done.stdout + done.stderr
