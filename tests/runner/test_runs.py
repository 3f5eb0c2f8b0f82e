"""How runs end: signals, a killed CLI, kernels that do not start, plans that are too big.

Real `lmreg-nb batch` processes, real papermill children and kernels; each test
watches the processes and the private run folders (``lmreg-run-*``) left behind.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import psutil
import pytest
from click.testing import CliRunner

from lmreg_nb.batch import RunTask, execute_run, run_batch
from lmreg_nb.cli import main
from lmreg_nb.runner.runs import RUN_PREFIX, kill_tree, remove_stale_runs, run_folder

DATA = Path(__file__).resolve().parents[1] / "data"


def _processes_under(folder: Path) -> list[psutil.Process]:
    """papermill children and kernels whose command line names ``folder``."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        with_args = " ".join(proc.info["cmdline"] or [])
        if str(folder) in with_args and proc.pid != os.getpid():
            found.append(proc)
    return found


def _wait_for(predicate: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(predicate) and predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"waited {timeout:g} s for {what}")


Batch = tuple[subprocess.Popen[bytes], Path, Path]


def _start_batch(folder: Path) -> Batch:
    """`lmreg-nb batch` of one sleepy run, in its own temp folder: (process, TMPDIR, out)."""
    tmp = folder / "tmp"
    tmp.mkdir()
    plan = folder / "plan.csv"
    plan.write_text(f"run_id,notebook,seconds\nnap,{DATA / 'sleepy.ipynb'},3600\n")
    out = folder / "out"
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "lmreg_nb", "batch", str(plan), "--out", str(out),
         "--timeout", "300"],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    return proc, tmp, out


def _stop(batch: Batch) -> None:
    proc, tmp, _out = batch
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    for child in _processes_under(tmp):
        child.kill()


@pytest.fixture(scope="module")
def cli_batches(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Batch]]:
    """One batch for each selected test of this module that takes ``cli_batch``, started
    all at once (each only waits on its kernel's start) and handed out once its cells run."""
    names = [
        item.name for item in request.session.items
        if item.path == request.path and "cli_batch" in getattr(item, "fixturenames", ())
    ]  # fmt: skip
    batches: dict[str, Batch] = {}
    try:
        for name in names:
            batches[name] = _start_batch(tmp_path_factory.mktemp("batch"))
        for _proc, tmp, _out in batches.values():
            # papermill writes its output notebook as soon as cells start running.
            _wait_for(
                lambda tmp=tmp: list(tmp.glob(RUN_PREFIX + "*/executed.ipynb")), 90,
                "the run's cells",
            )  # fmt: skip
        yield batches
    finally:
        for batch in batches.values():
            _stop(batch)


@pytest.fixture
def cli_batch(request: pytest.FixtureRequest, cli_batches: dict[str, Batch]) -> Iterator[Batch]:
    """This test's `lmreg-nb batch` of one sleepy run (see ``cli_batches``), its cells running."""
    batch = cli_batches[request.node.name]
    try:
        yield batch
    finally:
        _stop(batch)


@pytest.mark.notebooks
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signalled_batch_cleans_up_and_names_the_interruption(
    cli_batch: tuple[subprocess.Popen[bytes], Path, Path], signum: int
) -> None:
    proc, tmp, out = cli_batch
    assert _processes_under(tmp), "the run's papermill and kernel should be running"
    proc.send_signal(signum)
    _stdout, stderr = proc.communicate(timeout=60)
    name = signal.Signals(signum).name
    assert proc.returncode == 128 + signum
    assert stderr.decode().strip().splitlines()[-1] == f"stopped: interrupted by {name}"
    assert b"Traceback" not in stderr
    # Nothing left: no unscrubbed notebook, no token cache, no papermill, no kernel.
    assert list(tmp.iterdir()) == []
    _wait_for(lambda: not _processes_under(tmp), 10, "papermill and the kernel to stop")
    result = json.loads((out / "nap" / "result.json").read_text())
    assert result["status"] == "failed" and result["error"] == f"interrupted by {name}"
    first = nbformat.read(out / "nap" / "sleepy.ipynb", as_version=4).cells[0]
    assert f"interrupted by {name}" in first.source
    with (out / "summary.csv").open(encoding="utf-8-sig") as fh:
        assert next(csv.DictReader(fh))["error"] == f"interrupted by {name}"


_ONE_RUN = """
import sys
from pathlib import Path
from lmreg_nb.runner import run_notebook
from lmreg_nb.runner.runs import Interrupted
try:
    run_notebook(Path(sys.argv[1]), Path(sys.argv[2]), parameters={}, env={})
except Interrupted as exc:
    sys.exit(128 + exc.signum)
"""


@pytest.mark.notebooks
def test_sigterm_during_one_run_in_the_main_thread_as_onboard_does(tmp_path: Path) -> None:
    tmp, out = tmp_path / "tmp", tmp_path / "out"
    tmp.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", _ONE_RUN, str(DATA / "sleepy.ipynb"), str(out)],
        env={**os.environ, "TMPDIR": str(tmp)}, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        _wait_for(lambda: list(tmp.glob(RUN_PREFIX + "*/executed.ipynb")), 90, "the cells")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
    assert list(tmp.iterdir()) == []
    _wait_for(lambda: not _processes_under(tmp), 10, "papermill and the kernel to stop")
    first = nbformat.read(out / "sleepy.ipynb", as_version=4).cells[0]
    assert "stopped: interrupted by SIGTERM" in first.source


# A papermill stand-in caught starting its kernel as the stop comes: the signal waits
# (blocked) until the kernel, in its own session as jupyter_client starts it, is up.
_LATE_KERNEL = """
import signal, subprocess, sys, time
from pathlib import Path
# The kernel unblocks what it inherited: a real one stops on SIGTERM.
KERNEL = "import signal, time; signal.pthread_sigmask(signal.SIG_UNBLOCK, {15}); time.sleep(60)"
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
Path(sys.argv[2], "ready").write_text("")
time.sleep(0.3)
kernel = subprocess.Popen([sys.executable, "-c", KERNEL, sys.argv[1] + "/tmp/kernel-1.json"],
                          start_new_session=True)
Path(sys.argv[2], "kernel.pid").write_text(str(kernel.pid))
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
time.sleep(60)
"""


@pytest.mark.slow
def test_a_kernel_started_as_its_run_is_stopped_goes_with_the_run_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Seen in CI: SIGTERM while papermill was starting the kernel left the kernel running
    # and its ipc sockets in a run folder already removed (the folder came back).
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    notes = tmp_path / "notes"
    notes.mkdir()
    with run_folder() as work:
        papermill = subprocess.Popen(
            [sys.executable, "-c", _LATE_KERNEL, str(work), str(notes)], start_new_session=True
        )
        _wait_for(lambda: (notes / "ready").exists(), 30, "the stand-in to start")
        kill_tree(papermill)  # lists no kernel yet: it starts while papermill is stopped
    try:
        kernel = psutil.Process(int((notes / "kernel.pid").read_text()))
    except psutil.NoSuchProcess:
        pass  # stopped and reaped
    else:
        status = kernel.status()
        with contextlib.suppress(psutil.Error):
            kernel.kill()
        assert status == psutil.STATUS_ZOMBIE, "the kernel outlived its run"
    assert [p.name for p in tmp_path.iterdir()] == ["notes"]


# A kernel being started as the runner dies: in its own session, and no longer the papermill
# child's child when the child looks (its starter is gone: this one exits at once).
_ORPHAN_KERNEL = """
import subprocess, sys
kernel = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)",
                           sys.argv[1] + "/tmp/kernel-1.json"], start_new_session=True,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(kernel.pid)
"""
# The papermill child's watcher, its runner already gone (no parent has pid -1). In a
# process of its own: it stops every child of the process it runs in.
_ORPHANED_CHILD = """
import sys
from pathlib import Path
from lmreg_nb.runner import kernels
kernels._papermill_done.set()  # no papermill here: no last save to wait for
kernels._stop_when_orphaned(-1, Path(sys.argv[1]))
"""


@pytest.mark.slow
def test_an_orphaned_runs_child_stops_a_kernel_that_is_not_its_child(tmp_path: Path) -> None:
    work = tmp_path / f"{RUN_PREFIX}orphaned"
    (work / "tmp").mkdir(parents=True)
    started = subprocess.run(
        [sys.executable, "-c", _ORPHAN_KERNEL, str(work)], capture_output=True, text=True,
        check=True, timeout=30,
    )  # fmt: skip
    kernel = psutil.Process(int(started.stdout))
    try:
        watcher = subprocess.run(
            [sys.executable, "-c", _ORPHANED_CHILD, str(work)], timeout=60,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        stopped = not kernel.is_running() or kernel.status() == psutil.STATUS_ZOMBIE
    finally:
        with contextlib.suppress(psutil.Error):
            kernel.kill()
    assert watcher.returncode == 1  # os._exit(1), as when its runner is gone
    assert stopped, "the kernel outlived its orphaned run"
    assert not work.exists()


@pytest.mark.notebooks
def test_a_killed_batch_leaves_no_process_and_no_secret_for_long(
    cli_batch: tuple[subprocess.Popen[bytes], Path, Path],
) -> None:
    proc, tmp, _out = cli_batch
    (folder,) = tmp.glob(RUN_PREFIX + "*")
    assert (folder / "executed.ipynb").is_file()  # unscrubbed, beside the run's token cache
    proc.kill()  # SIGKILL: no cleanup can run in the CLI itself
    proc.wait()
    killed = time.monotonic()
    # The papermill child sees its parent gone, stops its kernel and removes the folder:
    # no unscrubbed notebook or token cache waits for the next command (issue 20).
    _wait_for(lambda: not _processes_under(tmp), 15, "the orphaned papermill and kernel to stop")
    _wait_for(lambda: not folder.exists(), 15, "the killed run's folder to go")
    print(f"the killed run's folder was gone {time.monotonic() - killed:.1f} s after SIGKILL")
    assert list(tmp.iterdir()) == []


def test_stale_cleanup_keeps_live_and_young_folders(tmp_path: Path) -> None:
    live = tmp_path / f"{RUN_PREFIX}live"
    live.mkdir()
    owner = {"pid": os.getpid(), "started": psutil.Process().create_time()}
    (live / "owner.json").write_text(json.dumps(owner))
    young = tmp_path / f"{RUN_PREFIX}young"  # being created: no owner file yet
    young.mkdir()
    reused = tmp_path / f"{RUN_PREFIX}reused"  # our pid, but another process's start time
    reused.mkdir()
    (reused / "owner.json").write_text(json.dumps({"pid": os.getpid(), "started": 1.0}))
    assert remove_stale_runs(tmp_path) == [reused]
    assert live.is_dir() and young.is_dir()


def _kernelspec(root: Path, name: str, fail_first: bool, seen: Path) -> None:
    """A kernel that fails to start (always, or the first time only), then runs ipykernel."""
    folder = root / "kernels" / name
    folder.mkdir(parents=True)
    marker = folder / "failed-once"
    script = folder / "launch.py"
    script.write_text(
        "import json, sys\n"
        "from pathlib import Path\n"
        "conn = sys.argv[sys.argv.index('-f') + 1]\n"
        f"with open({str(seen)!r}, 'a') as fh:\n"
        "    fh.write(json.loads(Path(conn).read_text())['transport'] + ' ' + conn + '\\n')\n"
        f"marker = Path({str(marker)!r})\n"
        f"if {not fail_first} or not marker.exists():\n"
        "    marker.write_text('x')\n"
        "    sys.exit(3)\n"
        "from ipykernel.kernelapp import launch_new_instance\n"
        "sys.argv = [sys.argv[0], '-f', conn]\n"
        "launch_new_instance()\n"
    )
    spec = {"argv": [sys.executable, str(script), "-f", "{connection_file}"],
            "display_name": name, "language": "python"}  # fmt: skip
    (folder / "kernel.json").write_text(json.dumps(spec))


def _notebook_with_kernel(path: Path, kernel: str) -> Path:
    nb = nbformat.read(DATA / "empty.ipynb", as_version=4)
    nb.metadata.kernelspec = {"name": kernel, "display_name": kernel, "language": "python"}
    nbformat.write(nb, path)
    return path


@pytest.mark.notebooks
def test_a_kernel_that_fails_to_start_is_retried_once_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jupyter, seen = tmp_path / "jupyter", tmp_path / "transports.txt"
    _kernelspec(jupyter, "flaky", fail_first=True, seen=seen)
    _kernelspec(jupyter, "broken", fail_first=False, seen=seen)
    monkeypatch.setenv("JUPYTER_PATH", str(jupyter))  # reaches the runs (a JUPYTER_ variable)
    flaky = _notebook_with_kernel(tmp_path / "flaky.ipynb", "flaky")
    broken = _notebook_with_kernel(tmp_path / "broken.ipynb", "broken")
    plan = tmp_path / "plan.csv"
    plan.write_text(f"run_id,notebook\nflaky,{flaky}\nbroken,{broken}\n")
    result = run_batch(plan, tmp_path / "out", jobs=2, timeout=120, progress=False)
    with result.summary_csv.open(encoding="utf-8-sig") as fh:
        rows = {row["run_id"]: row for row in csv.DictReader(fh)}
    assert rows["flaky"]["status"] == "ok" and rows["flaky"]["kernel_retried"] == "yes"
    assert rows["broken"]["status"] == "failed" and rows["broken"]["kernel_retried"] == "yes"
    assert rows["broken"]["error"].startswith("the kernel did not start, twice: ")
    assert result.kernel_retries == 2
    # Two tries each, every kernel over the ipc transport (no TCP port to race for), its
    # connection file (with its HMAC key) unique and inside the run's private folder.
    starts = [line.split(" ", 1) for line in seen.read_text().splitlines()]
    assert [transport for transport, _ in starts] == ["ipc"] * 4
    files = [Path(conn) for _, conn in starts]
    assert len(set(files)) == 4
    assert all(f.parent.name == "tmp" and f.parent.parent.name.startswith(RUN_PREFIX)
               for f in files)  # fmt: skip


def test_a_plan_cell_over_128_kib_is_one_line_and_exit_2(tmp_path: Path) -> None:
    plan = tmp_path / "plan.csv"
    plan.write_text(f'run_id,notebook,school\nbig,{DATA / "leaky.ipynb"},"{"x" * 140_000}"\n')
    result = CliRunner().invoke(main, ["batch", str(plan), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "plan.csv line 2: not a readable CSV row" in result.stderr
    assert "128 KiB" in result.stderr


def test_a_run_that_fails_before_its_summary_keeps_its_school(tmp_path: Path) -> None:
    task = RunTask("gone", str(tmp_path / "missing.ipynb"), str(tmp_path / "gone"),
                   {"school": "第一中学"}, {}, 60, "fp")  # fmt: skip
    result = execute_run(task)
    assert result["status"] == "failed" and result["school"] == "第一中学"
    assert "no notebook at" in result["error"]


@pytest.mark.notebooks
def test_a_signal_while_the_record_is_written_finishes_the_record_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SIGTERM that comes when the run's process is not waiting on papermill (the record
    being written, a kernel's second start) is noted and raised once the record is written.
    It was raised where it came: the run exited 143 with no record (a clean-clone CI run)."""
    from lmreg_nb import runner
    from lmreg_nb.runner.runs import Interrupted

    real = runner.write_record

    def signalled(*args: Any, **kwargs: Any) -> Any:
        os.kill(os.getpid(), signal.SIGTERM)  # this test's own process: the run's handler
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "write_record", signalled)
    with pytest.raises(Interrupted) as stopped:
        runner.run_notebook(DATA / "empty.ipynb", tmp_path / "out", parameters={}, env={})
    assert stopped.value.signum == signal.SIGTERM
    assert (tmp_path / "out" / "empty.ipynb").is_file()
    assert (tmp_path / "out" / "empty.html").is_file()
