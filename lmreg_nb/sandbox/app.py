"""The sandbox platform: routes -> store calls, wrapped in the spec's envelope.

Each route checks, in this order: body size by Content-Length (41300), the
token (40100/40101), X-ENV (40300), the rate limit (42900), the injected
fault (50300), then reads the body (41300 on the bytes actually read, 40000)
and calls the store. Errors are one exception class each, turned into the
envelope by one handler; ``error_style="envelope"`` answers them with HTTP
200 and the non-zero code, as some real platforms do.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import random
import secrets
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import ValidationError
from ..models import ms_to_datetime, now_ms
from ..validate import model_body
from . import schema
from .store import DuplicateNameError, ModelNotFoundError, Store

__all__ = [
    "DEFAULT_TOKEN_PATH",
    "DEFAULT_TOKEN_TTL_S",
    "MAX_BODY_BYTES",
    "PlatformConfig",
    "PlatformError",
    "create_app",
]

log = logging.getLogger("lmreg_nb")

DEFAULT_TOKEN_PATH = "/openapi/v1/token"
DEFAULT_TOKEN_TTL_S = 3 * 24 * 3600.0
MAX_BODY_BYTES = 1024 * 1024
REQUEST_ID_HEADER = "X-Request-Id"


@dataclass(frozen=True)
class PlatformConfig:
    """Knobs of the sandbox platform (the CLI's options)."""

    token_path: str = DEFAULT_TOKEN_PATH
    token_ttl_s: float = DEFAULT_TOKEN_TTL_S
    error_style: Literal["http", "envelope"] = "http"
    fail_rate: float = 0.0
    latency_ms: float = 0.0
    rate_limit: float = 0.0  # requests per second per account; 0 = off


# -- errors: one class per code -------------------------------------------


class PlatformError(Exception):
    """An error answer: HTTP status, envelope code and a one-line message."""

    status = 500
    code = 50000

    def __init__(self, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.headers = headers or {}


class BadRequest(PlatformError):
    """40000."""

    status, code = 400, 40000


class Unauthorized(PlatformError):
    """40100."""

    status, code = 401, 40100


class TokenExpired(PlatformError):
    """40101."""

    status, code = 401, 40101


class BadCredentials(PlatformError):
    """40102."""

    status, code = 401, 40102


class Forbidden(PlatformError):
    """40300."""

    status, code = 403, 40300


class NotFound(PlatformError):
    """40400."""

    status, code = 404, 40400


class Conflict(PlatformError):
    """40900."""

    status, code = 409, 40900


class TooLarge(PlatformError):
    """41300."""

    status, code = 413, 41300


class RateLimited(PlatformError):
    """42900."""

    status, code = 429, 42900


class Unavailable(PlatformError):
    """50300."""

    status, code = 503, 50300


# -- helpers ----------------------------------------------------------------


def _envelope(data: Any, code: int = 0, message: str = "OK") -> dict[str, Any]:
    return {"code": code, "message": message, "data": data}


class _RateLimiter:
    """A token bucket per key (account): ``rate`` requests per second, burst ``rate``."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def retry_after(self, key: str) -> float:
        """0 when the request may go ahead, else seconds until it may."""
        now = time.monotonic()
        capacity = max(1.0, self.rate)
        with self._lock:
            if len(self._buckets) > 10_000:  # many appIds tried: forget the idle ones
                horizon = now - capacity / self.rate
                self._buckets = {k: v for k, v in self._buckets.items() if v[1] > horizon}
            level, last = self._buckets.get(key, (capacity, now))
            level = min(capacity, level + (now - last) * self.rate)
            if level >= 1.0:
                self._buckets[key] = (level - 1.0, now)
                return 0.0
            self._buckets[key] = (level, now)
            return (1.0 - level) / self.rate


def _check_text(value: Any, where: str) -> None:
    """Refuse lone surrogates (valid JSON escapes, but not storable text)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise BadRequest(
                f"{where}: contains an unpaired surrogate (\\ud800-\\udfff);"
                " send valid Unicode text"
            ) from None
    elif isinstance(value, list):
        for item in value:
            _check_text(item, where)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_text(key, where)
            _check_text(item, key if where == "body" else where)


def _no_constant(name: str) -> Any:
    raise ValueError(name)


async def read_json(request: Request, *, optional: bool = False) -> dict[str, Any]:
    """The body as a JSON object: 41300 over 1 MiB (header or bytes read), else 40000."""
    size = 0
    chunks: list[bytes] = []
    async for chunk in request.stream():
        size += len(chunk)
        # Content-Length can lie or be absent (chunked): count what arrives.
        if size > MAX_BODY_BYTES:
            raise TooLarge(_too_large())
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw.strip():
        if optional:
            return {}
        raise BadRequest('body: is empty; send a JSON object, e.g. {"modelName": ...}')
    try:
        data = json.loads(raw, parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise BadRequest(
            "body: is not valid JSON; send a JSON object with Content-Type: application/json"
        ) from None
    if not isinstance(data, dict):
        raise BadRequest(f"body: must be a JSON object, got a JSON {_json_type(data)}")
    _check_text(data, "body")
    return data


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array"


def _too_large() -> str:
    return f"body: is over 1 MiB ({MAX_BODY_BYTES} bytes); shorten reqExample/resExample"


# -- the application ------------------------------------------------------------


def create_app(store: Store, config: PlatformConfig | None = None) -> FastAPI:
    """The platform as a FastAPI app over ``store``."""
    cfg = config or PlatformConfig()
    limiter = _RateLimiter(cfg.rate_limit) if cfg.rate_limit > 0 else None
    rng = random.Random()
    envelope_style = cfg.error_style == "envelope"

    app = FastAPI(
        title="lmreg_nb sandbox platform",
        version="1",
        description="A local stand-in for the Local Model Registration Service"
        " (spec sections 4 and 5, with the contract's token operation and error table).",
        docs_url="/docs",
        redoc_url=None,
    )
    app.state.store = store
    app.state.config = cfg

    # -- cross-cutting: X-Request-Id on every answer. A pure ASGI wrapper (cheap) put
    # around the whole middleware stack, outside even Starlette's ServerErrorMiddleware,
    # which add_middleware() cannot do: so a 500 carries an id as well.
    inner_app = app.build_middleware_stack

    def _build() -> Any:
        wrapped = inner_app()

        async def with_request_id(
            scope: MutableMapping[str, Any],
            receive: Callable[[], Awaitable[Any]],
            send: Callable[[Any], Awaitable[None]],
        ) -> None:
            if scope["type"] != "http":
                await wrapped(scope, receive, send)
                return
            request_id = "req_" + secrets.token_hex(8)
            scope.setdefault("state", {})["request_id"] = request_id

            async def send_with_id(message: Any) -> None:
                if message["type"] == "http.response.start":
                    message.setdefault("headers", [])
                    message["headers"] = [
                        *message["headers"],
                        (b"x-request-id", request_id.encode()),
                    ]
                await send(message)

            await wrapped(scope, receive, send_with_id)

        return with_request_id

    app.build_middleware_stack = _build  # type: ignore[method-assign]

    # -- error handlers ---------------------------------------------------

    @app.exception_handler(PlatformError)
    async def _platform_error(request: Request, exc: PlatformError) -> JSONResponse:
        rid = getattr(request.state, "request_id", "")
        log.info(
            "sandbox %s %s -> %s %s [%s]",
            request.method,
            request.url.path,
            exc.code,
            exc.message,
            rid,
        )
        return JSONResponse(
            _envelope({}, exc.code, exc.message),
            status_code=200 if envelope_style else exc.status,
            headers=exc.headers,
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # Unknown path or method: keep the real status, in the envelope.
        message = (
            f"no such operation: {request.method} {request.url.path}"
            if exc.status_code in (404, 405)
            else str(exc.detail)
        )
        return JSONResponse(
            _envelope({}, exc.status_code * 100, message),
            status_code=exc.status_code,
            headers=getattr(exc, "headers", None),
        )

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("sandbox: unexpected error on %s", request.url.path)
        return JSONResponse(
            _envelope({}, 50000, "internal error in the sandbox; see its log"), status_code=500
        )

    # -- the checks every operation shares --------------------------------

    async def common(request: Request) -> None:
        if cfg.latency_ms > 0:
            await asyncio.sleep(cfg.latency_ms / 1000)
        length = request.headers.get("content-length", "")
        if length.isdigit() and int(length) > MAX_BODY_BYTES:
            raise TooLarge(_too_large())

    def throttle_and_fault(key: str) -> None:
        if limiter is not None:
            wait = limiter.retry_after(key)
            if wait > 0:
                seconds = max(1, math.ceil(wait))
                raise RateLimited(
                    f"too many requests: the limit is {cfg.rate_limit:g} per second per"
                    f" account; retry after {seconds} s",
                    headers={"Retry-After": str(seconds)},
                )
        if cfg.fail_rate > 0 and rng.random() < cfg.fail_rate:
            raise Unavailable("service unavailable (injected fault, --fail-rate); try again")

    def authenticate(request: Request) -> int:
        header = request.headers.get("authorization")
        fix = f"send 'Authorization: Bearer <token>' with a token from POST {cfg.token_path}"
        if not header:
            raise Unauthorized(f"Authorization: header missing; {fix}")
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Unauthorized(f"Authorization: malformed (expected 'Bearer <token>'); {fix}")
        found = store.check_token(token)
        if found.account_id is None:
            raise Unauthorized(f"Authorization: unknown token; {fix}")
        if found.expires_ms <= now_ms():
            when = ms_to_datetime(found.expires_ms).isoformat(timespec="seconds")
            raise TokenExpired(
                f"Authorization: token expired at {when}; get a new one from POST {cfg.token_path}"
            )
        env = request.headers.get("x-env")
        if not env:
            raise Forbidden("X-ENV: header missing; send the env returned with the token")
        if env != found.env:
            raise Forbidden("X-ENV: is not this token's env; send the env returned with the token")
        throttle_and_fault(f"account:{found.account_id}")
        return found.account_id

    def validated(data: dict[str, Any], *, modify: bool) -> dict[str, Any]:
        try:
            return model_body(data, modify=modify)
        except ValidationError as exc:
            raise BadRequest(exc.message) from None

    # -- OpenAPI bits -----------------------------------------------------

    def responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
        rid = {
            REQUEST_ID_HEADER: {
                "schema": {"type": "string"},
                "required": True,
                "description": "Identifies this request in the log",
            }
        }
        out: dict[int | str, dict[str, Any]] = {200: {"headers": rid}}
        if envelope_style:
            out[200]["description"] = "Success (code 0) or an error with its code: " + "; ".join(
                schema.ERROR_DESCRIPTIONS[s] for s in statuses
            )
            return out
        for status in statuses:
            headers = dict(rid)
            if status == 429:
                headers["Retry-After"] = {
                    "schema": {"type": "string"},
                    "required": True,
                    "description": "Seconds to wait",
                }
            out[status] = {
                "model": schema.ErrorEnvelope,
                "description": schema.ERROR_DESCRIPTIONS[status],
                "headers": headers,
            }
        return out

    def body(spec: dict[str, Any], required: bool = True) -> dict[str, Any]:
        return {
            "requestBody": {
                "required": required,
                "content": {"application/json": {"schema": spec}},
            }
        }

    secured: dict[str, Any] = {"security": [{"bearerAuth": [], "envHeader": []}]}

    def model(success: type) -> Any:
        return success | schema.ErrorEnvelope if envelope_style else success

    common_errors = (400, 413, 429, 503)

    # -- routes -------------------------------------------------------------

    @app.post(
        cfg.token_path,
        operation_id="token",
        summary="Exchange appId and appSecret for a token and env",
        response_model=model(schema.TokenEnvelope),
        responses=responses(400, 401, *common_errors[1:]),
        openapi_extra=body(schema.token_body_schema()),
    )
    async def token(request: Request) -> JSONResponse:
        await common(request)
        data = await read_json(request)
        for field in ("appId", "appSecret"):
            if not isinstance(data.get(field), str):
                got = _json_type(data[field]) if field in data else "nothing"
                raise BadRequest(f"{field}: must be a string, got {got}")
        throttle_and_fault(f"app:{data['appId']}")
        issued = store.issue_token(data["appId"], data["appSecret"], cfg.token_ttl_s)
        if issued is None:
            raise BadCredentials(
                "appId or appSecret is wrong; check LMREG_APP_ID and LMREG_APP_SECRET"
            )
        return JSONResponse(
            _envelope({"token": issued.token, "env": issued.env, "expireTime": issued.expires_ms})
        )

    @app.post(
        "/openapi/v1/registry-model",
        operation_id="registryModel",
        summary="Register a model",
        response_model=model(schema.ModelEnvelope),
        responses=responses(400, 401, 403, 409, *common_errors[1:]),
        openapi_extra={**body(schema.register_body_schema()), **secured},
    )
    async def registry_model(request: Request) -> JSONResponse:
        await common(request)
        account = authenticate(request)
        fields = validated(await read_json(request), modify=False)
        try:
            row = store.register(account, fields)
        except DuplicateNameError:
            raise Conflict(_conflict(fields["modelName"])) from None
        return JSONResponse(_envelope(row.to_api()))

    @app.post(
        "/openapi/v1/modify-model",
        operation_id="modifyModel",
        summary="Modify a registered model",
        response_model=model(schema.ModelEnvelope),
        responses=responses(400, 401, 403, 404, 409, *common_errors[1:]),
        openapi_extra={**body(schema.modify_body_schema()), **secured},
    )
    async def modify_model(request: Request) -> JSONResponse:
        await common(request)
        account = authenticate(request)
        fields = validated(await read_json(request), modify=True)
        try:
            row = store.modify(account, fields)
        except DuplicateNameError:
            raise Conflict(_conflict(fields["modelName"])) from None
        except ModelNotFoundError:
            raise NotFound(
                "modelId: no such model in this account; query-models lists your modelIds"
            ) from None
        return JSONResponse(_envelope(row.to_api()))

    @app.post(
        "/openapi/v1/query-models",
        operation_id="queryModels",
        summary="List the account's registered models",
        response_model=model(schema.ModelsEnvelope),
        responses=responses(400, 401, 403, *common_errors[1:]),
        openapi_extra={**body(schema.query_body_schema(), required=False), **secured},
    )
    async def query_models(request: Request) -> JSONResponse:
        await common(request)
        account = authenticate(request)
        await read_json(request, optional=True)
        rows = store.models(account)
        return JSONResponse(_envelope({"models": [r.to_api() for r in rows]}))

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            doc = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
            )
            doc.setdefault("components", {})["securitySchemes"] = {
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
            app.openapi_schema = doc
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


def _conflict(name: str) -> str:
    return (
        f"modelName: {name!r} is already used in this account; choose another name"
        " or modify that model (its modelId is in query-models)"
    )
