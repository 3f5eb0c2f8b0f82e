"""The fast lane starts nothing (tests/conftest.py's hooks call this; test_lanes tests it).

`pytest -m "not slow"` is the inner loop: a test there that starts a process (subprocess,
fork, posix_spawn, os.system) or binds a socket (a server: uvicorn, http.server, asyncio's
create_server, a raw listening socket) fails, with one line naming the test and what it
started. Such a test either goes in-process (``httpx.MockTransport``, an ASGI transport,
``TestClient(create_app())``, CliRunner) or says that the process or the socket is its
point with ``pytestmark = pytest.mark.slow``. Connecting to an address is not guarded (a
refused connection starts nothing).

A fixture of a wider scope that started something (the session's ``sandbox``) counts for
every fast test that uses it, also when a slow test set it up first.

:data:`UNGUARDED` lists the files whose fast tests still start a server or a process;
`pytest --guard-all-lanes` guards them too, to see what is left. It is empty (issue 44):
every file is guarded.

`pytest --lanes-report FILE` notes, for every test file and in every lane, whether its
tests started a process or bound a socket (through a fixture too), and appends it to FILE
as JSON lines (one per pytest process: xdist's workers each add theirs);
`scripts/count_process_tests --measured FILE` counts the files. The static count reads
names; this one what ran.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

#: Files not guarded yet (paths from the repository's root; matched by file name, so a file
#: moved into its room stays listed). Empty since issue 44: every fast test is guarded; a
#: file may be listed here only for a while, with an issue that empties the list again.
UNGUARDED: frozenset[str] = frozenset()

_NAMES = frozenset(path.rsplit("/", 1)[-1] for path in UNGUARDED)

#: Programs a library runs by itself once per process, not a test's doing: matplotlib asks
#: fontconfig for the system's fonts when it builds its font cache; Python's
#: platform.processor() runs uname (openai's client asks it for its request headers).
LIBRARY_PROGRAMS = frozenset({"fc-list", "uname"})

#: Markers of the lanes that may start processes and servers.
STARTING_MARKERS = ("slow", "peer")


class LaneGuard:
    """Watches process starts and socket binds; blames the fast test running at the time."""

    def __init__(self, *, guard_all: bool = False, report: str | None = None) -> None:
        self.guard_all = guard_all
        self.report = report
        #: test file -> what its tests started ("process", "socket"), in any lane.
        self.files: dict[str, set[str]] = {}
        self.item: pytest.Item | None = None
        #: nodeid -> what its test started (the first thing), for the report.
        self.violations: dict[str, str] = {}
        #: (fixture's base id, name) -> what it started when it was set up (any lane).
        self.starters: dict[tuple[str, str], str] = {}
        self._fixtures: list[tuple[str, str]] = []
        self._undo: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    # -- which tests ---------------------------------------------------------------------

    def guarded(self, item: pytest.Item) -> bool:
        """Whether ``item`` is a fast-lane test of a guarded file."""
        if any(item.get_closest_marker(m) for m in STARTING_MARKERS):
            return False
        # By file name: a file of the list moved into its room stays unguarded until it
        # is emptied (names are unique under tests/, as pytest's prepend import needs).
        return self.guard_all or item.nodeid.split("::")[0].rsplit("/", 1)[-1] not in _NAMES

    # -- what starts something -----------------------------------------------------------

    def started(self, what: str) -> None:
        """Called by the patched functions: note it, and stop a guarded test at once."""
        with self._lock:
            for name in self._fixtures:
                self.starters.setdefault(name, what)
            item = self.item
            if item is not None:
                self._note(item, what)
            if item is None or not self.guarded(item):
                return
            self.violations.setdefault(item.nodeid, what)
        pytest.fail(message(item.nodeid, what), pytrace=False)

    def install(self) -> None:
        """Patch the ways to start a process or a server (until :meth:`uninstall`)."""
        import _posixsubprocess  # type: ignore[import-not-found]

        exec_ = lambda a, k: describe_exec(a[0] if a else None)  # noqa: E731
        self._wrap(_posixsubprocess, "fork_exec", exec_)  # multiprocessing's spawn
        if getattr(subprocess, "_fork_exec", None) is not None:
            self._wrap(subprocess, "_fork_exec", exec_)  # Popen's own reference to it
        for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
            if hasattr(os, name):
                self._wrap(os, name, lambda a, k, name=name: f"a process (os.{name})")
        self._wrap(socket.socket, "bind", lambda a, k: f"a socket bound to {_address(a)}")
        self._wrap(socket.socket, "listen", lambda a, k: "a listening socket")

    def uninstall(self) -> None:
        while self._undo:
            self._undo.pop()()

    def _wrap(
        self,
        owner: Any,
        name: str,
        describe: Callable[[tuple[Any, ...], dict[str, Any]], str | None],
    ) -> None:
        real = getattr(owner, name)
        guard = self

        def patched(*args: Any, **kwargs: Any) -> Any:
            # A method's ``self`` is not part of what is described.
            described = args[1:] if isinstance(owner, type) else args
            what = describe(described, kwargs)
            if what is not None:
                guard.started(what)
            return real(*args, **kwargs)

        patched.__wrapped__ = real  # type: ignore[attr-defined]
        inherited = name not in vars(owner)  # socket.socket's bind is _socket.socket's
        setattr(owner, name, patched)
        self._undo.append(lambda: delattr(owner, name) if inherited else setattr(owner, name, real))

    # -- the hooks (a plugin of its own: a conftest's hooks do not see session fixtures) --

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        """While ``item`` runs (setup, call, teardown) it is the one blamed."""
        self.item = item
        try:
            yield
        finally:
            self.item = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef: pytest.FixtureDef[Any]) -> Iterator[None]:
        """While ``fixturedef`` is set up, what starts is noted as its own."""
        self._fixtures.append((fixturedef.baseid, fixturedef.argname))
        try:
            yield
        finally:
            self._fixtures.pop()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """A guarded test using a (wider-scoped) fixture that started something fails."""
        guarded = self.guarded(item)
        # The definitions this test uses (two files may each have a ``platform``).
        info = getattr(item, "_fixtureinfo", None)
        defs = getattr(info, "name2fixturedefs", {})
        for name, chain in defs.items():
            key = (chain[-1].baseid, name) if chain else None
            if key in self.starters:
                self._note(item, self.starters[key])
                if not guarded:
                    continue
                what = f"{self.starters[key]} (through the fixture {name!r})"
                self.violations.setdefault(item.nodeid, what)
                pytest.fail(message(item.nodeid, what), pytrace=False)

    def pytest_sessionfinish(self) -> None:
        """With ``--lanes-report FILE``: this process's files and what they started."""
        if self.report is None or not self.files:
            return
        line = json.dumps({f: sorted(kinds) for f, kinds in sorted(self.files.items())})
        with open(self.report, "a", encoding="utf-8") as out:
            out.write(line + "\n")

    def _note(self, item: pytest.Item, what: str) -> None:
        kind = "process" if what.startswith("a process") else "socket"
        self.files.setdefault(item.nodeid.split("::")[0], set()).add(kind)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item) -> Iterator[None]:
        """A violation in another thread (a server's) did not fail the test: fail it here."""
        outcome = yield
        report: pytest.TestReport = outcome.get_result()
        what = self.violations.get(item.nodeid)
        if what is None or report.failed or report.when != "call":
            return
        report.outcome = "failed"
        report.longrepr = message(item.nodeid, what)


def message(nodeid: str, what: str) -> str:
    """The one line a test that broke its lane fails with."""
    return (
        f"{nodeid} is in the fast lane and started {what}: test it in-process, "
        "or mark its file slow (pytestmark = pytest.mark.slow) when the process or the "
        "socket is the point"
    )


def describe_exec(args: Any) -> str | None:
    """What a process start is called in the failure, from its argv; None: a library's own."""
    words = [os.fsdecode(a) for a in (args or [])][:4]
    if words and os.path.basename(words[0]) in LIBRARY_PROGRAMS:
        return None
    return "a process (" + shlex.join(words)[:80] + ")"


def _address(args: tuple[Any, ...]) -> str:
    if not args:
        return "?"
    address = args[0]
    if isinstance(address, tuple) and len(address) >= 2:
        return f"{address[0]}:{address[1]}"
    return str(address)
