"""06_monitor headless: a test alert reaches a webhook, a round runs, the state shows, no secret."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import nbformat
import pytest

from lmreg_nb.models import ModelDraft
from lmreg_nb.registry.client import RegistryClient
from lmreg_nb.secret import Secret
from lmreg_nb.settings import Settings

pytestmark = pytest.mark.notebooks

HOOK_TOKEN = "NbHookCanary7Tq2Wx9Lm"


@pytest.fixture
def hook() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    posts: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            posts.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"json://127.0.0.1:{server.server_address[1]}/hook/{HOOK_TOKEN}", posts
    finally:
        server.shutdown()
        server.server_close()


def _text(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            parts.append(str(out.get("text", "")))
            parts += [str(v) for k, v in out.get("data", {}).items() if k.startswith("text/")]
    return "\n".join(parts)


def test_monitor_notebook_sends_a_test_alert_and_runs_a_round(
    execute: Callable[..., Path],
    nb_env: dict[str, str],
    hook: tuple[str, list[dict[str, Any]]],
    leaks: Callable[..., list[str]],
    canaries: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, posts = hook
    monkeypatch.setenv("LMREG_NOTIFY", url)
    monkeypatch.setenv("LMREG_ALLOW_PRIVATE", "1")  # the sandbox model is on loopback
    with RegistryClient(Settings.load(environ=nb_env)) as client:
        if client.find_model(name="nb-watched") is None:
            client.register_model(
                ModelDraft("nb-watched", nb_env["LMREG_MODEL_URL"],
                           Secret(nb_env["LMREG_MODEL_API_KEY"]))
            )  # fmt: skip
    state = tmp_path / "monitor" / "watch.sqlite3"
    out = execute(
        "06_monitor",
        {"school": "Notebook School", "test_alert": True, "state_path": str(state)},
    )
    assert [p["title"] for p in posts] == ["[Notebook School] test alert from lmreg-nb watch"]
    shown = _text(out)
    assert "round 1" in shown and "nb-watched" in shown and "up" in shown
    assert f"/hook/…{HOOK_TOKEN[-4:]}" in shown  # the target, masked
    # A rehearsal (the notebook's default) keeps its rounds apart from the watch's.
    rehearsed = state.with_name("watch-rehearsal.sqlite3")
    assert (rehearsed.stat().st_mode & 0o777) == 0o600 and not state.exists()
    assert "rehearsal" in shown and "log" in shown
    raw = out.read_text(encoding="utf-8")
    assert leaks(raw, [*canaries, HOOK_TOKEN]) == []
