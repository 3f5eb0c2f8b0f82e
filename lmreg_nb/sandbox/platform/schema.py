"""What the sandbox platform's OpenAPI document says: bodies, envelopes, errors, headers.

The routes read and check bodies themselves (with :mod:`lmreg_nb.validate`, so
the messages name the field); the JSON Schemas here describe exactly those
rules. Where a rule cannot be written as JSON Schema (modelName is measured
*after* trimming), a pattern spells it out, so that anything the platform
accepts matches the schema.
"""

from __future__ import annotations

import sys
import unicodedata
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ...validate import MAX_API_KEY, MAX_EXAMPLE_BYTES, MAX_MODEL_NAME, MAX_URL, is_visible

__all__ = [
    "ERROR_DESCRIPTIONS",
    "EmptyData",
    "ErrorEnvelope",
    "ModelEnvelope",
    "ModelOut",
    "ModelsData",
    "ModelsEnvelope",
    "TokenData",
    "TokenEnvelope",
    "modify_body_schema",
    "query_body_schema",
    "register_body_schema",
    "token_body_schema",
]

_MS_DOC = "13-digit timestamp in milliseconds"


class TokenData(BaseModel):
    """data of a successful token exchange."""

    token: str = Field(description="Bearer token for the registration operations")
    env: str = Field(description="Send as the X-ENV header with this token")
    expireTime: int = Field(ge=10**12, le=10**13 - 1, description=_MS_DOC)


class ModelOut(BaseModel):
    """A registered model as the platform returns it (reserved fields never appear)."""

    modelName: str
    modelId: str
    registryUrl: str
    apiKey: str
    createTime: int = Field(ge=10**12, le=10**13 - 1, description=_MS_DOC)
    updateTime: int = Field(ge=10**12, le=10**13 - 1, description=_MS_DOC)


class ModelsData(BaseModel):
    """data of query-models: the account's models in creation order."""

    models: list[ModelOut]


class EmptyData(BaseModel):
    """The empty object an error carries as data."""

    model_config = ConfigDict(extra="forbid")


class TokenEnvelope(BaseModel):
    """Success envelope of the token operation."""

    code: Literal[0]
    message: Literal["OK"]
    data: TokenData


class ModelEnvelope(BaseModel):
    """Success envelope of registry-model and modify-model."""

    code: Literal[0]
    message: Literal["OK"]
    data: ModelOut


class ModelsEnvelope(BaseModel):
    """Success envelope of query-models."""

    code: Literal[0]
    message: Literal["OK"]
    data: ModelsData


class ErrorEnvelope(BaseModel):
    """Every error: a non-zero code, a one-line message naming what to fix, empty data."""

    code: int = Field(ge=40000, le=59999, description="40000, 40100, ... (see the status)")
    message: str = Field(description="One line: the field or header, and what to fix")
    data: EmptyData


ERROR_DESCRIPTIONS: dict[int, str] = {
    400: "40000: body not JSON, not an object, or a field missing, of the wrong type"
    " or breaking a rule",
    401: "40100: Authorization missing, malformed or unknown; 40101: token expired;"
    " 40102: wrong appId or appSecret (token operation)",
    403: "40300: X-ENV missing or not the token's env",
    404: "40400: modelId unknown, or another account's (same answer for both)",
    409: "40900: modelName already used in this account",
    413: "41300: body over 1 MiB",
    429: "42900: rate limit (sandbox option --rate-limit); see Retry-After",
    503: "50300: injected fault (sandbox option --fail-rate)",
}


def _ranges(codepoints: list[int]) -> str:
    """A regex character-class body for the code points (BMP escapes, sorted)."""
    out: list[str] = []
    start = prev = None
    for cp in [*codepoints, -2]:
        if start is not None and prev is not None and cp == prev + 1:
            prev = cp
            continue
        if start is not None and prev is not None:
            out.append(f"\\u{start:04x}" if start == prev else f"\\u{start:04x}-\\u{prev:04x}")
        start = prev = cp
    return "".join(out)


# str.strip() removes exactly the characters for which isspace() is true (all in
# the BMP). Controls as validate.py sees them: categories Cc, Cf, Zl, Zp. Only
# BMP ones are excluded here; a pattern that lets a rare astral control through
# is still a true superset of what the platform accepts.
_BMP = range(0x10000)
_WS = _ranges([cp for cp in _BMP if chr(cp).isspace()])
_CTRL = _ranges(
    [cp for cp in _BMP if unicodedata.category(chr(cp)) in ("Cc", "Cf", "Cs", "Zl", "Zp")]
)
_CC = "\\u0000-\\u001f\\u007f-\\u009f"
assert sys.maxunicode > 0xFFFF  # narrow builds would need surrogate handling


def _trimmed(inner: str, edge: str, max_len: int) -> str:
    """Pattern: optional whitespace, then 1..max_len chars that start and end with ``edge``."""
    return f"^[{_WS}]*{edge}(?:{inner}{{0,{max_len - 2}}}{edge})?[{_WS}]*$"


# modelName starts and ends with a visible character (validate.is_visible).
_INVISIBLE = _ranges([cp for cp in _BMP if not is_visible(chr(cp))])
MODEL_NAME_PATTERN = _trimmed(f"[^{_CTRL}]", f"[^{_INVISIBLE}]", MAX_MODEL_NAME)
MODEL_ID_PATTERN = _trimmed("[\\s\\S]", f"[^{_WS}]", 128)
REGISTRY_URL_PATTERN = (
    f"^[{_WS}]*[hH][tT][tT][pP][sS]?://[^{_WS}{_CC}/?#@]{{1,{MAX_URL}}}"
    f"(?:[/?#][^{_WS}{_CC}]{{0,{MAX_URL}}})?[{_WS}]*$"
)
# apiKey: visible ASCII, what an Authorization header can carry.
API_KEY_PATTERN = f"^[!-~]{{1,{MAX_API_KEY}}}$"

_RESERVED: dict[str, Any] = {
    "reqParams": {
        "type": ["array", "null"],
        "items": {"type": "string"},
        "description": "Reserved, not supported: stored, never returned (at most 64 KiB in all)",
    },
    "reqExample": {
        "type": ["string", "null"],
        "maxLength": MAX_EXAMPLE_BYTES,
        "description": "Reserved, not supported: stored, never returned (at most 64 KiB UTF-8)",
    },
    "resExample": {
        "type": ["string", "null"],
        "maxLength": MAX_EXAMPLE_BYTES,
        "description": "Reserved, not supported: stored, never returned (at most 64 KiB UTF-8)",
    },
}

_FIELDS: dict[str, Any] = {
    "modelName": {
        "type": "string",
        "pattern": MODEL_NAME_PATTERN,
        "description": "Trimmed and NFC-normalised, 1 to 64 characters, no control characters,"
        " starting and ending with a visible character; unique in the account",
    },
    "registryUrl": {
        "type": "string",
        "pattern": REGISTRY_URL_PATTERN,
        "description": "Absolute http(s) URL with a valid host (IDNA / RFC 1123) and no port 0,"
        " at most 2048 characters, no user:password part; normally ends in"
        " /v1/chat/completions",
    },
    "apiKey": {
        "type": "string",
        "pattern": API_KEY_PATTERN,
        "description": "1 to 512 visible ASCII characters (0x21-0x7E): a Bearer credential",
    },
}


def register_body_schema() -> dict[str, Any]:
    """JSON Schema of the registry-model body (modelId/createTime/updateTime are ignored)."""
    return {
        "type": "object",
        "required": ["modelName", "registryUrl", "apiKey"],
        "properties": {**_FIELDS, **_RESERVED},
        "description": "Other keys (modelId, createTime, updateTime, ...) are ignored.",
    }


def modify_body_schema() -> dict[str, Any]:
    """JSON Schema of the modify-model body."""
    return {
        "type": "object",
        "required": ["modelName", "registryUrl", "apiKey", "modelId"],
        "properties": {
            **_FIELDS,
            "modelId": {
                "type": "string",
                "pattern": MODEL_ID_PATTERN,
                "description": "The modelId returned by registry-model or query-models",
            },
            **_RESERVED,
        },
        "description": "Overwrites modelName, registryUrl and apiKey (and any reserved field"
        " sent); createTime is kept, updateTime is set anew.",
    }


def query_body_schema() -> dict[str, Any]:
    """JSON Schema of the query-models body: an empty object (keys are ignored)."""
    return {"type": "object", "description": "An empty object; any keys are ignored."}


def token_body_schema() -> dict[str, Any]:
    """JSON Schema of the token operation's body."""
    return {
        "type": "object",
        "required": ["appId", "appSecret"],
        "properties": {
            "appId": {"type": "string", "description": "The appId the provider handed out"},
            "appSecret": {"type": "string", "description": "The appSecret that goes with it"},
        },
    }
