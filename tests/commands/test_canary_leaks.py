"""Canary: endpoints that echo the apiKey everywhere they can; no secret may come out.

A small hostile school model (tests/fakes/hostile.py's ``/canary/`` paths) puts the
Authorization header it receives into a 500 JSON error body, an HTML error
page and the reply itself, in raw, JSON-escaped, URL-encoded and base64 forms
and in pieces. `lmreg-nb check` runs against it in this process (CliRunner: what it
prints and what it logs), `lmreg-nb onboard` and `lmreg-nb batch` as real processes
(their notebook runs are processes anyway); every byte they print, log or write is
searched with the leak detector of tests/leaks.py, written independently of the
toolkit's own masker.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakes.hostile import Base, echoes, hostile_server, hostile_tcp_server
from leaks import CANARY_KEY, leaks_in

from lmreg_nb.cli import main
from lmreg_nb.sandbox.process import SandboxInfo

pytestmark = pytest.mark.slow  # a hostile server on loopback; onboard and batch run notebooks


@pytest.fixture(scope="module")
def echo_base() -> Iterator[str]:
    """The hostile server's /canary/ paths echo the Authorization header everywhere."""
    with hostile_server() as base:
        yield f"{base}/canary"


@pytest.fixture(scope="module")
def echo_tcp() -> Iterator[Base]:
    """The same server on a loopback port, for ``lmreg-nb`` processes and their kernels."""
    with hostile_tcp_server() as base:
        yield base


def _cli(
    args: list[str], env: dict[str, str], cwd: Path, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("LMREG_")} | env
    return subprocess.run(
        [sys.executable, "-m", "lmreg_nb", *args],
        env=full, cwd=cwd, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def _files_text(folder: Path) -> dict[Path, str]:
    return {p: p.read_bytes().decode("utf-8", "replace") for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("where", ["e500", "ehtml", "ereply"])
def test_check_never_prints_an_echoed_key(
    echo_base: str,
    tmp_path: Path,
    where: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    env = {
        "LMREG_MODEL_URL": f"{echo_base}/{where}/v1/chat/completions",
        "LMREG_MODEL_API_KEY": CANARY_KEY,
        "LMREG_MODEL_NAME": "echo-llm",
        "LMREG_TIMEOUT": "5",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)  # where the load test's figure goes
    for args in (
        ["check"],
        ["check", "--json"],
        ["check", "--requests", "4", "--concurrency", "2"],
    ):
        caplog.clear()
        done = CliRunner().invoke(main, args)
        assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
        assert "Traceback" not in done.stderr, done.stderr[-2000:]
        assert done.exit_code in (0, 1), done.stderr[-2000:]
        out = done.stdout + done.stderr
        assert out.strip(), "check printed nothing"
        # What a process prints of its logs: warnings and worse (Python's last resort).
        out += "".join(r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)
        assert leaks_in(out, {"apiKey": CANARY_KEY}) == [], f"{args} leaked the key:\n{out[-3000:]}"


def _sandbox_env(sandbox_process: SandboxInfo, echo_url: str) -> dict[str, str]:
    env = sandbox_process.env()
    env.update(
        {
            "LMREG_MODEL_URL": echo_url,
            "LMREG_MODEL_API_KEY": CANARY_KEY,
            "LMREG_MODEL_NAME": "echo-llm",
        }
    )
    return env


@pytest.mark.notebooks
def test_onboard_and_batch_leave_no_secret(
    echo_tcp: Base, sandbox_process: SandboxInfo, tmp_path: Path
) -> None:
    echo_base = f"{echo_tcp}/canary"
    asked = len(echo_tcp.requests)
    secrets = {"apiKey": CANARY_KEY, "appSecret": sandbox_process.app_secret}
    env = _sandbox_env(sandbox_process, f"{echo_base}/ereply/v1/chat/completions")
    params = [
        "-p", "school", "Canary School", "-p", "contact_name", "Li Hua",
        "-p", "contact_mobile", "13800138000", "-p", "contact_email", "ops@canary.example",
        "-p", "model_name", "canary-model",
    ]  # fmt: skip
    onboard = _cli(["onboard", "--out", str(tmp_path / "one"), *params], env, tmp_path)
    assert "Traceback" not in onboard.stderr, onboard.stderr[-2000:]
    assert (tmp_path / "one").is_dir(), onboard.stdout + onboard.stderr

    (tmp_path / "school.env").write_text(
        "".join(
            f"{k}={v}\n"
            for k, v in _sandbox_env(
                sandbox_process, f"{echo_base}/e500/v1/chat/completions"
            ).items()
        ),
        encoding="utf-8",
    )
    (tmp_path / "plan.csv").write_text(
        "run_id,env_file,school,contact_name,contact_mobile,contact_email,model_name,check_requests\n"
        "canary-b,school.env,Canary B,Wang Fang,13900001111,ops@b.example,canary-b,0\n",
        encoding="utf-8",
    )
    batch = _cli(
        ["batch", "plan.csv", "--out", str(tmp_path / "batch"), "--jobs", "1"], {}, tmp_path
    )
    assert "Traceback" not in batch.stderr, batch.stderr[-2000:]
    assert (tmp_path / "batch").is_dir(), batch.stdout + batch.stderr

    assert len(echo_tcp.requests) > asked  # the runs met the echoes (no leak unseen)
    printed = onboard.stdout + onboard.stderr + batch.stdout + batch.stderr
    assert leaks_in(printed, secrets) == [], printed[-3000:]
    written = _files_text(tmp_path / "one") | _files_text(tmp_path / "batch")
    assert written, "no file was written"
    leaked = {str(p): leaks_in(text, secrets) for p, text in written.items()}
    assert {p: labels for p, labels in leaked.items() if labels} == {}


def test_the_detector_finds_each_form() -> None:
    # The detector must itself catch what it is meant to catch.
    for text in echoes(f"Bearer {CANARY_KEY}").split(" | "):
        assert leaks_in(text, {"k": CANARY_KEY}) == ["k"], text
    assert leaks_in("key …Wd2 masked", {"k": CANARY_KEY}) == []
