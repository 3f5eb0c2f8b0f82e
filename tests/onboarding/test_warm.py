"""The between-cells warm-up (issue 34): it imports only while no cell runs, once per kernel
(that a leaf it imports does not pull in the whole probe: tests/core/test_import_cost.py)."""

from __future__ import annotations

import itertools
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lmreg_nb.onboarding import warm

#: A module whose import takes a while and says which thread ran it, and when.
SLOW = """\
import threading, time
import {log}
start = time.perf_counter()
time.sleep({seconds})
{log}.SEEN.append(("{name}", threading.current_thread().name, start, time.perf_counter()))
"""


class Events:
    """IPython's ``shell.events``: what preload_between_cells registers, triggered by hand."""

    def __init__(self) -> None:
        self.callbacks: dict[str, list[Callable[[], None]]] = {}

    def register(self, event: str, callback: Callable[[], None]) -> None:
        self.callbacks.setdefault(event, []).append(callback)

    def trigger(self, event: str) -> None:
        for callback in self.callbacks.get(event, []):
            callback()


class Shell:
    def __init__(self) -> None:
        self.events = Events()


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on sys.path for made-up modules, and a fresh warm-up state."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(warm, "_started", False)
    (tmp_path / "warm_log.py").write_text("SEEN = []\n", encoding="utf-8")
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith(("warm_log", "warm_mod_"))]:
        del sys.modules[name]
    if warm._TURN.locked():  # release it, so the next tests do not hang on it
        warm._TURN.release()
        pytest.fail("a test left the turn held")


def _slow(folder: Path, name: str, seconds: float) -> str:
    text = SLOW.format(log="warm_log", name=name, seconds=seconds)
    (folder / f"{name}.py").write_text(text, encoding="utf-8")
    return name


def test_nothing_is_imported_while_the_calling_cell_runs(modules: Path) -> None:
    shell = Shell()
    names = (_slow(modules, "warm_mod_a", 0.0), _slow(modules, "warm_mod_b", 0.0))
    done = warm.preload_between_cells(shell, names)
    assert done is not None
    assert not done.wait(0.3), "the warm-up imported while the cell that started it ran"
    assert "warm_mod_a" not in sys.modules
    shell.events.trigger("post_execute")  # the cell ends: the kernel waits for papermill
    assert done.wait(10)
    assert {"warm_mod_a", "warm_mod_b"} <= set(sys.modules)
    seen = sys.modules["warm_log"].SEEN
    assert [name for name, *_ in seen] == ["warm_mod_a", "warm_mod_b"]
    assert all(thread == "lmreg-warm-up" for _, thread, *_ in seen)


def test_a_cell_and_the_warm_up_never_import_at_the_same_time(modules: Path) -> None:
    """Two threads importing at once may deadlock on the import locks: they take turns."""
    shell = Shell()
    names = tuple(_slow(modules, f"warm_mod_{n}", 0.05) for n in range(4))
    cell_module = _slow(modules, "warm_mod_cell", 0.05)
    done = warm.preload_between_cells(shell, names)
    assert done is not None
    shell.events.trigger("post_execute")
    time.sleep(0.07)  # the warm-up is importing by now
    shell.events.trigger("pre_execute")  # the next cell: waits for the import under way
    __import__(cell_module)
    shell.events.trigger("post_execute")
    assert done.wait(10)
    spans = sorted((start, end, name) for name, _, start, end in sys.modules["warm_log"].SEEN)
    assert len(spans) == 5
    for (_, end, first), (start, _, second) in itertools.pairwise(spans):
        assert end <= start, f"{first} and {second} were imported at the same time"


def test_a_waiting_cell_gets_the_turn_after_the_one_import_under_way(modules: Path) -> None:
    """The warm-up must not take the turn back at once, import after import, while a cell
    waits for it (a lock is not fair: the releasing thread usually wins it again)."""
    shell = Shell()
    names = tuple(_slow(modules, f"warm_mod_{n}", 0.03) for n in range(12))
    done = warm.preload_between_cells(shell, names)
    assert done is not None
    shell.events.trigger("post_execute")
    # The warm-up has begun its first import (a busy machine may take longer than any fixed
    # sleep to start its thread: 45 ms was once not enough with both cores busy).
    deadline = time.monotonic() + 10
    while "warm_mod_0" not in sys.modules and time.monotonic() < deadline:
        time.sleep(0.005)
    shell.events.trigger("pre_execute")  # the next cell
    imported = len(sys.modules["warm_log"].SEEN)
    shell.events.trigger("post_execute")
    assert done.wait(10)
    # At most the import under way finished before the cell got the turn (one more for a
    # busy machine's scheduling), never the whole list.
    assert imported <= 4, imported


def test_a_missing_module_is_skipped_and_the_rest_imported(modules: Path) -> None:
    shell = Shell()
    names = ("warm_mod_not_there", _slow(modules, "warm_mod_after", 0.0))
    done = warm.preload_between_cells(shell, names)
    assert done is not None
    shell.events.trigger("post_execute")
    assert done.wait(10)
    assert "warm_mod_after" in sys.modules


def test_only_once_per_kernel_and_an_unpaired_post_execute_is_harmless(modules: Path) -> None:
    shell = Shell()
    first = warm.preload_between_cells(shell, (_slow(modules, "warm_mod_once", 0.0),))
    assert first is not None
    assert warm.preload_between_cells(shell, ("warm_mod_twice",)) is None
    shell.events.trigger("post_execute")
    shell.events.trigger("post_execute")  # a cell that failed before pre_execute
    assert first.wait(10)
    assert "warm_mod_twice" not in sys.modules
    assert not warm._TURN.locked()


def test_every_warm_module_exists() -> None:
    """A renamed module would be skipped in silence: the list must follow the code."""
    import importlib.util

    missing = [name for name in warm.WARM_MODULES if importlib.util.find_spec(name) is None]
    assert missing == []
