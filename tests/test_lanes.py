"""The fast lane starts nothing: the guard of tests/lanes.py, on made-up tests.

A guard of its own is installed on top of the session's for each case and stops the
start before it happens (it wraps the session's patches), so these tests start nothing.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import lanes
import pytest
from lanes import UNGUARDED, LaneGuard, describe_exec, message


class _Item:
    """What the guard reads of a pytest item."""

    def __init__(self, nodeid: str, *markers: str, fixtures: dict[str, Any] | None = None):
        self.nodeid, self.markers = nodeid, markers
        self._fixtureinfo = SimpleNamespace(name2fixturedefs=fixtures or {})

    def get_closest_marker(self, name: str) -> object:
        return name if name in self.markers else None


@pytest.fixture
def guard() -> Iterator[LaneGuard]:
    inner = LaneGuard()
    inner.install()
    try:
        yield inner
    finally:
        inner.uninstall()


@contextmanager
def _running(guard: LaneGuard, item: _Item) -> Iterator[None]:
    """As pytest runs ``item``: the guard's protocol hook around it."""
    hook = guard.pytest_runtest_protocol(item)  # type: ignore[arg-type]
    next(hook)
    try:
        yield
    finally:
        with contextlib.suppress(StopIteration):
            next(hook)


@contextmanager
def _fixture(guard: LaneGuard, fixturedef: Any) -> Iterator[None]:
    """As pytest sets up ``fixturedef``: the guard's fixture hook around it."""
    hook = guard.pytest_fixture_setup(fixturedef)
    next(hook)
    try:
        yield
    finally:
        with contextlib.suppress(StopIteration):
            next(hook)


def _fails(guard: LaneGuard, item: _Item, start: Any) -> str:
    """The one line ``start()`` fails with while ``item`` runs."""
    with _running(guard, item), pytest.raises(pytest.fail.Exception) as failed:  # type: ignore[arg-type]
        start()
    return str(failed.value)


def test_a_fast_test_that_listens_fails_naming_itself_and_the_address(guard: LaneGuard) -> None:
    item = _Item("tests/x/test_a.py::test_serves")
    with socket.socket() as sock:
        line = _fails(guard, item, lambda: sock.bind(("127.0.0.1", 0)))
        assert sock.getsockname()[1] == 0, "stopped before it bound"
    assert line == message(item.nodeid, "a socket bound to 127.0.0.1:0")
    assert "\n" not in line and "tests/x/test_a.py::test_serves" in line
    assert guard.violations == {item.nodeid: "a socket bound to 127.0.0.1:0"}


def test_a_fast_test_that_starts_a_process_fails_naming_the_command(guard: LaneGuard) -> None:
    item = _Item("tests/x/test_b.py::test_runs")
    line = _fails(guard, item, lambda: subprocess.run(["no-such-program-xyz", "--flag"]))
    assert "started a process (no-such-program-xyz --flag)" in line


def test_matplotlib_asking_fontconfig_is_a_librarys_own_start() -> None:
    assert describe_exec([b"/usr/bin/fc-list", b"--format=%{file}"]) is None
    assert describe_exec(["python", "-m", "lmreg_nb", "check", "--json"]) == (
        "a process (python -m lmreg_nb check)"
    )


@pytest.mark.parametrize("marker", ["slow", "peer"])
def test_the_slow_and_peer_lanes_are_not_guarded(guard: LaneGuard, marker: str) -> None:
    assert not guard.guarded(_Item("tests/x/test_c.py::t", marker))  # type: ignore[arg-type]
    assert guard.guarded(_Item("tests/x/test_c.py::t"))  # type: ignore[arg-type]


def test_a_file_not_yet_guarded_is_guarded_with_the_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    path = "tests/x/test_not_yet.py"
    monkeypatch.setattr(lanes, "_NAMES", frozenset({"test_not_yet.py"}))
    item = _Item(path + "::t")
    assert not LaneGuard().guarded(item)  # type: ignore[arg-type]
    assert LaneGuard(guard_all=True).guarded(item)  # type: ignore[arg-type]
    moved = _Item("tests/someroom/test_not_yet.py::t")  # moved to its room
    assert not LaneGuard().guarded(moved)  # type: ignore[arg-type]


def test_every_file_is_guarded() -> None:
    # Issue 44 emptied the list: a fast test anywhere that starts something fails.
    assert frozenset() == UNGUARDED
    assert LaneGuard().guarded(_Item("tests/probe/test_keepalive.py::t"))  # type: ignore[arg-type]


def test_a_fixture_that_started_something_counts_for_the_fast_tests_using_it(
    guard: LaneGuard,
) -> None:
    fixturedef = SimpleNamespace(baseid="tests/x", argname="server")
    # A slow test set it up (nothing fails), and the guard noted what it started.
    with _running(guard, _Item("tests/x/test_d.py::slow", "slow")), _fixture(guard, fixturedef):
        guard.started("a socket bound to 127.0.0.1:0")
    assert guard.violations == {}
    fast = _Item("tests/x/test_d.py::fast", fixtures={"server": [fixturedef]})
    with pytest.raises(pytest.fail.Exception) as failed:  # type: ignore[arg-type]
        guard.pytest_runtest_setup(fast)  # type: ignore[arg-type]
    assert "through the fixture 'server'" in str(failed.value)
    # Another file's fixture of the same name is another fixture.
    other = SimpleNamespace(baseid="tests/y", argname="server")
    guard.pytest_runtest_setup(_Item("tests/y/test_e.py::t", fixtures={"server": [other]}))  # type: ignore[arg-type]


def test_a_start_in_another_thread_fails_the_test_when_it_is_reported(guard: LaneGuard) -> None:
    item = _Item("tests/x/test_f.py::t")
    guard.violations[item.nodeid] = "a listening socket"
    report = pytest.TestReport(
        item.nodeid, ("tests/x/test_f.py", 1, "t"), {}, "passed", None, "call"
    )
    hook = guard.pytest_runtest_makereport(item)  # type: ignore[arg-type]
    next(hook)
    with contextlib.suppress(StopIteration):
        hook.send(SimpleNamespace(get_result=lambda: report))
    assert report.failed and "a listening socket" in str(report.longrepr)


def test_uninstall_puts_back_what_was_there(guard: LaneGuard) -> None:
    before = socket.socket.bind
    extra = LaneGuard()
    extra.install()
    assert socket.socket.bind is not before
    extra.uninstall()
    assert socket.socket.bind is before
