"""What a SIGKILL leaves behind is bounded: sandboxes die with their parent, and the next
start of any lmreg-nb command removes a dead run's folder and stops what it left running.

Issue 20: SIGKILL of `lmreg-nb demo` left its sandbox running, also after the next demo
(item 5); SIGKILL of a batch left a live token and the unscrubbed executed notebook in
the run folder until the next *run* (item 6). Real processes, real signals, planted
run folders in a private TMPDIR.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from lmreg_nb.runner.runs import RUN_PREFIX

pytestmark = [
    pytest.mark.skipif(os.name != "posix", reason="SIGKILL and process groups"),
    pytest.mark.slow,  # real processes and signals are the point
]


def _wait_for(predicate: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"waited {timeout:g} s for {what}")


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _sandboxes_under(pid: int) -> list[psutil.Process]:
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    return [p for p in children if "sandbox" in " ".join(p.cmdline())]


@pytest.fixture
def private_tmp(tmp_path: Path) -> Iterator[Path]:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    yield tmp
    for folder in tmp.glob(RUN_PREFIX + "*"):  # a failed test leaves nothing running
        owner = folder / "owner.json"
        child = json.loads(owner.read_text()).get("child") if owner.is_file() else None
        if child and not _gone(child["pid"]):
            psutil.Process(child["pid"]).kill()


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LMREG_")}
    return {**env, "TMPDIR": str(tmp), "LMREG_LANG": "en"}


_HOLDER = textwrap.dedent(
    """
    import time
    from lmreg_nb.sandbox.process import running_sandbox
    with running_sandbox() as sandbox:
        print("UP", sandbox.base_url, flush=True)
        time.sleep(600)
    """
)


def test_a_sandbox_dies_with_the_process_that_started_it(private_tmp: Path) -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", _HOLDER], env=_env(private_tmp), stdout=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout is not None and parent.stdout.readline().startswith("UP ")
        (sandbox,) = _sandboxes_under(parent.pid)
        parent.kill()  # SIGKILL: running_sandbox's cleanup never runs
        parent.wait()
        started = time.monotonic()
        _wait_for(lambda: _gone(sandbox.pid), 10, "the orphaned sandbox to stop")
        print(f"the sandbox stopped {time.monotonic() - started:.2f} s after its parent died")
    finally:
        if parent.poll() is None:
            parent.kill()


def test_a_killed_demo_leaves_no_sandbox_and_names_it_for_the_next_start(
    private_tmp: Path, tmp_path: Path
) -> None:
    demo = subprocess.Popen(
        [sys.executable, "-m", "lmreg_nb", "demo", "--out", str(tmp_path / "out")],
        env=_env(private_tmp), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        _wait_for(lambda: _sandboxes_under(demo.pid), 60, "the demo's sandbox")
        (sandbox,) = _sandboxes_under(demo.pid)

        def noted() -> bool:
            for owner in private_tmp.glob(RUN_PREFIX + "*/owner.json"):
                data = json.loads(owner.read_text() or "{}")
                if data.get("pid") == demo.pid and data.get("child", {}).get("pid") == sandbox.pid:
                    return True
            return False

        # The demo notes its sandbox in a run-state folder, for the next start to find.
        _wait_for(noted, 60, "the sandbox's pid in the demo's run-state folder")
        demo.send_signal(signal.SIGKILL)
        demo.wait()
        _wait_for(lambda: _gone(sandbox.pid), 10, "the killed demo's sandbox to stop")
    finally:
        if demo.poll() is None:
            demo.kill()


def _plant(tmp: Path, child: psutil.Process | None, files: dict[str, str]) -> Path:
    """A run folder whose owner (a pid that lived and died) was SIGKILLed."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    folder = tmp / f"{RUN_PREFIX}planted"
    folder.mkdir(mode=0o700)
    owner: dict[str, object] = {"pid": dead.pid, "started": 1.0}
    if child is not None:
        owner["child"] = {"pid": child.pid, "started": child.create_time()}
    (folder / "owner.json").write_text(json.dumps(owner))
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def test_any_command_stops_a_stale_sandbox_and_removes_its_folder(
    private_tmp: Path, tmp_path: Path
) -> None:
    # As an earlier version's demo (no watch of its parent) would have left it.
    stale = subprocess.Popen(
        [sys.executable, "-m", "lmreg_nb", "sandbox", "--port", "0", "--model-port", "0",
         "--db", str(tmp_path / "stale.sqlite3")],
        env=_env(private_tmp), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert stale.stdout is not None and stale.stdout.readline().startswith("{")
        folder = _plant(private_tmp, psutil.Process(stale.pid), {"sandbox.sqlite3": "x"})
        done = subprocess.run(
            [sys.executable, "-m", "lmreg_nb", "notebooks", str(tmp_path / "nbs")],
            env=_env(private_tmp), capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert stale.wait(timeout=10) is not None
        assert not folder.exists()
    finally:
        if stale.poll() is None:
            stale.kill()


def test_any_command_removes_a_killed_runs_token_and_unscrubbed_notebook(
    private_tmp: Path, tmp_path: Path
) -> None:
    folder = _plant(
        private_tmp, None,
        {"tokens.json": '{"tokens": [{"token": "TOKEN-live-0123456789"}]}',
         "executed.ipynb": '{"cells": ["appSecret in the clear"]}'},
    )  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "lmreg_nb", "notebooks", str(tmp_path / "nbs")],
        env=_env(private_tmp), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not folder.exists(), "the next start of any command removes a dead run's folder"
