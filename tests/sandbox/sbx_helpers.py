"""Helpers of the platform tests (a module, not conftest, so test files can import them)."""

from __future__ import annotations

import secrets
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import httpx
from fakes.app_platform import AppPlatform, app_platform
from starlette.testclient import TestClient

from lmreg_nb.sandbox.platform.app import PlatformConfig
from lmreg_nb.sandbox.process import SandboxInfo

Style = Literal["http", "envelope"]
STYLES: tuple[Style, ...] = ("http", "envelope")


@dataclass
class Platform:
    """The platform app in this process (tests/fakes/app_platform.py) plus helpers that know its
    error style."""

    local: AppPlatform
    style: str

    @property
    def info(self) -> SandboxInfo:
        """Its addresses, demo credentials and database, as a sandbox process announces them."""
        return self.local.info

    @property
    def client(self) -> TestClient:
        return self.local.client

    def add_app(self, name: str) -> dict[str, str]:
        """A new account, as `lmreg-nb sandbox add-app` makes it (in this process)."""
        return self.local.add_app(name)

    def url(self, op: str) -> str:
        """Address of an operation (``token`` or a registration operation's name)."""
        if op == "token":
            return self.info.base_url + self.info.token_path
        return f"{self.info.base_url}/openapi/v1/{op}"

    def post(self, op: str, body: Any = None, **kw: Any) -> httpx.Response:
        """POST a JSON body (or raw ``content=``) to an operation."""
        if body is not None:
            kw["json"] = body
        return self.client.post(self.url(op), **kw)

    def token(self, app_id: str | None = None, app_secret: str | None = None) -> dict[str, Any]:
        """A fresh token's data for the demo account (or the given one)."""
        r = self.post(
            "token",
            {"appId": app_id or self.info.app_id, "appSecret": app_secret or self.info.app_secret},
        )
        assert r.status_code == 200, r.text
        data: dict[str, Any] = r.json()["data"]
        return data

    def headers(self, app_id: str | None = None, app_secret: str | None = None) -> dict[str, str]:
        """Authorization and X-ENV for a fresh token."""
        t = self.token(app_id, app_secret)
        return {"Authorization": f"Bearer {t['token']}", "X-ENV": t["env"]}

    def account(self) -> dict[str, str]:
        """Headers of a brand-new account (so tests do not see each other's models)."""
        app = self.add_app("test-" + secrets.token_hex(3))
        return self.headers(app["app_id"], app["app_secret"])

    def expect_error(self, response: httpx.Response, status: int, code: int) -> dict[str, Any]:
        """Assert the error as this style answers it; return the envelope."""
        expected_status = 200 if self.style == "envelope" else status
        assert response.status_code == expected_status, response.text
        body: dict[str, Any] = response.json()
        assert body["code"] == code, body
        assert body["data"] == {}, body
        assert isinstance(body["message"], str) and body["message"]
        assert "\n" not in body["message"]
        assert response.headers.get("x-request-id"), "every answer carries X-Request-Id"
        return body


def local_platform(stack: ExitStack, db: Path, config: PlatformConfig) -> Platform:
    """The platform app over ``db`` with ``config``, open until ``stack`` closes."""
    return Platform(stack.enter_context(app_platform(db, config)), config.error_style)


def model(name: str, **extra: Any) -> dict[str, Any]:
    """A valid register body."""
    return {
        "modelName": name,
        "registryUrl": "https://llm.school.example/v1/chat/completions",
        "apiKey": "sk-school-" + secrets.token_hex(8),
        **extra,
    }
