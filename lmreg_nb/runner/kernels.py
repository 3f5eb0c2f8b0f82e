"""The papermill child of one run: ``python -m lmreg_nb.runner.kernels NOTEBOOK OUT PARAMS CWD``.

What plain ``python -m papermill`` lacks for runs side by side:

- the kernel talks over the ``ipc`` transport (Unix sockets in the run's private
  folder) where ZeroMQ has it, so parallel kernels never race for TCP ports
  (papermill #511, ipython #12372); elsewhere TCP. Either way the connection
  file (its HMAC key) gets a unique name in the run's private temp folder
  (``TMPDIR``, set by the runner);
- a kernel that fails to start ends the child with :data:`KERNEL_START_EXIT`,
  so the runner can tell it from a failing cell and retry the run once;
- when the runner dies (even by SIGKILL) the child stops its kernel, removes the
  run's private folder (token cache, unscrubbed notebook) and exits, so no
  papermill, kernel or secret outlives the run;
- a wait on the kernel looks again every second (:func:`sliced_polls`), so a missed
  ZeroMQ wake-up costs a second, not the cell's whole timeout (jupyter/nbclient#312).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import inspect
import os
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from queue import Empty
from typing import TYPE_CHECKING, Any

from ..i18n import _
from .runs import RUN_PREFIX, remove_run_folder

if TYPE_CHECKING:
    from traitlets.config import Config

__all__ = [
    "KERNEL_START_EXIT",
    "KernelStartError",
    "ipc_prefix",
    "ipc_usable",
    "kernel_config",
    "main",
    "readable_parameters",
    "sliced",
    "sliced_polls",
]

#: The child's exit code when the kernel did not start (EX_TEMPFAIL: worth one retry).
KERNEL_START_EXIT = 75
#: Unix socket paths are limited to 107 bytes; ipc needs "<prefix>-<port>" to fit.
_MAX_SOCKET_PATH = 100
_WATCH_INTERVAL_S = 0.5
#: After the runner died and the kernel was stopped: the most the watcher waits for
#: papermill's last save before it removes the folder.
_LAST_SAVE_S = 5.0
#: Set once papermill has returned (its last save done).
_papermill_done = threading.Event()
#: How long an orphaned child waits for its watcher's cleanup before it exits anyway.
_ORPHAN_CLEANUP_S = 15.0
#: The longest a wait on the kernel's messages goes without looking again.
_POLL_SLICE_S = 1.0

_GetMsg = Callable[[Any, "float | None"], Awaitable[dict[str, Any]]]


class KernelStartError(RuntimeError):
    """The notebook's kernel did not start or did not answer."""


def ipc_prefix(folder: Path) -> str | None:
    """The ipc socket prefix for a run's ``folder``, or None when ipc is unavailable there."""
    prefix = str(folder / "k")
    return prefix if ipc_usable(prefix) else None


def ipc_usable(prefix: str) -> bool:
    """Whether a kernel can talk over ipc at the socket prefix ``prefix``: zmq has ipc
    here, and ``<prefix>-<port>`` fits a Unix socket's path."""
    try:
        import zmq
    except ImportError:  # pragma: no cover - jupyter_client depends on pyzmq
        return False
    return os.name != "nt" and bool(zmq.has("ipc")) and len(prefix) + 7 <= _MAX_SOCKET_PATH


def kernel_config(ipc: str | None) -> Config:
    """papermill's ``config``: the kernel over ipc at the socket prefix ``ipc`` (see
    :func:`ipc_prefix`), or over TCP when it is None."""
    from traitlets.config import Config

    config = Config()
    if ipc:
        config.KernelManager.transport = "ipc"
        config.KernelManager.ip = ipc
    return config


def _guard_kernel_start() -> None:
    """Make a failed kernel start raise KernelStartError (nbclient raises several types).

    nbclient has each step twice, async and a sync wrapper bound to the original
    coroutine (papermill calls the sync one): both are wrapped.
    """
    from nbclient import NotebookClient

    def guarded(method: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.iscoroutinefunction(method):

            @functools.wraps(method)
            async def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
                try:
                    return await method(self, *args, **kwargs)
                except Exception as exc:
                    raise KernelStartError(f"{type(exc).__name__}: {exc}") from exc

            return wrapper

        @functools.wraps(method)
        def sync_wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return method(self, *args, **kwargs)
            except KernelStartError:
                raise
            except Exception as exc:
                raise KernelStartError(f"{type(exc).__name__}: {exc}") from exc

        return sync_wrapper

    for name in ("async_start_new_kernel", "async_start_new_kernel_client",
                 "start_new_kernel", "start_new_kernel_client"):  # fmt: skip
        setattr(NotebookClient, name, guarded(getattr(NotebookClient, name)))


def sliced(get_msg: _GetMsg, slice_s: float = _POLL_SLICE_S) -> _GetMsg:
    """``get_msg`` (an async channel's), waiting in slices of ``slice_s`` up to its timeout.

    pyzmq's asyncio poll can miss the wake-up of a message that has arrived and see it
    only when its timeout ends (it looks once more then). nbclient waits for a cell's
    reply with the cell's whole timeout: a cell showing widgets took 120 s instead of
    66 ms, then went on as if nothing had happened.
    """

    @functools.wraps(get_msg)
    async def get_msg_sliced(self: Any, timeout: float | None = None) -> dict[str, Any]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = slice_s if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                return await get_msg(self, min(slice_s, left))
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    return get_msg_sliced


def sliced_polls() -> None:
    """Make every async kernel client's waits :func:`sliced` (once per process)."""
    from jupyter_client.channels import AsyncZMQSocketChannel

    if not hasattr(AsyncZMQSocketChannel.get_msg, "__wrapped__"):
        AsyncZMQSocketChannel.get_msg = sliced(AsyncZMQSocketChannel.get_msg)  # type: ignore[method-assign,assignment]


def readable_parameters() -> None:
    """Make papermill write text parameters as people read them: ``contact_name = '王芳'``.

    Its Python translator escapes every non-ASCII character (``"\\u738b\\u82b3"``), so
    a Chinese record's parameters cell was unreadable. ``repr`` keeps printable text
    as it is and still escapes what is not printable (control characters, U+2028).
    """
    from papermill.translators import PythonTranslator, papermill_translators

    class ReadablePythonTranslator(PythonTranslator):
        @classmethod
        def translate_str(cls, val: str) -> str:
            return repr(val)

    papermill_translators.register("python", ReadablePythonTranslator)


def _stop_when_orphaned(parent: int, run_folder: Path | None) -> None:
    """If the runner dies, stop this child's kernel, remove the run's private folder
    (its token cache and the unscrubbed notebook) and exit: a SIGKILLed run leaves
    neither a process nor a secret behind for longer than a second or so."""
    import psutil

    while os.getppid() == parent:
        time.sleep(_WATCH_INTERVAL_S)
    kernels: list[psutil.Process] = []
    with contextlib.suppress(psutil.Error):
        kernels = psutil.Process().children(recursive=True)
    for child in kernels:
        with contextlib.suppress(psutil.Error):
            child.kill()
    psutil.wait_procs(kernels, timeout=3)  # dead before their folder goes
    # papermill saves the notebook once more when its kernel dies: a save crossing the
    # removal kept the folder (and the unscrubbed notebook). The folder goes after it.
    _papermill_done.wait(_LAST_SAVE_S)
    if run_folder is not None:
        # A kernel being started just now is in its own session and was not our child
        # when we looked: the folder's sweep finds it by its connection file.
        remove_run_folder(run_folder)
    os._exit(1)


def _run_folder(output: str) -> Path | None:
    """The runner's private folder holding ``output``, or None when it is not one (the
    child removes it when orphaned; nothing else is ever removed)."""
    folder = Path(output).resolve().parent
    return folder if folder.name.startswith(RUN_PREFIX) else None


def main(argv: list[str] | None = None) -> int:
    """Run one notebook with papermill; the exit code says how it went."""
    parser = argparse.ArgumentParser(prog="python -m lmreg_nb.runner.kernels")
    parser.add_argument("notebook")
    parser.add_argument("output")
    parser.add_argument("parameters", help="a YAML file of parameters")
    parser.add_argument("cwd")
    parser.add_argument("--ipc", default=None, help="socket prefix for the ipc transport")
    args = parser.parse_args(argv)
    parent = os.getppid()
    watcher = threading.Thread(
        target=_stop_when_orphaned,
        args=(parent, _run_folder(args.output)),
        name="lmreg-orphan",
        daemon=True,
    )
    watcher.start()
    try:
        return _papermill(args)
    finally:
        _papermill_done.set()
        if os.getppid() != parent:
            # The runner died: the watcher stops the kernel, removes the folder, then ends
            # this process. Returning first (the kernel's death can end papermill) could cut
            # it off before the folder is gone.
            watcher.join(timeout=_ORPHAN_CLEANUP_S)


def _papermill(args: argparse.Namespace) -> int:
    """Execute the notebook; the exit code says how it went."""
    import papermill
    import yaml

    _guard_kernel_start()
    readable_parameters()
    sliced_polls()
    config = kernel_config(args.ipc)
    parameters = yaml.safe_load(Path(args.parameters).read_text(encoding="utf-8")) or {}
    try:
        papermill.execute_notebook(
            args.notebook, args.output, parameters=parameters, cwd=args.cwd,
            progress_bar=False, log_output=False, config=config,
        )  # fmt: skip
    except KernelStartError as exc:
        print(_("kernel did not start: {error}").format(error=exc), file=sys.stderr)
        return KERNEL_START_EXIT
    except papermill.PapermillExecutionError:
        return 1  # the failing cell's error is in the output notebook
    except Exception as exc:  # papermill's own errors: one line for the runner to show
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
