"""Run one notebook headless and keep a scrubbed record of it: ``run_notebook``.

papermill runs in a child process (:mod:`lmreg_nb.runner.kernels`) whose environment is
a clean base plus the run's own variables, so one school's secrets never reach
another's run, and the operator's shell (its tokens, its .env) never reaches
any. The child writes into a private temporary folder (:mod:`lmreg_nb.runner.runs`)
that is deleted afterwards, whatever way the run ends; only the scrubbed
notebook and its HTML copies reach ``out_dir``, each written atomically.
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError
from ..i18n import _
from ..records import to_jsonable
from ..summary import Summary
from .environment import BASE_VARIABLES, check_parameters, clean_environment, run_secrets
from .kernels import KERNEL_START_EXIT, ipc_prefix
from .record import Ended, load_output, make_record, preload_html_export, write_atomic, write_record
from .runs import (
    Interrupted,
    held_interrupts,
    interruptible,
    kill_tree,
    note_child,
    released_interrupts,
    run_folder,
    stop_all_runs,
    stop_reason,
    tracked,
)

__all__ = [
    "BASE_VARIABLES",
    "RunResult",
    "check_parameters",
    "clean_environment",
    "run_notebook",
    "stop_all_runs",
    "write_atomic",
]

log = logging.getLogger("lmreg_nb")


@dataclass(frozen=True)
class RunResult:
    """What one notebook run produced."""

    status: str  # "ok" | "failed"
    notebook: Path | None
    html: Path | None
    records: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # one line
    duration_s: float = 0.0
    short_html: Path | None = None  # the principal's view: no code cells
    kernel_retried: bool = False  # the kernel failed to start once and the run was retried
    #: The recorded onboarding summary, read once (None when the notebook recorded none).
    summary: Summary | None = None
    #: The error is only the summary's status (not ok): its go-live list says why.
    status_only: bool = False

    @property
    def ok(self) -> bool:
        """Whether the run succeeded."""
        return self.status == "ok"

    def to_json(self) -> dict[str, Any]:
        """Plain JSON data (paths as strings)."""
        return {
            "status": self.status,
            "notebook": str(self.notebook) if self.notebook else None,
            "html": str(self.html) if self.html else None,
            "short_html": str(self.short_html) if self.short_html else None,
            "records": self.records,
            "error": self.error,
            "duration_s": round(self.duration_s, 3),
            "kernel_retried": self.kernel_retried,
        }


def _check_readable(notebook: Path) -> None:
    import nbformat

    try:
        nbformat.read(notebook, as_version=4)
    except Exception as exc:  # nbformat raises several unrelated types for a bad file
        raise ConfigurationError(
            _("{path} is not a readable notebook ({kind}): give an .ipynb file").format(
                path=notebook, kind=type(exc).__name__
            )
        ) from None


# ---------------------------------------------------------------- the papermill child


def _launch(work: Path, command: list[str], env: Mapping[str, str], timeout: float | None) -> Ended:
    """One papermill child, waited for; a timeout or a signal stops its whole tree."""
    stderr_path = work / "stderr.txt"
    with open(stderr_path, "wb") as stderr:
        proc = subprocess.Popen(
            command, env=dict(env), cwd=work, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=stderr,
            start_new_session=True,  # its own process group, so a stop reaches all of it
        )  # fmt: skip
        note_child(work, proc)
        ended = Ended(None)
        with tracked(proc):
            try:
                with released_interrupts():  # the one place a signal cuts the run
                    ended.returncode = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                kill_tree(proc)
                ended.stopped = _("timed out after {seconds} s").format(seconds=f"{timeout:g}")
            except Interrupted as exc:  # SIGTERM / SIGINT to this process (main thread)
                kill_tree(proc)
                ended.stopped, ended.interrupt = exc.reason, exc
            except BaseException:
                kill_tree(proc)
                raise
            ended.stopped = stop_reason(proc) or ended.stopped  # a batch that was stopped
    ended.stderr = stderr_path.read_text(encoding="utf-8", errors="replace")
    return ended


def _execute(
    work: Path, notebook: Path, kernel_cwd: Path, env: dict[str, str], timeout: float | None
) -> Ended:
    """Run papermill; a kernel that did not start gets one more try (recorded as such)."""
    out, params = work / "executed.ipynb", work / "parameters.yaml"
    command = [sys.executable, "-m", "lmreg_nb.runner.kernels", str(notebook.resolve()), str(out),
               str(params), str(kernel_cwd)]  # fmt: skip
    prefix = ipc_prefix(work)
    command += ["--ipc", prefix] if prefix else []
    deadline = None if timeout is None else time.monotonic() + timeout
    ended = _launch(work, command, env, timeout)
    if ended.returncode == KERNEL_START_EXIT and ended.stopped is None:
        log.warning("the kernel of %s did not start; trying once more", notebook.name)
        with contextlib.suppress(FileNotFoundError):
            out.unlink()
        left = None if deadline is None else max(1.0, deadline - time.monotonic())
        ended = _launch(work, command, env, left)
        ended.retried = True
    return ended


def _check_inputs(notebook: Path, timeout: float | None) -> None:
    """A configuration error for a missing or unreadable notebook, or a timeout not above 0."""
    if not notebook.is_file():
        raise ConfigurationError(
            _("no notebook at {path}: give an existing .ipynb").format(path=notebook)
        )
    _check_readable(notebook)
    if timeout is not None and timeout <= 0:
        raise ConfigurationError(_("the timeout must be a positive number of seconds"))


def _prepare(
    work: Path, parameters: Mapping[str, Any], run_env: dict[str, str], cwd: Path | None
) -> Path:
    """Write the parameters into ``work`` and point the run's files there; the kernel's cwd."""
    import yaml

    (work / "parameters.yaml").write_text(
        yaml.safe_dump(to_jsonable(dict(parameters)), allow_unicode=True), encoding="utf-8"
    )
    # Each run exchanges its own token (in a cache that dies with the run): the
    # record then proves these credentials work, and a wrong appSecret cannot
    # pass on a token another run cached for the same appId.
    run_env.setdefault("LMREG_TOKEN_CACHE", str(work / "tokens.json"))
    # The kernel's connection file (its HMAC key), its ipc sockets and any temp
    # file the notebook makes go here too, so a stopped run leaves nothing behind.
    (work / "tmp").mkdir()
    for name in ("TMPDIR", "TEMP", "TMP"):
        run_env[name] = str(work / "tmp")
    kernel_cwd = Path(cwd) if cwd else work / "cwd"
    kernel_cwd.mkdir(exist_ok=True)
    return kernel_cwd


def run_notebook(
    notebook: Path,
    out_dir: Path,
    *,
    parameters: Mapping[str, Any],
    env: Mapping[str, str],
    timeout: float | None = None,
    cwd: Path | None = None,
    stem: str | None = None,
) -> RunResult:
    """Run ``notebook`` headless with papermill and write its scrubbed record to ``out_dir``.

    ``env`` (the run's LMREG_* variables, secrets included) goes on top of a clean
    base environment; ``parameters`` must hold no secret. ``cwd`` is the kernel's
    working folder (default: an empty private one, so no stray ./.env is read).
    The token cache is private to the run unless ``env`` names LMREG_TOKEN_CACHE.
    Writes ``out_dir/<stem>.ipynb``, ``<stem>.html`` (the full record) and
    ``<stem>-short.html`` (no code cells), stem: the notebook's. Raises
    SecretLeakError (writing nothing) if a secret survives scrubbing; re-raises
    :class:`~lmreg_nb.runner.runs.Interrupted` after writing the interrupted run's record.
    """
    started = time.monotonic()
    notebook = Path(notebook)
    _check_inputs(notebook, timeout)
    run_env = clean_environment(env)
    secrets = run_secrets(run_env)
    check_parameters(parameters, secrets)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = stem or notebook.stem

    # Held from here to the folder's removal: a signal cuts only the wait on papermill.
    with interruptible(), held_interrupts() as signals, run_folder() as work:
        kernel_cwd = _prepare(work, parameters, run_env, cwd)
        preload_html_export()
        ended = _execute(work, notebook, kernel_cwd, run_env, timeout)
        raw, executed = load_output(work / "executed.ipynb", notebook)
        clean, records, summary, error, status_only = make_record(
            notebook, ended, raw, executed, secrets
        )
        nb_path, html_path, short_path = write_record(
            clean, summary, out_dir, stem, secrets, notebook.name
        )

    result = RunResult(
        status="ok" if error is None else "failed", notebook=nb_path, html=html_path,
        records=records, error=error, duration_s=time.monotonic() - started,
        short_html=short_path, kernel_retried=ended.retried, summary=summary,
        status_only=status_only,
    )  # fmt: skip
    log.info("ran %s: %s in %.1f s", notebook.name, result.status, result.duration_s)
    interrupt = ended.interrupt or signals.take()  # a signal held while the record was written
    if interrupt is not None:
        raise interrupt
    return result
