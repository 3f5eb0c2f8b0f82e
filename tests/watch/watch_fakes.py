"""In-process parts for fleet tests: a listing per school, models behind an httpx.MockTransport,
and a notifier that records (no socket, no process).

Model URLs say how the model behaves: ``http://llm.<school>.example.cn/<name>/ok`` answers
a short stream, ``/slow`` the same after 0.2 s, ``/down`` HTTP 500, ``/hang`` never (until
its call's timeout).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from lmreg_nb.models import RegisteredModel
from lmreg_nb.secret import Secret
from lmreg_nb.settings import Settings
from lmreg_nb.watch import watcher as watcher_module
from lmreg_nb.watch.fleet import School, parse_mail
from lmreg_nb.watch.messages import Message
from lmreg_nb.watch.notify import Notifier, NotifyTarget, parse_targets
from lmreg_nb.watch.state import StateStore
from lmreg_nb.watch.watcher import WatchConfig, Watcher

KEY = "sk-fake-model-key-7Qx2LmR4"
SSE = (
    'data: {"choices":[{"index":0,"delta":{"content":"你好，我是学校的模型。"}}]}\n\n'
    'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    "data: [DONE]\n\n"
).encode()
MAIL = "mailto://watch:Fake-Smtp-Pw-9xQ2@127.0.0.1:2525?from=watch@provider.example"
HOOK = "json://127.0.0.1:9/hook/Fake-Hook-Token-4kZ"


def model(
    model_id: str, name: str, school: str, how: str = "ok", key: str = KEY
) -> RegisteredModel:
    url = f"http://llm.{school}.example.cn/{name}/{how}/v1/chat/completions"
    return RegisteredModel(model_id, name, url, Secret(key))


@dataclass
class FakeRegistry:
    """query_models() from a list the test changes."""

    models: list[RegisteredModel]
    exchanges: int = 0

    def query_models(self) -> list[RegisteredModel]:
        return list(self.models)

    def close(self) -> None:
        pass


@dataclass
class Calls:
    """The models' server: what was asked, in order."""

    asked: list[str] = field(default_factory=list)

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        self.asked.append(f"{request.url.host}{path}")
        if "/hang/" in path:
            await asyncio.sleep(3600)
        if "/slow/" in path:  # a healthy model that takes its time: 0.2 s
            await asyncio.sleep(0.2)
        if "/down/" in path:
            return httpx.Response(500, json={"error": {"message": "the model server failed"}})
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=SSE)


class RecordingNotifier(Notifier):
    """Records each send (when it began, to whom, what); ``delay`` s each; ``fail`` ids."""

    def __init__(
        self,
        targets: Sequence[NotifyTarget],
        delay: float = 0.0,
        fail: dict[str, str] | None = None,
    ) -> None:
        super().__init__(targets)
        self.delay = delay
        self.fail = fail if fail is not None else {}
        self.sent: list[tuple[float, str, str, Message]] = []
        self._lock = threading.Lock()

    def send(self, target: NotifyTarget, message: Message) -> str | None:
        began = time.monotonic()
        time.sleep(self.delay)
        if target.id in self.fail:
            return self.fail[target.id]
        with self._lock:
            self.sent.append((began, target.id, target.shown, message))
        return None

    def to(self, shown: str) -> list[Message]:
        return [m for _t, _i, s, m in self.sent if s == shown]


def settings(timeout: float = 1.0, secret: str = "app-secret-Z9q8W7e6") -> Settings:
    env = {
        "LMREG_BASE_URL": "https://platform.example.cn",
        "LMREG_APP_ID": "app",
        "LMREG_APP_SECRET": secret,
        "LMREG_TIMEOUT": str(timeout),
        "LMREG_ENV_FILE": os.devnull,
    }
    return Settings.load(environ=env)


@dataclass
class Fleet:
    """Schools (run_id -> listing) and the watch over them."""

    watcher: Watcher
    registries: dict[str, FakeRegistry]
    calls: Calls
    notifier: RecordingNotifier

    def round(self) -> Any:
        async def once() -> Any:
            async with self.watcher:
                return await self.watcher.round()

        report = asyncio.run(once())
        assert isinstance(self.watcher.clock, Tick)
        self.watcher.clock.now += 60
        return report

    def close(self) -> None:
        self.watcher.close()
        self.watcher.store.close()


class Tick:
    def __init__(self) -> None:
        self.now = 1_790_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def make_fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    made: list[Fleet] = []
    calls = Calls()

    def client(concurrency: int, timeout: float) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(calls))

    monkeypatch.setattr(watcher_module, "make_client", client)

    def make(
        schools: dict[str, tuple[str, list[RegisteredModel], str]],
        *,
        fail_after: int = 1,
        concurrency: int = 32,
        timeout: float = 1.0,
        delay: float = 0.0,
        mail: bool = True,
        provider: bool = True,
        secrets: dict[str, str] | None = None,
        state: Path | None = None,
    ) -> Fleet:
        rows = [
            School(key, name, settings(timeout, (secrets or {}).get(key, f"secret-{key}-8Hq2x")),
                   contact_email=email, lang="en")
            for key, (name, _models, email) in schools.items()
        ]  # fmt: skip
        rows = [
            School(s.key, s.name, s.settings, "", s.contact_email, s.lang, 0,
                   tuple(Secret(v) for v in s.settings.secret_values()) if s.settings else ())
            for s in rows
        ]  # fmt: skip
        targets = parse_targets([HOOK]) if provider else []
        notifier = RecordingNotifier(targets, delay=delay)
        path = state or tmp_path / f"state-{len(made)}.sqlite3"
        store = StateStore(path)
        store.acquire()
        config = WatchConfig(
            state_path=path, fail_after=fail_after, concurrency=concurrency, allow_private=True
        )
        watcher = Watcher(
            settings(timeout), None, store, targets, notifier, config,
            clock=Tick(), schools=rows, mail=parse_mail(MAIL) if mail else None,
        )  # fmt: skip
        registries = {key: FakeRegistry(list(models)) for key, (_n, models, _e) in schools.items()}
        for unit in watcher.units:
            unit.registry = registries[unit.school.key]  # type: ignore[assignment]
            unit.owned = False
        fleet = Fleet(watcher, registries, calls, notifier)
        made.append(fleet)
        return fleet

    yield make
    for fleet in made:
        fleet.close()
