"""JupyterLab for the browser tests, and the page that drives it (tests/browser).

JupyterLab runs as a child process on loopback (a free port, token-protected)
over a temporary copy of the notebooks; its kernels inherit an environment that
points at a sandbox account. Every wait is on page state (locators, the kernel
indicator, cell prompts), never a fixed sleep. A module of its own, not the
conftest: ``from conftest import ...`` took whichever conftest.py was imported last
(with tests/notebooks/ in the same run, that one).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page


CHROMIUM = Path("/usr/bin/chromium")
INSTALL_HINT = (
    "install it with scripts/install-browser"
    " (as root: apt-get update && apt-get install -y chromium)"
)
# Without the background-networking flags Chromium keeps dialling Google
# services, which this closed network refuses (slow, noisy start).
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
]
SERVER_START_TIMEOUT = 90.0
#: Ports tried when the free one found is taken before jupyter binds it.
PORT_ATTEMPTS = 3
#: Milliseconds Playwright waits for page state (lab start, kernel start, cells).
STATE_TIMEOUT_MS = 90_000
REPO = Path(__file__).resolve().parents[2]
#: Where to also write the screenshots (e.g. docs/ when refreshing the README's).
SHOTS_VARIABLE = "BROWSER_TEST_SHOTS"

# JupyterLab user settings: no news/update toast over the notebook.
LAB_USER_SETTINGS: dict[str, dict[str, Any]] = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}

# True once every code cell with source ran (a number in its prompt), or a
# cell failed (run-all then cancels the rest); and the kernel is idle.
_CELLS_SETTLED_JS = """
(panel) => {
  const indicator = panel.querySelector('.jp-Notebook-ExecutionIndicator');
  if (!indicator || indicator.dataset.status !== 'idle') return false;
  const cells = [...panel.querySelectorAll('.jp-CodeCell')].filter(
    (cell) => (cell.querySelector('.jp-InputArea-editor')?.textContent || '').trim() !== '');
  const prompts = cells.map((cell) => cell.querySelector('.jp-InputPrompt')?.textContent || '');
  if (prompts.some((p) => p.includes('*'))) return false;
  const failed = panel.querySelector('[data-mime-type="application/vnd.jupyter.error"]');
  return failed !== null || prompts.every((p) => /\\[\\d+\\]/.test(p));
}
"""


# "asking" while JupyterLab shows a dialog, "closed" once no notebook is open.
_CLOSED_OR_ASKING_JS = """
() => document.querySelector('.jp-Dialog') ? 'asking'
  : (document.querySelector('#jp-main-dock-panel .jp-NotebookPanel') ? null : 'closed')
"""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


#: The languages the browser test runs in, once each (LMREG_LANG of the kernels).
LANGUAGES = ("en", "zh-CN")


@dataclass(frozen=True)
class LabServer:
    """A running JupyterLab: its address, token, notebook folder, log and kernels' language."""

    url: str
    token: str
    root: Path
    log: Path
    lang: str = "en"
    #: Where the kernels' connection files are when they talk over ipc (None: over TCP).
    runtime: Path | None = None

    def kernel_transports(self) -> set[str]:
        """The transports of the kernels running now, from their connection files."""
        if self.runtime is None:
            return {"tcp"}
        files = self.runtime.glob("kernel-*.json")
        return {json.loads(file.read_text())["transport"] for file in files}

    def tail(self, lines: int = 30) -> str:
        """The end of the server's log (kernel tracebacks land here), for failure messages."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


def lab_environment(home: Path, extra: Mapping[str, str]) -> dict[str, str]:
    """A clean environment for the server and its kernels: no developer LMREG_* or Jupyter dirs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LMREG_", "JUPYTER"))}
    env.update(
        HOME=str(home),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CONFIG_HOME=str(home / ".config"),
        IPYTHONDIR=str(home / ".ipython"),
        JUPYTER_CONFIG_DIR=str(home / ".jupyter"),
        JUPYTER_RUNTIME_DIR=str(home / ".jupyter" / "runtime"),
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


@contextmanager
def running_lab(
    root: Path, home: Path, env: Mapping[str, str], lang: str = "en"
) -> Iterator[LabServer]:
    """Start `jupyter lab` over ``root`` on a free loopback port; stop it afterwards."""
    settings_dir = home / "lab-user-settings"
    for rel, value in LAB_USER_SETTINGS.items():
        path = settings_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
    token = secrets.token_hex(24)
    log = home / "jupyterlab.log"
    # The token goes through the environment, not the command line (ps shows that).
    full_env = {**env, "JUPYTER_TOKEN": token}
    runtime = _ipc_runtime_dir()
    if runtime is not None:
        full_env["JUPYTER_RUNTIME_DIR"] = str(runtime)
    command = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.user_settings_dir={settings_dir}",
        f"--LabApp.workspaces_dir={home / 'lab-workspaces'}",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--ServerApp.open_browser=False",
        "--ServerApp.terminals_enabled=False",
    ]
    if os.geteuid() == 0:  # CI containers run as root; jupyter refuses that unless told
        command.append("--allow-root")
    if runtime is not None:
        command.append("--KernelManager.transport=ipc")
    # A port found free can be taken by another process before jupyter binds it (a
    # shared CI machine): jupyter then exits at once, and a new port is tried.
    for _attempt in range(PORT_ATTEMPTS):
        port = _free_port()
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [*command, f"--ServerApp.port={port}"],
                cwd=root, env=full_env, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        server = LabServer(
            url=f"http://127.0.0.1:{port}", token=token, root=root, log=log, lang=lang,
            runtime=runtime,
        )  # fmt: skip
        try:
            if _wait_until_ready(proc, server):
                break
        except BaseException:
            _stop(proc)
            raise
    else:
        pytest.fail(f"jupyter lab found no free port in {PORT_ATTEMPTS} tries:\n{server.tail()}")
    try:
        yield server
    finally:
        try:
            _stop(proc)
        finally:
            if runtime is not None:
                shutil.rmtree(runtime, ignore_errors=True)


def _ipc_runtime_dir() -> Path | None:
    """A short runtime folder for kernels over ipc (None: TCP, where ipc is unavailable).

    Over TCP jupyter_client picks free ports and the kernel binds them later: another
    process can take one meanwhile, and the kernel dies before it answers (the tests'
    papermill kernels met it in CI). Over ipc each kernel's sockets are files beside its
    connection file, ``kernel-<id>-ipc-<n>``: the folder is short, so the paths fit the
    107 bytes a Unix socket's path may have.
    """
    from lmreg_nb.runner.kernels import ipc_usable

    folder = Path(tempfile.mkdtemp(prefix="lab-"))
    if not ipc_usable(str(folder / f"kernel-{uuid.uuid4()}-ipc")):
        shutil.rmtree(folder, ignore_errors=True)
        return None
    return folder


def _wait_until_ready(proc: subprocess.Popen[bytes], server: LabServer) -> bool:
    """True once the server answers; False when it exited because its port was taken."""
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    headers = {"Authorization": f"token {server.token}"}
    with httpx.Client(timeout=2.0) as http:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                if "is not available" in server.tail():  # "... because port N is not available"
                    return False
                pytest.fail(f"jupyter lab exited with {proc.returncode}:\n{server.tail()}")
            try:
                if http.get(f"{server.url}/api/status", headers=headers).status_code == 200:
                    return True
            except httpx.TransportError:
                pass
            # Polling a server that is starting: a short pause between tries.
            proc_wait(proc, 0.2)
    pytest.fail(f"jupyter lab not ready after {SERVER_START_TIMEOUT:.0f} s:\n{server.tail()}")


def proc_wait(proc: subprocess.Popen[bytes], seconds: float) -> None:
    """Wait for ``proc`` to exit, at most ``seconds`` (returns early when it does)."""
    with suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=seconds)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        # SIGINT twice is jupyter's "shut down without asking"; it also stops kernels.
        proc.send_signal(signal.SIGINT)
        proc_wait(proc, 0.5)
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


class KernelReaper:
    """Shuts down the server's kernel sessions in the background, one thread each.

    DELETE /api/sessions/ID answers once the kernel has exited (a few hundred ms, seconds
    when it was busy); nothing waits for that but a notebook reopened at the same path
    (`settle`), and the end of the module (`close`), which also raises a failed shutdown.
    """

    def __init__(self, server: LabServer) -> None:
        self.server = server
        self.pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="kernel-reaper")
        self.pending: list[tuple[str, Future[None]]] = []
        self.asked: set[str] = set()  # sessions whose shutdown was started

    def _client(self) -> httpx.Client:
        headers = {"Authorization": f"token {self.server.token}"}
        # trust_env=False: no proxy for a loopback server, and no walk through os.environ
        # from these threads while the main thread's fixtures change it (a key deleted
        # mid-walk was a KeyError in a module's teardown).
        return httpx.Client(
            base_url=self.server.url, headers=headers, timeout=30.0, trust_env=False
        )

    def _delete(self, session_id: str) -> None:
        with self._client() as http:
            http.delete(f"/api/sessions/{session_id}")

    def reap(self) -> None:
        """Start shutting down every running session's kernel."""
        with self._client() as http:
            sessions = http.get("/api/sessions").json()
        for session in sessions:
            if session["id"] in self.asked:  # still stopping since an earlier test
                continue
            self.asked.add(session["id"])
            path = str(session.get("path", ""))
            self.pending.append((path, self.pool.submit(self._delete, session["id"])))

    def settle(self, notebook: str | None = None) -> None:
        """Wait until the kernels of ``notebook`` (None: every one) are shut down."""
        still = []
        for path, future in self.pending:
            if notebook is None or path.endswith(notebook) or future.done():
                future.result(timeout=STATE_TIMEOUT_MS / 1000)
            else:
                still.append((path, future))
        self.pending = still

    def close(self) -> None:
        """Wait for every shutdown started; stop the threads."""
        try:
            self.settle()
        finally:
            self.pool.shutdown(wait=True)


class Lab:
    """Drive one JupyterLab page like a person would: open, run, wait, look."""

    def __init__(self, page: Page, server: LabServer, shots: Path, reaper: KernelReaper) -> None:
        self.page = page
        self.server = server
        self.shots = shots
        self.reaper = reaper

    def start(self, notebook: str) -> Locator:
        """JupyterLab with ``notebook`` open; return its panel.

        A new page loads it by the notebook's address (fresh workspace). A page an
        earlier test of the module left (every tab closed, see `close_all`) goes on
        as a person goes from one notebook to the next: the notebook is opened from
        the file browser, which spares the browser JupyterLab's start (about 3 s of
        CPU each time).
        """
        from playwright.sync_api import expect

        if self.page.url.startswith(f"{self.server.url}/lab"):
            return self.open(notebook)
        self.reaper.settle(notebook)
        self.page.goto(f"{self.server.url}/lab/tree/{notebook}?reset&token={self.server.token}")
        panel = self.panel(notebook)
        expect(panel).to_be_visible(timeout=STATE_TIMEOUT_MS)
        return panel

    def close_all(self) -> None:
        """File > Close All Tabs, discarding each notebook's changes ("Save your work"
        asks once per notebook that ran), until no notebook is left open."""
        self.menu("File", "Close All Tabs")
        for _ in range(20):  # one dialog per notebook left open, at most
            state = self.page.wait_for_function(
                _CLOSED_OR_ASKING_JS, timeout=STATE_TIMEOUT_MS
            ).json_value()
            if state == "closed":
                return
            self.page.locator(".jp-Dialog button", has_text="Discard").click()
        pytest.fail(f"notebooks still open after Close All Tabs:\n{self.server.tail()}")

    def open(self, notebook: str) -> Locator:
        """Open ``notebook`` from the file browser (double-click); return its panel."""
        from playwright.sync_api import expect

        # JupyterLab would join the session of an earlier test still shutting down.
        self.reaper.settle(notebook)
        browser = self.page.locator(".jp-DirListing-content")
        if not browser.is_visible():
            self.file_browser_tab().click()
        item = browser.locator(".jp-DirListing-item", has_text=notebook)
        item.dblclick()
        panel = self.panel(notebook)
        expect(panel).to_be_visible(timeout=STATE_TIMEOUT_MS)
        return panel

    def file_browser_tab(self) -> Locator:
        """The left side bar's File Browser tab (a click shows or hides the panel)."""
        return self.page.locator(".jp-SideBar .lm-TabBar-tab[data-id='filebrowser']")

    def hide_file_browser(self) -> None:
        """Fold the left side bar away, so the notebook gets the page's width."""
        from playwright.sync_api import expect

        listing = self.page.locator(".jp-DirListing-content")
        if listing.is_visible():
            self.file_browser_tab().click()
        expect(listing).to_be_hidden()

    def tab(self, notebook: str) -> Locator:
        """The main-area tab of ``notebook``."""
        return self.page.locator(
            "#jp-main-dock-panel .lm-TabBar-tab", has=self.page.get_by_text(notebook, exact=True)
        )

    def panel(self, notebook: str) -> Locator:
        """The notebook panel shown by the tab of ``notebook``."""
        from playwright.sync_api import expect

        tab = self.tab(notebook)
        expect(tab).to_have_count(1, timeout=STATE_TIMEOUT_MS)
        widget_id = tab.get_attribute("data-id")
        assert widget_id, f"tab of {notebook} has no data-id"
        return self.page.locator(f"[id='{widget_id}']")

    def activate(self, notebook: str) -> Locator:
        """Bring ``notebook``'s tab to the front; return its panel."""
        from playwright.sync_api import expect

        self.tab(notebook).click()
        panel = self.panel(notebook)
        expect(panel).to_be_visible()
        return panel

    def menu(self, *path: str) -> None:
        """Click through the menu bar, e.g. menu("Run", "Run All Cells")."""
        top, *items = path
        self.page.locator(".lm-MenuBar-item", has_text=top).first.click()
        for item in items:
            self.page.locator(".lm-Menu-item:visible", has_text=item).first.click()

    def run_all(self, notebook: str) -> Locator:
        """Clear outputs, run every cell, wait until they ran; fail on a cell error."""
        panel = self.activate(notebook)
        self.wait_kernel_idle(notebook, panel)
        # Cleared prompts read "[ ]", so a saved "[3]" cannot pass for a fresh run.
        self.menu("Edit", "Clear Outputs of All Cells")
        self.menu("Run", "Run All Cells")
        self.page.wait_for_function(
            _CELLS_SETTLED_JS, arg=panel.element_handle(), timeout=STATE_TIMEOUT_MS
        )
        errors = panel.locator('[data-mime-type="application/vnd.jupyter.error"]')
        if errors.count():
            pytest.fail(f"a cell of {notebook} failed:\n{errors.first.inner_text()}")
        return panel

    def run_cell_of(self, panel: Locator, widget_css: str) -> Locator:
        """The code cell of ``panel`` whose output holds the widget of CSS class ``widget_css``."""
        return panel.locator(".jp-CodeCell", has=self.page.locator(f".{widget_css}"))

    def shutdown_kernels(self) -> None:
        """Stop every kernel of the server (each notebook opened started one): frees the CPU.

        In the background: the next test goes on meanwhile (each kernel takes a few
        hundred ms to exit); opening a notebook whose kernel is still stopping waits.
        """
        self.reaper.reap()

    def wait_kernel_idle(self, notebook: str, panel: Locator) -> None:
        """Wait until the notebook's kernel runs and the page is connected to it, idle.

        A run before the page holds its kernel executes nothing (JupyterLab
        just clears the prompts), so the server's session comes first, then the
        page's own indicators.
        """
        from playwright.sync_api import expect

        deadline = time.monotonic() + STATE_TIMEOUT_MS / 1000
        headers = {"Authorization": f"token {self.server.token}"}
        with httpx.Client(base_url=self.server.url, headers=headers, timeout=5.0) as http:
            while True:
                sessions = http.get("/api/sessions").json()
                states = [
                    s["kernel"]["execution_state"]
                    for s in sessions
                    if s.get("path", "").endswith(notebook) and s.get("kernel")
                ]
                if "idle" in states:
                    break
                if time.monotonic() > deadline:
                    pytest.fail(f"no idle kernel for {notebook}: {sessions}\n{self.server.tail()}")
                # Poll interval while the page starts the kernel (a few hundred ms).
                self.page.wait_for_timeout(100)
        statusbar = self.page.locator("#jp-main-statusbar")
        expect(statusbar).to_contain_text(re.compile(r"\|\s*Idle"), timeout=STATE_TIMEOUT_MS)
        indicator = panel.locator(".jp-Notebook-ExecutionIndicator")
        expect(indicator).to_have_attribute("data-status", "idle", timeout=STATE_TIMEOUT_MS)

    def shot(self, target: Locator, name: str, *, publish: bool = False) -> Path:
        """Screenshot ``target`` into the test's folder; ``publish`` also into $BROWSER_TEST_SHOTS.

        ``BROWSER_TEST_SHOTS=docs pytest -m browser`` refreshes the README's pictures. In a
        language other than English the name gets it as a suffix: ``register_form.zh-CN.png``.
        """
        if self.server.lang != "en":
            name = name.replace(".png", f".{self.server.lang}.png")
        path = self.shots / name
        self.page.mouse.move(0, 0)  # no hover highlight in the picture
        viewport = self.page.viewport_size
        box = target.bounding_box()
        # A target taller than the notebook's panel would come out cut and overlaid by the
        # menus: the page grows to hold it for the picture.
        tall = viewport is not None and box is not None and box["height"] > viewport["height"] - 250
        if tall and viewport is not None and box is not None:
            self.page.set_viewport_size(
                {"width": viewport["width"], "height": int(box["height"]) + 300}
            )
        try:
            target.scroll_into_view_if_needed()
            target.screenshot(path=str(path), animations="disabled")
        finally:
            if tall and viewport is not None:
                self.page.set_viewport_size(viewport)
        extra = os.environ.get(SHOTS_VARIABLE)
        if publish and extra:
            # Relative to the repository: tests run from a temporary working folder.
            folder = REPO / extra
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, folder / name)
        return path
