"""Import what the onboarding's later cells need while the kernel waits between cells.

A headless run spends much of its own time importing (the registry client,
the probe, the record's HTML; far more when the interpreter may not keep
bytecode, PYTHONDONTWRITEBYTECODE) and much of the rest waiting for papermill,
which saves the whole notebook before and after every cell. The kernel is idle
in those waits: :func:`preload_between_cells` imports the later cells' modules then, one at
a time, in a thread of its own.

Two threads importing at once can deadlock on Python's per-module import
locks (each raising in one of them), so they never do: the warm-up holds
:data:`_TURN` while it imports one module, and the kernel's main thread holds
it for the whole of each cell (IPython's ``pre_execute``/``post_execute``
events). A cell thus waits at most for the one module being imported when it
starts (the warm-up steps aside while a cell waits), work it would mostly have
done itself; whatever the warm-up has not reached when a cell needs it is
imported by the cell, as before.
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from typing import Any

__all__ = ["WARM_MODULES", "preload_between_cells"]

log = logging.getLogger("lmreg_nb")

#: Leaves first, so each import is short (a cell that starts meanwhile waits for one);
#: roughly in the order the onboarding's cells need them (begin, connect, checks, finish).
#: A name that does not exist (any more) is skipped.
WARM_MODULES = (
    "lmreg_nb.settings",
    "idna",
    "h11",
    "httpcore",
    "click",  # httpx imports its command line when click is there
    "httpx",
    "lmreg_nb._decode",
    "lmreg_nb.registry.envelope",
    "lmreg_nb.probe.wire.reasons",
    "lmreg_nb.probe.wire.shapes",
    "lmreg_nb.probe.wire.reply",
    "lmreg_nb.probe.wire.sse",
    "lmreg_nb.probe.target",
    "lmreg_nb.probe.wire.exchange",
    "lmreg_nb.probe.checks.conformance",
    "lmreg_nb.probe.checks.function",
    "lmreg_nb.probe.checks.context_window",
    "lmreg_nb._tls",  # then tls_context(): the CA bundle, loaded once
    "lmreg_nb.registry.retry",
    "filelock",
    "lmreg_nb.registry.token_cache",
    "lmreg_nb.registry.tokens",
    "lmreg_nb.registry.client",
    "sniffio",
    "anyio",  # the checks' async client: httpcore's anyio backend
    "httpcore._backends.anyio",
    "anyio._backends._asyncio",
    "lmreg_nb.probe.blocking",
    "lmreg_nb.probe.wire.chat",
    "lmreg_nb.probe.load.metrics",
    "lmreg_nb.probe.wire.tls",
    "lmreg_nb.probe.checks.golive",
    "lmreg_nb.probe.checks.streams",
    "lmreg_nb.probe.load.levels",
    "lmreg_nb.probe.wire.stream_client",
    "lmreg_nb.probe.load.fixed",
    "lmreg_nb.probe.checks.suite",
    "lmreg_nb.probe.report",
    "lmreg_nb.probe.text.capacity_table",
    "lmreg_nb.records.text",
    "lmreg_nb.records.html",
    "lmreg_nb.records",
)

#: Held by the warm-up for one import, by the kernel's main thread for a whole cell.
_TURN = threading.Lock()
#: Set while a cell waits for the turn: the warm-up does not take it again meanwhile (a
#: lock is not fair; the thread that released it would usually win it back at once).
_CELL_WAITING = threading.Event()
_started = False


class _CellTurn:
    """IPython event callbacks: the main thread takes the turn for each cell."""

    def __init__(self) -> None:
        self.held = False

    def pre_execute(self) -> None:
        if not self.held:
            _CELL_WAITING.set()
            _TURN.acquire()
            _CELL_WAITING.clear()
            self.held = True

    def post_execute(self) -> None:
        # post_execute may come without pre_execute (a cell that failed to parse).
        if self.held:
            self.held = False
            _TURN.release()


def _run(modules: tuple[str, ...], done: threading.Event) -> None:
    try:
        for name in modules:
            while _CELL_WAITING.is_set():  # let the cell go first; it takes the turn soon
                time.sleep(0.001)
            with _TURN:
                try:
                    importlib.import_module(name)
                    if name == "lmreg_nb._tls":
                        from .._tls import tls_context

                        tls_context()
                except Exception as exc:  # an optional module: the cell imports it, or not
                    log.debug("warm-up: %s not imported: %s", name, type(exc).__name__)
    finally:
        done.set()


def preload_between_cells(
    shell: Any, modules: tuple[str, ...] = WARM_MODULES
) -> threading.Event | None:
    """Start importing ``modules`` between the cells of IPython ``shell``, once per process.

    Returns an Event set when the warm-up is over (None when it was started before).
    """
    global _started
    if _started:
        return None
    _started = True
    turn = _CellTurn()
    shell.events.register("pre_execute", turn.pre_execute)
    shell.events.register("post_execute", turn.post_execute)
    # The cell calling this runs on: it holds the turn until it ends (post_execute).
    turn.pre_execute()
    done = threading.Event()
    threading.Thread(target=_run, args=(modules, done), name="lmreg-warm-up", daemon=True).start()
    return done
