"""Running a stored notebook headless with papermill: in this process, or apart (tests/notebooks).

papermill is not safe in a thread beside other tests: its local file handler is one
object for the whole process, and every read and write of a notebook (each cell's
save) does ``os.chdir`` to the folder the run began in and back to where the process
was. A run in a thread moves the pytest process's folder under the tests running beside
it, and may put it back in a folder a finished test left (nbval's relative
``nbval_sanitize.cfg`` then failed in a later file). A run beside others therefore goes
in a child process of its own (:func:`start_apart`); :func:`execute_in` is for the main
thread, one run at a time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

#: papermill in a child process: its arguments come on stdin (never the command line),
#: exit 3 when a cell failed (PapermillExecutionError), its message on stderr. Its waits on
#: the kernel are sliced as the runner's child's are (lmreg_nb.runner.kernels.sliced_polls);
#: its kernel talks over ipc as the runner's does (see :func:`ipc_prefix`).
_CHILD = """
import json, sys
import papermill
from papermill.exceptions import PapermillExecutionError
from lmreg_nb.runner.kernels import kernel_config, sliced_polls
sliced_polls()
a = json.load(sys.stdin)
try:
    papermill.execute_notebook(a["input"], a["output"], parameters=a["parameters"],
                               cwd=a["cwd"], progress_bar=False, kernel_name="python3",
                               execution_timeout=120, config=kernel_config(a["ipc"]))
except PapermillExecutionError as exc:
    sys.stderr.write(str(exc)[-3000:])
    sys.exit(3)
"""
#: A failed cell, as the child reports it.
_CELL_FAILED = 3


def _paths(folder: Path, stem: str) -> tuple[Path, Path, Path]:
    """The stored notebook, its output in ``folder`` and the kernel's folder."""
    from lmreg_nb.runner.shipped import notebook_path

    cwd = folder / "cwd"
    cwd.mkdir(exist_ok=True)
    return notebook_path(stem), folder / f"{stem}.out.ipynb", cwd


def ipc_prefix(folder: Path) -> str | None:
    """A socket prefix of its own for one run's kernel, in ``folder`` (None: TCP).

    Over TCP jupyter_client picks free ports and the kernel binds them later: another
    process can take one meanwhile ("Address already in use", the kernel died before it
    answered: seen in CI). The runner's kernels use ipc for that reason; so do these.
    """
    from lmreg_nb.runner.kernels import ipc_prefix as runner_prefix

    return runner_prefix(Path(tempfile.mkdtemp(prefix="k", dir=folder)))


def _expected(stem: str, failed: bool, expect_error: bool, why: str = "") -> None:
    if failed and not expect_error:
        raise AssertionError(f"{stem} failed: {why}")
    assert failed or not expect_error, f"{stem} ran without the expected error"


def execute_in(
    folder: Path, stem: str, parameters: dict[str, Any], *, expect_error: bool = False
) -> Path:
    """Run a stored notebook with papermill in this process (a kernel of this venv, this
    process's environment); return the output path in ``folder``. Main thread only."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    from lmreg_nb.runner.kernels import kernel_config, sliced_polls

    sliced_polls()  # as the runner's child does: a missed wake-up costs 1 s, not 120 s
    # Refused rather than racing: in a thread it moves the folder of every test beside it.
    assert threading.current_thread() is threading.main_thread(), "use start_apart"
    notebook, out, cwd = _paths(folder, stem)
    try:
        papermill.execute_notebook(
            str(notebook), str(out), parameters=parameters, cwd=str(cwd),
            progress_bar=False, kernel_name="python3", execution_timeout=120,
            config=kernel_config(ipc_prefix(folder)),
        )  # fmt: skip
    except PapermillExecutionError as exc:
        _expected(stem, True, expect_error, str(exc)[-3000:])
    else:
        _expected(stem, False, expect_error)
    return out


class ApartRun:
    """A stored notebook running in a child process (:func:`start_apart`)."""

    def __init__(
        self, stem: str, proc: subprocess.Popen[str], out: Path, err: Path, expect_error: bool
    ) -> None:
        self.stem, self.proc, self.out, self.err = stem, proc, out, err
        self.expect_error = expect_error

    def result(self, timeout: float = 300) -> Path:
        """The output path once the run ended as expected (killed past ``timeout`` s)."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.close()
            raise AssertionError(f"{self.stem} ran past {timeout} s") from None
        err = self.err.read_text(encoding="utf-8", errors="replace")[-3000:]
        if code not in (0, _CELL_FAILED):
            raise AssertionError(f"{self.stem}: papermill exited {code}: {err}")
        _expected(self.stem, code == _CELL_FAILED, self.expect_error, err)
        return self.out

    def close(self) -> None:
        """Stop the run if it is still going (a test that failed before reading it)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def start_apart(
    folder: Path, stem: str, parameters: dict[str, Any], *, env: dict[str, str] | None = None,
    expect_error: bool = False,
) -> ApartRun:  # fmt: skip
    """Start a stored notebook in a child process of its own, safe beside other tests: its
    kernel gets exactly ``env`` (default this process's environment now) and the folder
    ``folder/cwd``; :meth:`ApartRun.result` waits for its output path."""
    notebook, out, cwd = _paths(folder, stem)
    err = folder / f"{stem}.stderr.txt"  # a file, not a pipe: nobody reads it until the end
    with err.open("w", encoding="utf-8") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD], env=dict(os.environ) if env is None else env,
            cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=stderr, text=True,
        )  # fmt: skip
    assert proc.stdin is not None
    job = {"input": str(notebook), "output": str(out), "parameters": parameters, "cwd": str(cwd),
           "ipc": ipc_prefix(folder)}  # fmt: skip
    proc.stdin.write(json.dumps(job))
    proc.stdin.close()
    return ApartRun(stem, proc, out, err, expect_error)
