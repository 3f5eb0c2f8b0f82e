"""An in-memory registration platform behind httpx.MockTransport, for the client's unit tests.

It follows the platform's contract (envelope, codes, both error styles: the sandbox's
lmreg_nb/sandbox/platform/errors.py and docs/reference.md) and lets a
test queue faults per path: a response to return, an exception to raise, or
either of those *after* the request was applied (a lost answer).

:func:`route_clients` sends every RegistryClient a command or a facade makes to a
transport of the test's (this fake's, or the sandbox app's), so `lmreg-nb token`,
`models`, `register` ... run in-process with CliRunner, their settings read as a
user's are (:func:`platform_env` puts this fake's into the environment).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from lmreg_nb.models import now_ms
from lmreg_nb.registry.client import MODIFY_PATH, QUERY_PATH, REGISTER_PATH
from lmreg_nb.settings import Settings

APP_ID = "app-canary-id"
APP_SECRET = "APPSECRET-canary-7f3e9d2b1c"
API_KEY = "APIKEY-canary-5a6b7c8d9e"
BASE_URL = "https://platform.test"
TOKEN_PATH = "/openapi/v1/token"

Fault = Callable[[httpx.Request], httpx.Response | None]


@dataclass
class FakePlatform:
    """State and behaviour of the fake; ``transport()`` gives the MockTransport."""

    error_style: str = "http"  # or "envelope": HTTP 200 with a non-zero code
    token_ttl_ms: int = 3 * 24 * 3600 * 1000
    token_field: str = "token"
    env: str = "env-test"
    #: The token every exchange hands out (None: a new one each time).
    token_value: str | None = None
    exchange_delay_s: float = 0.0
    models: list[dict[str, Any]] = field(default_factory=list)
    tokens: dict[str, int] = field(default_factory=dict)  # token -> expiry ms
    refused_tokens: set[str] = field(default_factory=set)
    refuse_all_tokens: bool = False
    requests: list[httpx.Request] = field(default_factory=list)
    exchanges: int = 0
    # path -> queue of faults: before(request) may return a response (not applied)
    before: dict[str, list[Fault]] = field(default_factory=dict)
    # path -> queue of exceptions/responses to deliver *after* applying the request
    after: dict[str, list[Any]] = field(default_factory=dict)
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def settings(self, **overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "base_url": BASE_URL,
            "app_id": APP_ID,
            "app_secret": APP_SECRET,
            "timeout": 2,
        }
        values.update(overrides)
        return Settings.load(environ={}, **values)

    def count(self, path: str) -> int:
        return sum(1 for r in self.requests if r.url.path == path)

    # -- faults --------------------------------------------------------------

    def fail_next(self, path: str, *faults: Fault) -> None:
        self.before.setdefault(path, []).extend(faults)

    def lose_answer(self, path: str, *outcomes: Any) -> None:
        """Apply the next request(s), then raise the exception / return the response given."""
        self.after.setdefault(path, []).extend(outcomes)

    # -- the server ----------------------------------------------------------

    def envelope(self, status: int, code: int, message: str, data: Any = None) -> httpx.Response:
        body = {"code": code, "message": message, "data": {} if data is None else data}
        http_status = status if self.error_style == "http" or code == 0 else 200
        rid = f"req-{next(self._ids)}"
        return httpx.Response(http_status, json=body, headers={"X-Request-Id": rid})

    def handle(self, request: httpx.Request) -> httpx.Response:
        with self._lock:
            self.requests.append(request)
            queue = self.before.get(request.url.path)
            fault = queue.pop(0) if queue else None
        if fault is not None:
            response = fault(request)
            if response is not None:
                return response
        response = self._apply(request)
        with self._lock:
            queue = self.after.get(request.url.path)
            outcome = queue.pop(0) if queue else None
        if isinstance(outcome, BaseException):
            raise outcome
        if isinstance(outcome, httpx.Response):
            return outcome
        return response

    def _apply(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        try:
            body = json.loads(request.content or b"{}")
        except ValueError:
            return self.envelope(400, 40000, "body is not JSON")
        if path == TOKEN_PATH:
            return self._token(body)
        auth = request.headers.get("authorization", "")
        token = auth.removeprefix("Bearer ")
        if not auth.startswith("Bearer ") or token not in self.tokens:
            return self.envelope(401, 40100, "unknown token")
        if self.refuse_all_tokens or token in self.refused_tokens:
            return self.envelope(401, 40101, "token expired")
        if self.tokens[token] <= now_ms():
            return self.envelope(401, 40101, "token expired")
        if request.headers.get("x-env") != self.env:
            return self.envelope(403, 40300, "X-ENV does not match the token")
        with self._lock:
            if path == QUERY_PATH:
                return self.envelope(200, 0, "OK", {"models": [dict(m) for m in self.models]})
            if path == REGISTER_PATH:
                return self._register(body)
            if path == MODIFY_PATH:
                return self._modify(body)
        return httpx.Response(404, text="not found")

    def _token(self, body: dict[str, Any]) -> httpx.Response:
        if self.exchange_delay_s:
            time.sleep(self.exchange_delay_s)
        if body.get("appId") != APP_ID or body.get("appSecret") != APP_SECRET:
            return self.envelope(401, 40102, "wrong appId or appSecret")
        with self._lock:
            self.exchanges += 1
            token = self.token_value or f"TOKEN-canary-{self.exchanges}-0a1b2c3d4e"
            self.tokens[token] = now_ms() + self.token_ttl_ms
        data = {self.token_field: token, "env": self.env, "expireTime": self.tokens[token]}
        return self.envelope(200, 0, "OK", data)

    def _register(self, body: dict[str, Any]) -> httpx.Response:
        name = str(body.get("modelName", "")).strip()
        if any(m["modelName"] == name for m in self.models):
            return self.envelope(409, 40900, f"modelName {name} already used")
        at = now_ms()
        model = {
            "modelId": f"m{len(self.models) + 1}",
            "modelName": name,
            "registryUrl": body["registryUrl"],
            "apiKey": body["apiKey"],
            "createTime": at,
            "updateTime": at,
        }
        self.models.append(model)
        return self.envelope(200, 0, "OK", dict(model))

    def _modify(self, body: dict[str, Any]) -> httpx.Response:
        model = next((m for m in self.models if m["modelId"] == body.get("modelId")), None)
        if model is None:
            return self.envelope(404, 40400, "modelId unknown")
        name = str(body["modelName"]).strip()
        if any(m["modelName"] == name and m is not model for m in self.models):
            return self.envelope(409, 40900, f"modelName {name} already used")
        model.update(
            modelName=name,
            registryUrl=body["registryUrl"],
            apiKey=body["apiKey"],
            updateTime=now_ms(),
        )
        return self.envelope(200, 0, "OK", dict(model))


def respond(status: int, **kw: Any) -> Fault:
    """A fault that answers with this response (nothing applied)."""
    return lambda request: httpx.Response(status, **kw)


def fail(exc_type: type[httpx.TransportError], message: str = "boom") -> Fault:
    """A fault that raises an httpx transport error (nothing applied)."""

    def raise_(request: httpx.Request) -> httpx.Response:
        raise exc_type(message, request=request)

    return raise_


def route_clients(monkeypatch: pytest.MonkeyPatch, make: Callable[[], httpx.BaseTransport]) -> None:
    """Every RegistryClient made from now on (the CLI's, a facade's) sends to ``make()``.

    Its settings stay its own (the environment, .env, the token cache): only the
    network is replaced. A client given a transport of its own keeps it.
    """
    from lmreg_nb.registry import client as client_module

    class Routed(client_module.RegistryClient):
        def __init__(
            self,
            settings: Settings | None = None,
            *,
            transport: httpx.BaseTransport | None = None,
            max_retries: int = 3,
        ) -> None:
            super().__init__(settings, transport=transport or make(), max_retries=max_retries)

    monkeypatch.setattr(client_module, "RegistryClient", Routed)


def platform_env(monkeypatch: pytest.MonkeyPatch, cache: Path, **extra: str) -> None:
    """The fake platform's address and credentials in LMREG_*, as a user sets them."""
    values = {
        "LMREG_BASE_URL": BASE_URL,
        "LMREG_APP_ID": APP_ID,
        "LMREG_APP_SECRET": APP_SECRET,
        "LMREG_TOKEN_CACHE": str(cache),
        "LMREG_TIMEOUT": "5",
        "LMREG_LANG": "en",
        **extra,
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
