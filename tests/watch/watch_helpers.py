"""In-process stand-ins for what the watch talks to (fixtures re-exported by conftest.py):

- ``platform``: the sandbox platform's app served in this process (an address of
  tests/fakes/hosts.py), over a SQLite file of the module; ``account``: a fresh
  account in it (its own models), with the settings that point at it;
- ``school_model``: the mock school model served in the test's own event loop
  (tests/fakes/hosts.py); quirk paths make it fail;
- ``webhook``: Apprise's ``json://`` posts, received in-process, its path a secret;
- ``smtp``: Apprise's mails, received in-process by a session that wants a login (the
  password is a secret).

No port, no thread, no process: the real ones are test_watch_e2e.py's and
test_watch_smtp.py's point.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from fakes import hosts
from fakes.app_platform import AppPlatform, served_platform
from fakes.notify import Mailbox, Webhook

from lmreg_nb.models import ModelDraft
from lmreg_nb.registry.client import RegistryClient
from lmreg_nb.sandbox.school_model import MockModelConfig, create_app
from lmreg_nb.secret import Secret
from lmreg_nb.settings import Settings

if TYPE_CHECKING:
    from lmreg_nb.watch.watcher import RoundReport, Watcher

#: The apiKey of the school model: a canary, it must never come out.
MODEL_KEY = "sk-watch-canary-Hq27Vx9LpR4Tn8Kd"
WEBHOOK_TOKEN = "HookCanaryT0ken9Xq4Lm"
SMTP_PASSWORD = "SmtpCanaryPassw0rd7Zk"
#: The ports the in-process webhook and mailbox answer on (nothing listens there).
WEBHOOK_PORT = 8799
SMTP_PORT = 8825


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
    with hosts.served(create_app(config)) as base:
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


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppPlatform]:
    """The sandbox platform served in this process (tests/fakes/app_platform.py), for the module."""
    with served_platform(tmp_path_factory.mktemp("watch") / "platform.sqlite3") as plat:
        yield plat


@pytest.fixture
def account(platform: AppPlatform, tmp_path: Path) -> Account:
    """A fresh account (created straight in the platform's database)."""
    app = platform.add_app("watch-" + tmp_path.name[-12:])
    env = {
        "LMREG_BASE_URL": platform.info.base_url,
        "LMREG_TOKEN_PATH": platform.info.token_path,
        "LMREG_APP_ID": app["app_id"],
        "LMREG_APP_SECRET": app["app_secret"],
        "LMREG_TOKEN_CACHE": str(tmp_path / "tokens.json"),
        "LMREG_TIMEOUT": "3",
    }
    return Account(Settings.load(environ=env), env, app["app_secret"], platform.info.db)


@pytest.fixture
def webhook(monkeypatch: pytest.MonkeyPatch) -> Webhook:
    return Webhook(WEBHOOK_PORT, WEBHOOK_TOKEN).install(monkeypatch)


@dataclass
class Smtp(Mailbox):
    """The mailbox, and the URL that mails a school's contact through it."""

    @property
    def url(self) -> str:
        return (
            f"mailto://watch:{SMTP_PASSWORD}@127.0.0.1:{self.port}"
            "?from=watch@school.example&to=li.hua@school.example"
        )


@pytest.fixture
def smtp(monkeypatch: pytest.MonkeyPatch) -> Smtp:
    box = Smtp(SMTP_PORT, SMTP_PASSWORD)
    box.install(monkeypatch)
    return box


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
