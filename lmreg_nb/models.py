"""Value objects of the registration API and the ms <-> datetime helpers."""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .i18n import _, clauses
from .secret import Secret

__all__ = [
    "MAX_TIMESTAMP_MS",
    "ModelDraft",
    "RegisteredModel",
    "Token",
    "find_in",
    "model_name_key",
    "ms_to_datetime",
    "now_ms",
]


def model_name_key(name: str) -> str:
    """How modelNames compare: trimmed and NFC-normalised (so "café" matches in any form)."""
    return unicodedata.normalize("NFC", name.strip())


def now_ms() -> int:
    """The current time as a 13-digit millisecond timestamp."""
    return time.time_ns() // 1_000_000


def ms_to_datetime(ms: int) -> datetime:
    """A 13-digit millisecond timestamp as an aware UTC datetime."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


@dataclass(frozen=True)
class Token:
    """A platform token and the env it belongs to."""

    token: Secret
    env: str
    expires_at_ms: int
    issued_at_ms: int
    #: Where it came from: "exchange", "cache" or "environment" (LMREG_TOKEN).
    source: str = "exchange"

    @property
    def expires_at(self) -> datetime:
        """Expiry as an aware UTC datetime."""
        return ms_to_datetime(self.expires_at_ms)

    @property
    def lifetime_s(self) -> float:
        """Seconds between issue and expiry."""
        return max(0.0, (self.expires_at_ms - self.issued_at_ms) / 1000)

    def seconds_left(self, at_ms: int | None = None) -> float:
        """Seconds until expiry (negative once expired)."""
        return (self.expires_at_ms - (now_ms() if at_ms is None else at_ms)) / 1000


@dataclass(frozen=True)
class ModelDraft:
    """What a school sends to register (or, with model_id, modify) a model."""

    model_name: str
    registry_url: str
    api_key: Secret
    model_id: str | None = None
    req_params: list[str] | None = None
    req_example: str | None = None
    res_example: str | None = None

    def to_body(self) -> dict[str, Any]:
        """The request body in the wire's field names (reveals apiKey: send it, never show it)."""
        body: dict[str, Any] = {
            "modelName": self.model_name,
            "registryUrl": self.registry_url,
            "apiKey": self.api_key.reveal(),
        }
        if self.model_id is not None:
            body["modelId"] = self.model_id
        for key, value in (
            ("reqParams", self.req_params),
            ("reqExample", self.req_example),
            ("resExample", self.res_example),
        ):
            if value is not None:
                body[key] = value
        return body


@dataclass(frozen=True)
class RegisteredModel:
    """A model as the platform returns it."""

    model_id: str
    model_name: str
    registry_url: str
    api_key: Secret = field(repr=True)
    create_time_ms: int | None = None
    update_time_ms: int | None = None
    #: Why the platform's row is not valid (a time out of range), or None: the
    #: row is kept and shown, marked, instead of breaking the whole listing.
    invalid: str | None = None

    @property
    def create_time(self) -> datetime | None:
        """createTime as an aware UTC datetime."""
        ms = _timestamp(self.create_time_ms)
        return None if ms is None else ms_to_datetime(ms)

    @property
    def update_time(self) -> datetime | None:
        """updateTime as an aware UTC datetime."""
        ms = _timestamp(self.update_time_ms)
        return None if ms is None else ms_to_datetime(ms)

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> RegisteredModel:
        """Build from a response object (fields the spec marks optional may be missing).

        A time that is not a millisecond timestamp within range becomes None and
        the model is marked :attr:`invalid` (one bad row must not break a listing).
        """
        problems: list[str] = []
        times = {}
        for key in ("createTime", "updateTime"):
            times[key] = _timestamp(data.get(key))
            if times[key] is None and data.get(key) not in (None, ""):
                problems.append(
                    _("{field} {value} is not a 13-digit millisecond timestamp").format(
                        field=key, value=_shown(data.get(key))
                    )
                )
        return cls(
            model_id=str(data.get("modelId") or ""),
            model_name=str(data.get("modelName") or ""),
            registry_url=str(data.get("registryUrl") or ""),
            api_key=Secret(str(data.get("apiKey") or "")),
            create_time_ms=times["createTime"],
            update_time_ms=times["updateTime"],
            invalid=clauses(problems) or None,
        )

    def row(self) -> dict[str, Any]:
        """A JSON-safe view with apiKey masked (for records and tables).

        ``invalid`` is present only for a row the platform sent out of range.
        """
        view: dict[str, Any] = {
            "modelName": self.model_name,
            "modelId": self.model_id,
            "registryUrl": self.registry_url,
            "apiKey": self.api_key.masked,
            "createTime": self.create_time.isoformat() if self.create_time else None,
            "updateTime": self.update_time.isoformat() if self.update_time else None,
        }
        if self.invalid:
            view["invalid"] = self.invalid
        return view


#: The largest 13-digit millisecond timestamp (2286-11-20); anything above is garbage.
MAX_TIMESTAMP_MS = 9_999_999_999_999


def _timestamp(value: object) -> int | None:
    ms = _int_or_none(value)
    return ms if ms is not None and 0 <= ms <= MAX_TIMESTAMP_MS else None


def _shown(value: object) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _int_or_none(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return None


def find_in(
    models: list[RegisteredModel], *, name: str | None = None, model_id: str | None = None
) -> RegisteredModel | None:
    """The model of ``models`` with this modelId (trimmed) or this modelName (by
    :func:`model_name_key`): exactly one of the two is given."""
    if (name is None) == (model_id is None):
        raise TypeError("give exactly one of name= or model_id=")
    if model_id is not None:
        wanted = model_id.strip()
        return next((m for m in models if m.model_id.strip() == wanted), None)
    key = model_name_key(name or "")
    return next((m for m in models if model_name_key(m.model_name) == key), None)
