"""The sandbox platform as a FastAPI app: settings, request ids, OpenAPI, assembled.

The pieces live beside this module: ``errors`` (one class per code and the
handlers that turn them into the envelope; ``error_style="envelope"`` answers
with HTTP 200 and the non-zero code, as some real platforms do), ``deps``
(body size, token, X-ENV, rate limit, injected faults, the body itself) and
``routes`` (the operations -> store calls).
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, Literal

from fastapi import FastAPI
from starlette.types import ASGIApp

from .deps import MAX_BODY_BYTES, RateLimiter
from .errors import PlatformError, install_error_handlers
from .routes import ROUTERS, add_token_route
from .store import Store

__all__ = [
    "DEFAULT_TOKEN_PATH",
    "DEFAULT_TOKEN_TTL_S",
    "MAX_BODY_BYTES",
    "PlatformApp",
    "PlatformConfig",
    "PlatformError",
    "RequestIdMiddleware",
    "create_app",
]

DEFAULT_TOKEN_PATH = "/openapi/v1/token"
DEFAULT_TOKEN_TTL_S = 3 * 24 * 3600.0

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Any]]
Send = Callable[[Any], Awaitable[None]]

SECURITY_SCHEMES: dict[str, Any] = {
    "bearerAuth": {
        "type": "http",
        "scheme": "bearer",
        "description": "Authorization: Bearer <token>",
    },
    "envHeader": {
        "type": "apiKey",
        "in": "header",
        "name": "X-ENV",
        "description": "The env returned with the token",
    },
}


@dataclass(frozen=True)
class PlatformConfig:
    """Knobs of the sandbox platform (the CLI's options)."""

    token_path: str = DEFAULT_TOKEN_PATH
    token_ttl_s: float = DEFAULT_TOKEN_TTL_S
    error_style: Literal["http", "envelope"] = "http"
    fail_rate: float = 0.0
    latency_ms: float = 0.0
    rate_limit: float = 0.0  # requests per second per account; 0 = off
    # Seeds the --fail-rate draw, so a test sees the same faults each run; None = fresh.
    fault_seed: int | None = None


class RequestIdMiddleware:
    """Adds ``X-Request-Id`` to every answer and puts the id in ``request.state``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = "req_" + secrets.token_hex(8)
        scope.setdefault("state", {})["request_id"] = request_id

        async def send_with_id(message: Any) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [
                    *message.get("headers", []),
                    (b"x-request-id", request_id.encode()),
                ]
            await send(message)

        await self.app(scope, receive, send_with_id)


class PlatformApp(FastAPI):
    """FastAPI with the request-id layer outermost and the security schemes documented."""

    def build_middleware_stack(self) -> ASGIApp:
        # Outside even Starlette's ServerErrorMiddleware (which add_middleware() cannot
        # reach): so an unexpected 500 carries a request id as well.
        return RequestIdMiddleware(super().build_middleware_stack())

    def openapi(self) -> dict[str, Any]:
        """The schema FastAPI builds from the routes, plus the two security schemes."""
        if self.openapi_schema is None:
            doc = super().openapi()
            doc.setdefault("components", {})["securitySchemes"] = SECURITY_SCHEMES
        return self.openapi_schema or {}


def create_app(store: Store, config: PlatformConfig | None = None) -> FastAPI:
    """The platform as a FastAPI app over ``store``."""
    cfg = config or PlatformConfig()
    app = PlatformApp(
        title="lmreg_nb sandbox platform",
        version="1",
        description="A local stand-in for the Local Model Registration Service"
        " (spec sections 4 and 5, with the contract's token operation and error table).",
        docs_url="/docs",
        redoc_url=None,
    )
    app.state.store = store
    app.state.config = cfg
    app.state.limiter = RateLimiter(cfg.rate_limit) if cfg.rate_limit > 0 else None
    app.state.rng = random.Random(cfg.fault_seed)
    install_error_handlers(app)
    add_token_route(app, cfg.token_path, cfg.error_style)
    app.include_router(ROUTERS[cfg.error_style])
    return app
