"""Blocking twins of the probe's coroutines: one signature, also inside Jupyter's loop.

``check_endpoint = blocking(check_endpoint_async)``: the blocking function has
the coroutine's signature (a ParamSpec), so the two never drift apart.
:func:`interruptible` is the capacity search's kind: it always runs in a
thread of its own, and Ctrl-C there ends the search with what it measured
(the coroutine learns of it through :func:`current_interrupt`), instead of
throwing it away.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import functools
import threading
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

__all__ = ["Interrupt", "blocking", "current_interrupt", "interruptible", "run_blocking"]

P = ParamSpec("P")
R = TypeVar("R")


def run_blocking(coro: Coroutine[Any, Any, R]) -> R:
    """Run a coroutine to completion, also from a notebook whose loop is running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    # Jupyter runs cells inside an event loop: use a thread with its own loop.
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="lmreg-probe") as pool:
        return pool.submit(asyncio.run, coro).result()


def blocking(fn: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, R]:
    """The blocking twin of coroutine function ``fn`` (same parameters, same result)."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return run_blocking(fn(*args, **kwargs))

    return _named(run)


class Interrupt:
    """Ctrl-C, told from the waiting thread to the coroutine running in another."""

    def __init__(self) -> None:
        self.fired = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None

    def attach(self) -> None:
        """Called by the coroutine: the task to cancel when Ctrl-C comes."""
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()

    def fire(self) -> None:
        """Ctrl-C: set the flag (checked between steps) and cancel the running task."""
        self.fired.set()
        if self._loop is not None and self._task is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed: the work is over
                self._loop.call_soon_threadsafe(self._task.cancel)


_CURRENT: contextvars.ContextVar[Interrupt | None] = contextvars.ContextVar(
    "lmreg_interrupt", default=None
)


def current_interrupt() -> Interrupt | None:
    """The Interrupt of the :func:`interruptible` call running this coroutine, if any."""
    return _CURRENT.get()


def interruptible(fn: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, R]:
    """The blocking twin of ``fn``, run in a thread of its own; Ctrl-C fires its Interrupt.

    ``fn`` must check :func:`current_interrupt` and return a (partial) result
    when it is cancelled by it; the twin then returns that result.
    """

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        interrupt = Interrupt()

        def in_thread() -> R:
            _CURRENT.set(interrupt)  # the loop's task copies this thread's context
            return asyncio.run(fn(*args, **kwargs))

        # Always a thread of our own: the loop may be Jupyter's, and Ctrl-C lands here.
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="lmreg-probe") as pool:
            future = pool.submit(in_thread)
            try:
                return future.result()
            except KeyboardInterrupt:
                interrupt.fire()
                return future.result()

    return _named(run)


def _named(twin: Callable[P, R]) -> Callable[P, R]:
    """``check_endpoint`` for the twin of ``check_endpoint_async`` (wraps copied the name)."""
    for attr in ("__name__", "__qualname__"):
        setattr(twin, attr, getattr(twin, attr).removesuffix("_async"))
    return twin
