"""What every platform operation shares, as FastAPI dependencies and helpers.

Order of the checks (each route lists them so): body size by Content-Length
(41300) and the latency knob (:func:`common`), the token and X-ENV
(:func:`authenticate`: 40100/40101/40300), the rate limit and the injected
fault (42900/50300), then the body itself (:func:`read_json`: 41300 on the
bytes actually read, 40000).
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time
from typing import Any

from fastapi import Request

from ...errors import ValidationError
from ...models import ms_to_datetime, now_ms
from ...validate import model_body
from .errors import (
    BadRequest,
    Forbidden,
    RateLimited,
    TokenExpired,
    TooLarge,
    Unauthorized,
    Unavailable,
)

__all__ = [
    "MAX_BODY_BYTES",
    "RateLimiter",
    "authenticate",
    "common",
    "json_type",
    "read_json",
    "throttle_and_fault",
    "validated",
]

MAX_BODY_BYTES = 1024 * 1024


class RateLimiter:
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


def _too_large() -> str:
    return f"body: is over 1 MiB ({MAX_BODY_BYTES} bytes); shorten reqExample/resExample"


async def common(request: Request) -> None:
    """The latency knob, then 41300 when Content-Length already says the body is too big."""
    cfg = request.app.state.config
    if cfg.latency_ms > 0:
        await asyncio.sleep(cfg.latency_ms / 1000)
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > MAX_BODY_BYTES:
        raise TooLarge(_too_large())


def throttle_and_fault(request: Request, key: str) -> None:
    """42900 over the rate limit (per ``key``), 50300 for an injected fault."""
    state = request.app.state
    cfg = state.config
    if state.limiter is not None:
        wait = state.limiter.retry_after(key)
        if wait > 0:
            seconds = max(1, math.ceil(wait))
            raise RateLimited(
                f"too many requests: the limit is {cfg.rate_limit:g} per second per"
                f" account; retry after {seconds} s",
                headers={"Retry-After": str(seconds)},
            )
    if cfg.fail_rate > 0 and state.rng.random() < cfg.fail_rate:
        raise Unavailable("service unavailable (injected fault, --fail-rate); try again")


def authenticate(request: Request) -> int:
    """The account of the Bearer token, checked with X-ENV; 40100/40101/40300 otherwise."""
    state = request.app.state
    header = request.headers.get("authorization")
    fix = f"send 'Authorization: Bearer <token>' with a token from POST {state.config.token_path}"
    if not header:
        raise Unauthorized(f"Authorization: header missing; {fix}")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized(f"Authorization: malformed (expected 'Bearer <token>'); {fix}")
    found = state.store.check_token(token)
    if found.account_id is None:
        raise Unauthorized(f"Authorization: unknown token; {fix}")
    if found.expires_ms <= now_ms():
        when = ms_to_datetime(found.expires_ms).isoformat(timespec="seconds")
        raise TokenExpired(
            f"Authorization: token expired at {when}; "
            f"get a new one from POST {state.config.token_path}"
        )
    env = request.headers.get("x-env")
    if not env:
        raise Forbidden("X-ENV: header missing; send the env returned with the token")
    if env != found.env:
        raise Forbidden("X-ENV: is not this token's env; send the env returned with the token")
    throttle_and_fault(request, f"account:{found.account_id}")
    return int(found.account_id)


def validated(data: dict[str, Any], *, modify: bool) -> dict[str, Any]:
    """The body checked by the client's own field rules; 40000 naming the field otherwise."""
    try:
        return model_body(data, modify=modify)
    except ValidationError as exc:
        raise BadRequest(exc.message) from None


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
        raise BadRequest(f"body: must be a JSON object, got a JSON {json_type(data)}")
    _check_text(data, "body")
    return data


def json_type(value: Any) -> str:
    """The JSON name of a value's type (for messages)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array"
