"""The sandbox platform's error answers: one class per code, one handler turning them
into the spec's envelope (HTTP status, or HTTP 200 with the code in envelope style)."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

__all__ = [
    "BadCredentials",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "NotFound",
    "PlatformError",
    "RateLimited",
    "TokenExpired",
    "TooLarge",
    "Unauthorized",
    "Unavailable",
    "envelope",
    "install_error_handlers",
]

log = logging.getLogger("lmreg_nb")


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


def envelope(data: Any, code: int = 0, message: str = "OK") -> dict[str, Any]:
    """The spec's response envelope."""
    return {"code": code, "message": message, "data": data}


async def _platform_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, PlatformError)
    rid = getattr(request.state, "request_id", "")
    log.info(
        "sandbox %s %s -> %s %s [%s]", request.method, request.url.path, exc.code, exc.message, rid
    )
    envelope_style = request.app.state.config.error_style == "envelope"
    return JSONResponse(
        envelope({}, exc.code, exc.message),
        status_code=200 if envelope_style else exc.status,
        headers=exc.headers,
    )


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    # Unknown path or method: keep the real status, in the envelope.
    message = (
        f"no such operation: {request.method} {request.url.path}"
        if exc.status_code in (404, 405)
        else str(exc.detail)
    )
    return JSONResponse(
        envelope({}, exc.status_code * 100, message),
        status_code=exc.status_code,
        headers=getattr(exc, "headers", None),
    )


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("sandbox: unexpected error on %s", request.url.path)
    return JSONResponse(
        envelope({}, 50000, "internal error in the sandbox; see its log"), status_code=500
    )


def install_error_handlers(app: FastAPI) -> None:
    """One handler per error class: platform errors, unknown routes, anything else."""
    app.add_exception_handler(PlatformError, _platform_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
