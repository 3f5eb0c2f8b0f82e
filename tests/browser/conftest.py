"""Fixtures for the browser tests: a real JupyterLab server and headless Chromium.

The JupyterLab server and the page that drives it are in ``lab_driver`` (test modules
import them from there). Chromium is Debian's package driven by Playwright (never a
browser download: no `playwright install`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from lab_driver import (
    CHROMIUM,
    CHROMIUM_ARGS,
    INSTALL_HINT,
    LANGUAGES,
    KernelReaper,
    Lab,
    LabServer,
    lab_environment,
    running_lab,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page

    from lmreg_nb.sandbox.process import SandboxInfo


class _Chromium:
    """One Debian Chromium under Playwright, shared by the browser modules a worker runs
    one after the other (launching it costs about a second of CPU each time)."""

    def __init__(self) -> None:
        self._playwright: Any = None  # the started sync_playwright() context manager
        self._browser: Browser | None = None

    def get(self) -> Browser:
        """The running browser; started on first use; fails (never skips) when missing."""
        if self._browser is not None:
            return self._browser
        if not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)):
            pytest.fail(f"the browser test needs Chromium at {CHROMIUM}: {INSTALL_HINT}")
        try:
            from playwright.sync_api import sync_playwright
        except ImportError:  # pragma: no cover - playwright is in the [test] extra
            pytest.fail("the browser test needs playwright (python): pip install -e '.[test]'")
        manager = sync_playwright()
        pw = manager.__enter__()
        try:
            self._browser = pw.chromium.launch(
                executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
            )
        except Exception as exc:
            manager.__exit__(None, None, None)
            pytest.fail(f"Chromium at {CHROMIUM} did not start ({exc}); {INSTALL_HINT}")
        self._playwright = manager
        return self._browser

    def stop(self) -> None:
        """Close the browser and stop Playwright (and the event loop it keeps running)."""
        browser, manager = self._browser, self._playwright
        self._browser = self._playwright = None
        try:
            if browser is not None:
                browser.close()
        finally:
            if manager is not None:
                manager.__exit__(None, None, None)


_CHROMIUM = _Chromium()


@pytest.fixture(scope="module")
def chromium() -> Browser:
    """Headless Debian Chromium under Playwright; fails (never skips) when it is missing.

    Kept from module to module while the next module's tests use it too, stopped as soon
    as the next test does not (see pytest_runtest_teardown): Playwright's sync API keeps an
    event loop running in this thread until it stops, and other tests call asyncio.run().
    """
    return _CHROMIUM.get()


def _keeps_chromium(item: pytest.Item, nextitem: pytest.Item | None) -> bool:
    """Whether the browser stays up after ``item``: the next test uses it, or is of the
    same module (whose ``chromium`` fixture holds it, as a module fixture did)."""
    if nextitem is None:
        return False
    return nextitem.path == item.path or "chromium" in getattr(nextitem, "fixturenames", ())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    try:
        yield  # the fixtures this test leaves are torn down first (pages, contexts)
    finally:
        if not _keeps_chromium(item, nextitem):
            _CHROMIUM.stop()


def pytest_sessionfinish() -> None:
    _CHROMIUM.stop()  # an interrupted run


@pytest.fixture(scope="session", params=LANGUAGES)
def lab_account(request: pytest.FixtureRequest, sandbox_process: SandboxInfo) -> dict[str, str]:
    """A fresh sandbox account per language, as the LMREG_* variables the notebooks read
    (LMREG_LANG included): every browser test runs once in each language."""
    lang = str(request.param)
    account = sandbox_process.add_app(f"browser-test-{lang}")
    env = sandbox_process.env()
    env["LMREG_APP_ID"] = account["app_id"]
    env["LMREG_APP_SECRET"] = account["app_secret"]
    env["LMREG_LANG"] = lang
    return env


@pytest.fixture(scope="session")
def lab_server(
    lab_account: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LabServer]:
    """JupyterLab over a copy of the shipped notebooks, kernels pointed at the sandbox account,
    in the account's language (the notebooks' and LMREG_LANG); one server per language."""
    from lmreg_nb.runner.shipped import NOTEBOOKS, copy_notebooks

    lang = lab_account["LMREG_LANG"]
    root = tmp_path_factory.mktemp("lab") / "notebooks"
    # As a school engineer gets them: `lmreg-nb notebooks DIR` in the language chosen.
    copied = copy_notebooks(root, lang=lang)
    assert len(copied.written) == len(NOTEBOOKS), copied
    home = tmp_path_factory.mktemp("lab-home")
    with running_lab(root, home, lab_environment(home, lab_account), lang) as server:
        yield server


class LabPages:
    """The page a test module drives one JupyterLab with, kept from test to test.

    Each test gets the page with no notebook open and leaves it so: its notebooks
    closed (changes discarded), its kernels shut down. A page in an unknown state
    (a test failed, or closing did) is dropped and the next test starts a new one.
    """

    def __init__(self, context: BrowserContext, server: LabServer) -> None:
        self.context = context
        self.server = server
        self.page: Page | None = None
        self.reaper = KernelReaper(server)

    @contextmanager
    def lab(self, shots: Path, item: pytest.Item) -> Iterator[Lab]:
        """A Lab on the kept page for the test ``item``; screenshots go to ``shots``."""
        if self.page is None:
            self.page = self.context.new_page()
        lab = Lab(self.page, self.server, shots, self.reaper)
        try:
            yield lab
        finally:
            try:
                if item.stash.get(CALL_FAILED, True):
                    # Evidence of the last state for the post-mortem; then a page of its
                    # own for the next test.
                    with suppress(Exception):
                        lab.page.screenshot(path=str(shots / "last-page.png"))
                    self._drop()
                elif not _drives_the_same_page(item, item.stash.get(NEXT_ITEM, None)):
                    self._drop()  # the module's (or the language's) last test: no next one
                else:
                    try:
                        lab.close_all()
                    except Exception:
                        self._drop()
                        raise
            finally:
                # The next test opens its own notebooks: the kernels of this one are done.
                lab.shutdown_kernels()

    def _drop(self) -> None:
        if self.page is not None:
            with suppress(Exception):
                self.page.close()
            self.page = None


#: Set on a test's item once its call phase is over: True when it failed.
CALL_FAILED = pytest.StashKey[bool]()
#: The test pytest runs after this one (None after the last).
NEXT_ITEM = pytest.StashKey["pytest.Item | None"]()


def _drives_the_same_page(item: pytest.Item, nextitem: pytest.Item | None) -> bool:
    """Whether ``nextitem`` drives the page ``item`` leaves: same module, same language."""
    if nextitem is None or nextitem.path != item.path or "lab" not in nextitem.fixturenames:
        return False
    lang = getattr(getattr(item, "callspec", None), "params", {}).get("lab_account")
    return bool(
        lang == getattr(getattr(nextitem, "callspec", None), "params", {}).get("lab_account")
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    item.stash[NEXT_ITEM] = nextitem


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[CALL_FAILED] = report.failed
    return report


@contextmanager
def lab_pages(chromium: Browser, server: LabServer) -> Iterator[LabPages]:
    """A browser context of its own on ``server``, and the page a module's tests share
    in it (each test shuts its kernels down)."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(30_000)
    pages = LabPages(context, server)
    try:
        yield pages
    finally:
        try:
            pages.reaper.close()
        finally:
            context.close()


@pytest.fixture(scope="module")
def kept_page(chromium: Browser, lab_server: LabServer) -> Iterator[LabPages]:
    """One page per module and language on the session's JupyterLab of that language, or
    on the module's own (a module that needs other notebooks or kernels overrides
    ``lab_server``)."""
    with lab_pages(chromium, lab_server) as pages:
        yield pages


@pytest.fixture
def lab(kept_page: LabPages, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Lab]:
    """The module's browser page on the JupyterLab server, no notebook open; screenshots
    go to tmp_path."""
    with kept_page.lab(tmp_path, request.node) as lab:
        yield lab
