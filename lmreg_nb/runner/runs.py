"""The processes and private folders of notebook runs, and how they end.

Each run lives in a private temporary folder (``lmreg-run-*``, 0700): papermill's
unscrubbed output and the run's token cache are there until the record is
written. Whatever way the run ends, the folder goes and its papermill and kernel
processes stop:

- normally, or on a timeout: the runner stops the process tree and removes the folder;
- SIGTERM or SIGINT to the CLI: :func:`interruptible` turns the signal into
  :class:`Interrupted`, so the same cleanup runs, and the record names the signal;
- SIGKILL (no cleanup can run): the papermill child notices its parent is gone
  within a second, stops its kernel and removes the run's folder, token cache and
  unscrubbed notebook included (:mod:`lmreg_nb.runner.kernels`); should the child die too,
  the next start of any lmreg-nb command removes the dead run's folder and stops
  the child it names (:func:`remove_stale_runs`, called by the CLI). `lmreg-nb demo`
  names its sandbox in such a folder the same way.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

from ..i18n import _

__all__ = [
    "RUN_PREFIX",
    "Interrupted",
    "held_interrupts",
    "interruptible",
    "kill_tree",
    "note_child",
    "released_interrupts",
    "remove_run_folder",
    "remove_stale_runs",
    "resume_runs",
    "run_folder",
    "stop_all_runs",
    "stop_reason",
    "tracked",
]

log = logging.getLogger("lmreg_nb")

RUN_PREFIX = "lmreg-run-"
_OWNER = "owner.json"
_KILL_GRACE_S = 3.0
#: How long a run folder's removal goes on while files written meanwhile keep it.
_REMOVE_RETRY_S = 2.0
#: A folder without an owner file is an old version's, or one being made: leave it a day.
_ORPHAN_AGE_S = 24 * 3600
#: papermill processes running now, so a cancelled batch can stop them all.
_RUNNING: set[subprocess.Popen[bytes]] = set()
#: pid -> why this process stopped them (a run reads it to name the interruption).
_STOPPED: dict[int, str] = {}
_LOCK = threading.Lock()
#: Set by stop_all_runs until resume_runs: a run starting meanwhile is stopped at once.
_stopping: list[str] = []
_handlers_installed = threading.Event()


class Interrupted(BaseException):
    """SIGTERM or SIGINT arrived: stop the runs, clean up, then exit 128 + signum.

    A BaseException, like KeyboardInterrupt, so ``except Exception`` does not swallow it.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        """The signal's name, e.g. SIGTERM."""
        return signal.Signals(self.signum).name

    @property
    def reason(self) -> str:
        """One line for people."""
        return _("interrupted by {signal}").format(signal=self.name)


class _Delivery:
    """Where a signal goes in the main thread: raised at once, or held (noted) for later."""

    hold = False
    noted: int | None = None

    def take(self) -> Interrupted | None:
        """The signal noted while held, as an :class:`Interrupted` (then forgotten)."""
        signum, self.noted = self.noted, None
        return Interrupted(signum) if signum is not None else None


_delivery = _Delivery()


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """While inside, SIGTERM and SIGINT raise :class:`Interrupted` in the main thread
    (or are noted, inside :func:`held_interrupts`).

    Does nothing outside the main thread or when an outer block already installed it.
    """
    if threading.current_thread() is not threading.main_thread() or _handlers_installed.is_set():
        yield
        return

    def raise_interrupted(signum: int, _frame: FrameType | None) -> None:
        # Held: the first signal is noted for later; a second one raises here at once.
        if _delivery.hold and _delivery.noted is None:
            _delivery.noted = signum
            return
        raise Interrupted(signum)

    names = [s for s in ("SIGTERM", "SIGINT") if hasattr(signal, s)]
    previous = {name: signal.signal(getattr(signal, name), raise_interrupted) for name in names}
    _handlers_installed.set()
    _delivery.noted = None
    try:
        yield
    finally:
        for name, handler in previous.items():
            signal.signal(getattr(signal, name), handler)
        _handlers_installed.clear()


@contextlib.contextmanager
def held_interrupts() -> Iterator[_Delivery]:
    """Inside, a SIGTERM or SIGINT in the main thread is noted, not raised, so that what the
    block writes is finished (a run's record); ``.take()`` gives the one noted.

    A signal raised where it came could cut the record being written, or land between a
    kernel's two starts, and the run ended with no record at all. Only the wait on the
    child (:func:`released_interrupts`) is cut by a signal, and a second signal while one
    is held (a person pressing Ctrl-C again). Nothing outside the main thread.
    """
    if threading.current_thread() is not threading.main_thread():
        yield _Delivery()
        return
    before = _delivery.hold
    _delivery.hold = True
    try:
        yield _delivery
    finally:
        _delivery.hold = before


@contextlib.contextmanager
def released_interrupts() -> Iterator[None]:
    """Inside a held block, a signal raises again; one noted before raises here at once."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = _delivery.hold
    _delivery.hold = False
    try:
        noted = _delivery.take()
        if noted is not None:
            raise noted
        yield
    finally:
        _delivery.hold = before


# ---------------------------------------------------------------- private folders


def _start_time(pid: int) -> float | None:
    import psutil

    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


@contextlib.contextmanager
def run_folder() -> Iterator[Path]:
    """A private (0700) temporary folder for one run, removed when the block ends."""
    remove_stale_runs()
    folder = Path(tempfile.mkdtemp(prefix=RUN_PREFIX))
    try:
        os.chmod(folder, 0o700)
        owner = {"pid": os.getpid(), "started": _start_time(os.getpid())}
        (folder / _OWNER).write_text(json.dumps(owner), encoding="utf-8")
        yield folder
    finally:
        remove_run_folder(folder)


def remove_run_folder(folder: Path) -> None:
    """Stop the processes that name a file in ``folder`` (:func:`_stop_processes_naming`),
    then remove it, whatever the sweep met: it holds the token cache."""
    try:
        _stop_processes_naming(folder)
    finally:
        _remove_tree(folder)


def _remove_tree(folder: Path) -> None:
    """Remove ``folder``; again while a file written meanwhile keeps it (papermill saves
    the notebook once more when its kernel dies), for :data:`_REMOVE_RETRY_S` at most."""
    deadline = time.monotonic() + _REMOVE_RETRY_S
    while True:
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists() or time.monotonic() > deadline:
            return
        time.sleep(0.05)


def _stop_processes_naming(folder: Path) -> None:
    """Stop this user's processes whose command line names a file in ``folder``.

    A kernel that papermill started just as the run was stopped is in its own session and
    was not yet papermill's child when :func:`kill_tree` looked, so nothing stopped it. It
    would go on running and bind its ipc sockets in the folder as it is removed (seen in
    CI). Its command line names its connection file, which is in the folder.
    """
    import psutil

    inside = str(folder) + os.sep
    has_uids = hasattr(psutil.Process, "uids")  # not on Windows (one user's processes there)
    found = []
    for proc in psutil.process_iter(["cmdline", "uids"] if has_uids else ["cmdline"]):
        args, uids = proc.info["cmdline"] or [], proc.info.get("uids")
        ours = uids is None or uids.real == os.getuid()
        if ours and proc.pid != os.getpid() and any(a.startswith(inside) for a in args):
            found.append(proc)
    _terminate_then_kill(found)


def _terminate_then_kill(procs: list[Any]) -> None:
    """SIGTERM ``procs`` (psutil processes, not our children), SIGKILL those still running
    after the grace, and wait for them to stop."""
    import psutil

    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    stubborn = _still_running(procs, _KILL_GRACE_S)
    for proc in stubborn:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    _still_running(stubborn, _KILL_GRACE_S)


def _still_running(procs: list[Any], timeout: float) -> list[Any]:
    """Those of ``procs`` (psutil processes) still running after up to ``timeout`` s.

    Not our children, so not ours to reap: a zombie has stopped (psutil's own wait waits
    until something else reaps it, out to its whole timeout).
    """
    import psutil

    def running(proc: psutil.Process) -> bool:
        try:
            return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False

    deadline = time.monotonic() + timeout
    alive = [p for p in procs if running(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [p for p in alive if running(p)]
    return alive


def note_child(folder: Path, proc: subprocess.Popen[Any] | int) -> None:
    """Write a child's pid (papermill's, a demo's sandbox's) into the run's folder, so the
    next start of any command stops it if this process dies without cleaning up."""
    pid = proc if isinstance(proc, int) else proc.pid
    path = folder / _OWNER
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["child"] = {"pid": pid, "started": _start_time(pid)}
        path.write_text(json.dumps(data), encoding="utf-8")


def _alive(entry: Any) -> bool:
    if not isinstance(entry, dict) or not isinstance(entry.get("pid"), int):
        return False
    started = _start_time(entry["pid"])
    # A reused pid has another start time: the process we knew is gone.
    return started is not None and (
        entry.get("started") is None or abs(started - float(entry["started"])) < 1.0
    )


def remove_stale_runs(folder: Path | None = None) -> list[Path]:
    """Remove the run folders of runs whose process died (and stop their children)."""
    base = Path(folder or tempfile.gettempdir())
    removed = []
    for path in base.glob(RUN_PREFIX + "*"):
        try:
            if not path.is_dir() or path.stat().st_uid != os.getuid():
                continue
            data = json.loads((path / _OWNER).read_text(encoding="utf-8"))
        except FileNotFoundError:
            data = None
        except (OSError, ValueError, AttributeError):
            continue  # not ours to judge (unreadable, or no uids on this system)
        if data is None:
            with contextlib.suppress(OSError):
                if time.time() - path.stat().st_mtime < _ORPHAN_AGE_S:
                    continue
        elif _alive(data):
            continue
        elif _alive(data.get("child")):
            _kill_group(int(data["child"]["pid"]))
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
        log.info("removed the folder of a run that died: %s", path)
    return removed


# ---------------------------------------------------------------- processes


def _kill_group(pid: int) -> None:
    import psutil

    try:
        procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    _still_running(procs, _KILL_GRACE_S)  # a dead run's children: not ours to reap


@contextlib.contextmanager
def tracked(proc: subprocess.Popen[bytes]) -> Iterator[None]:
    """Count ``proc`` among the running runs while the block runs."""
    with _LOCK:
        _RUNNING.add(proc)
        late = _stopping[0] if _stopping else None
        if late:
            _STOPPED[proc.pid] = late
    if late:  # started while the batch was being stopped
        kill_tree(proc)
    try:
        yield
    finally:
        with _LOCK:
            _RUNNING.discard(proc)


def kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """Stop papermill and every process under it (the kernel runs in its own session)."""
    import psutil

    try:
        children = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        children = []
    if hasattr(os, "killpg"):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
    else:  # pragma: no cover - Windows
        proc.terminate()
    _terminate_then_kill(children)  # papermill's, not ours: the kernel in its own session
    try:
        proc.wait(timeout=_KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def stop_all_runs(reason: str | None = None) -> None:
    """Stop every papermill run of this process (and its kernel); ``reason`` names why."""
    with _LOCK:
        running = list(_RUNNING)
        if reason:
            _STOPPED.update({proc.pid: reason for proc in running})
            _stopping[:] = [reason]
    for proc in running:
        if proc.poll() is None:
            kill_tree(proc)


def resume_runs() -> None:
    """Let runs start again after :func:`stop_all_runs` (the stopped batch has ended)."""
    with _LOCK:
        _stopping.clear()


def stop_reason(proc: subprocess.Popen[bytes]) -> str | None:
    """Why :func:`stop_all_runs` stopped ``proc`` (and forget it), or None."""
    with _LOCK:
        return _STOPPED.pop(proc.pid, None)
