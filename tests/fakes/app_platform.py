"""The sandbox platform in this process, for tests of what talks to it over HTTP.

:func:`app_platform` builds ``create_app(Store(db), config)`` and gives the
same :class:`SandboxInfo` a sandbox process announces, plus an httpx transport
that hands each request to the app (Starlette's TestClient underneath): no
process, no port, the same routes, errors and SQLite file. :func:`served_platform`
serves the app at an address of this process instead (tests/fakes/hosts.py), so every
client the code under test makes reaches it by its base URL, however it was imported.
Where the process itself is the point (start, restart, kill, the CLI), tests use
``running_sandbox`` instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from starlette.testclient import TestClient

from lmreg_nb.sandbox.platform.app import PlatformConfig, create_app
from lmreg_nb.sandbox.platform.store import Store
from lmreg_nb.sandbox.process import SandboxInfo

#: The address the info names: never dialled, the transport calls the app directly.
BASE_URL = "http://127.0.0.1:8765"


class AppTransport(httpx.BaseTransport):
    """A synchronous httpx transport into an ASGI app (through a TestClient)."""

    def __init__(self, client: TestClient) -> None:
        self.client = client

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        answer = self.client.send(request)
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)


@dataclass
class AppPlatform:
    """The platform of one test: what a sandbox process announces, and how to reach it."""

    info: SandboxInfo
    store: Store
    client: TestClient

    def transport(self) -> AppTransport:
        """A new transport into the app (a RegistryClient closes the one it is given)."""
        return AppTransport(self.client)

    def add_app(self, name: str) -> dict[str, str]:
        """A new account, as `lmreg-nb sandbox add-app` makes and prints it."""
        made = self.store.add_account(name)
        assert made.app_secret is not None
        return {"app_id": made.app_id, "app_secret": made.app_secret, "env": made.env}


def _info(store: Store, cfg: PlatformConfig, db: Path, base_url: str) -> SandboxInfo:
    demo = store.demo()
    return SandboxInfo(
        base_url=base_url,
        token_path=cfg.token_path,
        model_url="http://127.0.0.1:8766/v1/chat/completions",  # stored, never called
        app_id=demo.app_id,
        app_secret=demo.app_secret,
        model_api_key=demo.model_api_key,
        db=Path(db),
    )


@contextmanager
def app_platform(db: Path, config: PlatformConfig | None = None) -> Iterator[AppPlatform]:
    """The platform over ``db`` in this process, with ``config`` (the CLI's options)."""
    cfg = config or PlatformConfig()
    store = Store(db)
    try:
        info = _info(store, cfg, db, BASE_URL)
        # A server error is answered as a 500 (as uvicorn does), not raised into the test.
        app = create_app(store, cfg)
        with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as client:
            yield AppPlatform(info, store, client)
    finally:
        store.close()


@contextmanager
def served_platform(db: Path, config: PlatformConfig | None = None) -> Iterator[AppPlatform]:
    """The platform over ``db`` served at an address of this process (no port is bound):
    ``info.base_url`` reaches it from any client; ``transport()`` still works."""
    from fakes import hosts

    cfg = config or PlatformConfig()
    store = Store(db)
    try:
        app = create_app(store, cfg)
        with hosts.served(app) as base, TestClient(app, base_url=base) as client:
            yield AppPlatform(_info(store, cfg, db, base), store, client)
    finally:
        store.close()
