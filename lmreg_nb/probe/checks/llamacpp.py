"""What llama.cpp's own server (``llama-server``) tells of its slots.

llama-server splits its context (``-c``) among its parallel slots (``-np``):
each request gets one slot of ``-c / -np`` tokens (unless ``--kv-unified``),
so a server started with ``-c 8192 -np 4`` refuses a prompt of 2,049 tokens.
The context-window check's advice must say so, or a school raises ``-c`` it
already set. The server shows itself by its replies (``system_fingerprint``
``b<build>-<commit>``, a ``timings`` object, the error type
``exceed_context_size_error`` with the slot's ``n_ctx``) and tells its slots
on ``GET /props`` (``total_slots``, ``default_generation_settings.n_ctx``)
and the model's own limit on ``GET /v1/models`` (``meta.n_ctx_train``): a slot
never holds more than the model was trained for, whatever ``-c`` says.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any

import httpx

from ..target import Target
from ..wire.exchange import Exchange
from .golive import get_json, models_url

__all__ = ["Slots", "is_llamacpp", "props_url", "read_slots"]

#: The most of a /props answer that is read (it holds the chat template: a few KiB).
MAX_PROPS_BYTES = 256 * 1024
_FINGERPRINT = re.compile(r"b\d+-[0-9a-f]{6,}")
_REFUSAL = "exceeds the available context size"


@dataclass(frozen=True)
class Slots:
    """llama-server's parallel slots and the tokens each holds (None: not told)."""

    slots: int | None = None
    per_slot: int | None = None
    trained: int | None = None  # the model's n_ctx_train: the cap of every slot


def _count(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1 << 31:
        return value
    return None


def is_llamacpp(ex: Exchange) -> bool:
    """True when a reply or refusal has llama-server's marks."""
    body = ex.json_body
    if not isinstance(body, dict):
        return False
    error = body.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        return error.get("type") == "exceed_context_size_error" or (
            isinstance(message, str) and _REFUSAL in message
        )
    fingerprint = body.get("system_fingerprint")
    return isinstance(body.get("timings"), dict) or (
        isinstance(fingerprint, str) and _FINGERPRINT.fullmatch(fingerprint) is not None
    )


def refused_slot(ex: Exchange) -> int | None:
    """The slot's tokens named in a llama-server refusal (``error.n_ctx``), if any."""
    body = ex.json_body
    error = body.get("error") if isinstance(body, dict) else None
    return _count(error.get("n_ctx")) if isinstance(error, dict) else None


def props_url(chat_url: str) -> str | None:
    """``.../props`` where llama-server serves it, beside a ``.../v1/chat/completions`` URL."""
    base = chat_url.partition("?")[0].rstrip("/")
    for tail in ("v1/chat/completions", "chat/completions"):
        if base.endswith(tail):
            return base[: -len(tail)] + "props"
    return None


async def read_slots(client: httpx.AsyncClient, target: Target, seen: Exchange) -> Slots:
    """The slots as ``GET /props`` tells them, else as the refusal ``seen`` does."""
    per_slot = refused_slot(seen)
    props, listing = props_url(target.url), models_url(target.url)
    if props is None or listing is None:
        return Slots(None, per_slot)
    (_s, body, _f), (_s2, models, _f2) = await asyncio.gather(
        get_json(client, target, props, MAX_PROPS_BYTES),
        get_json(client, target, listing, MAX_PROPS_BYTES),
    )
    trained = _trained(models, target.model)
    if not isinstance(body, dict):
        return Slots(None, per_slot, trained)
    settings = body.get("default_generation_settings")
    told = _count(settings.get("n_ctx")) if isinstance(settings, dict) else None
    return Slots(_count(body.get("total_slots")), told or per_slot, trained)


def _trained(listing: Any, model: str) -> int | None:
    """``meta.n_ctx_train`` of ``model`` (or of the only model) in llama-server's /v1/models."""
    data = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(data, list):
        return None
    entries = [e for e in data if isinstance(e, dict) and isinstance(e.get("meta"), dict)]
    named = [e for e in entries if e.get("id") == model] or (entries if len(entries) == 1 else [])
    return _count(named[0]["meta"].get("n_ctx_train")) if named else None
