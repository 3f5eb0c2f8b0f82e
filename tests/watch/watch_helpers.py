"""Real loopback servers for the watch's tests (fixtures re-exported by conftest.py):

- ``account``: a fresh account in the session's sandbox platform (its own models),
  with the settings that point at it;
- ``school_model``: a mock school model (uvicorn thread); quirk paths make it fail;
- ``webhook``: a small receiver of Apprise ``json://`` posts, its path a secret;
- ``smtp``: an aiosmtpd server that wants a login (the password is a secret).
"""

from __future__ import annotations

import asyncio
import email
import email.policy
import json
import secrets
import socket
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from lmreg_nb.models import ModelDraft
from lmreg_nb.registry.client import RegistryClient
from lmreg_nb.sandbox.school_model import MockModelConfig, serving
from lmreg_nb.secret import Secret
from lmreg_nb.settings import Settings

if TYPE_CHECKING:
    from lmreg_nb.sandbox.process import SandboxInfo
    from lmreg_nb.watch.watcher import RoundReport, Watcher

#: The apiKey of the school model: a canary, it must never come out.
MODEL_KEY = "sk-watch-canary-Hq27Vx9LpR4Tn8Kd"
WEBHOOK_TOKEN = "HookCanaryT0ken9Xq4Lm"
SMTP_PASSWORD = "SmtpCanaryPassw0rd7Zk"


@dataclass
class SchoolModel:
    """The mock school model's base address."""

    base: str

    def url(self, quirks: str = "") -> str:
        prefix = f"/quirks/{quirks}" if quirks else ""
        return f"{self.base}{prefix}/v1/chat/completions"


@pytest.fixture(scope="module")
def school_model() -> Iterator[SchoolModel]:
    config = MockModelConfig(api_key=MODEL_KEY, ttft_ms=5, itl_ms=2, tokens=8)
    with serving(config) as base:
        yield SchoolModel(base)


@dataclass
class Account:
    """An account of the sandbox platform and a client for it."""

    settings: Settings
    env: dict[str, str]
    app_secret: str
    db: Path

    def client(self) -> RegistryClient:
        return RegistryClient(self.settings)

    def register(self, name: str, url: str, key: str = MODEL_KEY) -> str:
        with self.client() as client:
            return client.register_model(ModelDraft(name, url, Secret(key))).model_id

    def modify(self, model_id: str, name: str, url: str, key: str = MODEL_KEY) -> None:
        with self.client() as client:
            client.modify_model(ModelDraft(name, url, Secret(key), model_id=model_id))

    def remove(self, model_id: str) -> None:
        """What an operator does in the back office (the API has no delete)."""
        with sqlite3.connect(self.db, timeout=10) as db:
            db.execute("DELETE FROM models WHERE model_id = ?", (model_id,))


@pytest.fixture
def account(sandbox: SandboxInfo, tmp_path: Path) -> Account:
    """A fresh account (created straight in the sandbox's database: WAL shares it)."""
    from lmreg_nb.sandbox.platform.store import Store

    store = Store(sandbox.db)
    try:
        created = store.add_account("watch-" + secrets.token_hex(4))
    finally:
        store.close()
    assert created.app_secret is not None
    env = {
        "LMREG_BASE_URL": sandbox.base_url,
        "LMREG_TOKEN_PATH": sandbox.token_path,
        "LMREG_APP_ID": created.app_id,
        "LMREG_APP_SECRET": created.app_secret,
        "LMREG_TOKEN_CACHE": str(tmp_path / "tokens.json"),
        "LMREG_TIMEOUT": "3",
    }
    return Account(Settings.load(environ=env), env, created.app_secret, sandbox.db)


@dataclass
class Webhook:
    """Received JSON posts, and the URL Apprise posts them to."""

    port: int
    posts: list[dict[str, Any]] = field(default_factory=list)
    fail: bool = False

    @property
    def url(self) -> str:
        return f"json://127.0.0.1:{self.port}/hook/{WEBHOOK_TOKEN}"


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    hook = Webhook(0)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            if hook.fail or self.path != f"/hook/{WEBHOOK_TOKEN}":
                self.send_response(503)
                self.end_headers()
                return
            hook.posts.append(json.loads(body))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    hook.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hook
    finally:
        server.shutdown()
        server.server_close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Smtp:
    """Mails received by the SMTP server, parsed."""

    port: int
    mails: list[email.message.EmailMessage] = field(default_factory=list)

    @property
    def url(self) -> str:
        return (
            f"mailto://watch:{SMTP_PASSWORD}@127.0.0.1:{self.port}"
            "?from=watch@school.example&to=li.hua@school.example"
        )


@pytest.fixture
def smtp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Smtp]:
    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import AuthResult, LoginPassword
    from apprise.plugins.email.base import NotifyEmail

    # Apprise waits 5.5 s between two mails of one target (rate limits); not in tests.
    monkeypatch.setattr(NotifyEmail, "request_rate_per_sec", 0)

    box = Smtp(free_port())

    class Handler:
        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
            box.mails.append(
                email.message_from_bytes(envelope.content, policy=email.policy.default)  # type: ignore[arg-type]
            )
            return "250 OK"

    def authenticate(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> Any:
        ok = isinstance(data, LoginPassword) and data.password == SMTP_PASSWORD.encode()
        return AuthResult(success=ok)

    controller = Controller(
        Handler(),
        hostname="127.0.0.1",
        port=box.port,
        authenticator=authenticate,
        auth_require_tls=False,
    )
    controller.start()
    try:
        yield box
    finally:
        controller.stop()


#: A fixed start for the tests' clocks: "down for" is exact.
T0 = 1_790_000_000.0


class Clock:
    """A clock the test moves: one minute per round (:func:`run_round`)."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def run_round(watcher: Watcher, clock: Clock | None = None) -> RoundReport:
    """One round of ``watcher`` in an event loop of its own; then ``clock`` moves a minute."""

    async def once() -> RoundReport:
        async with watcher:
            return await watcher.round()

    report = asyncio.run(once())
    if clock is not None:
        clock.now += 60
    return report
