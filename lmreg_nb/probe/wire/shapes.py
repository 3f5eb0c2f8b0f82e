"""The OpenAI reply shapes, read in one place: a whole reply, a stream chunk, an error body.

Every reader of a school's reply (the checks, the load test, the chat step and
the chat box) goes through these functions, so a server's variant is learnt
once. They never raise for a strange value: a field of the wrong type reads as
missing (None, or an empty result).

Shapes accepted:

- a chat reply ``{"choices": [{"message": {"content": ...}, "finish_reason"}], "usage"}``
  and a text completion ``{"choices": [{"text": ...}]}``;
- a stream chunk ``{"choices": [{"delta": {"role"?, "content"?}}]}`` or
  ``{"choices": [{"text": ...}]}``; a usage-only chunk has ``"choices": []``;
- a reasoning model's thinking, kept apart from the answer by a reasoning
  parser: ``reasoning_content`` (vLLM, SGLang, DeepSeek) or ``reasoning``
  (Ollama, OpenRouter, newer vLLM) beside ``content``, in ``message`` or ``delta``;
- an error body: OpenAI's ``{"error": {"message", "type", "code"}}``, vLLM's
  ``{"object": "error", "message", "type", "code"}``, and the common
  ``{"message"}`` / ``{"detail"}`` / ``{"error": "text"}`` forms.
"""

from __future__ import annotations

import json
from typing import Any

from ...i18n import _

__all__ = [
    "MAX_USAGE_COUNT",
    "chunk_delta",
    "chunk_reasoning",
    "chunk_text",
    "completion_tokens",
    "error_message",
    "finish_reason",
    "first_choice",
    "is_error_object",
    "model_ids",
    "reply_reasoning",
    "reply_shape",
    "reply_text",
    "usage_of",
]


def first_choice(obj: Any) -> dict[str, Any] | None:
    """``obj["choices"][0]`` when it is an object, else None."""
    choices = obj.get("choices") if isinstance(obj, dict) else None
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0]
    return None


def _choice_text(obj: Any, part: str) -> str | None:
    """``choices[0][part].content`` (chat), else ``choices[0].text`` (completion)."""
    choice = first_choice(obj)
    if choice is None:
        return None
    holder = choice.get(part)
    text = holder.get("content") if isinstance(holder, dict) else choice.get("text")
    return text if isinstance(text, str) else None


def reply_text(obj: Any) -> str | None:
    """The text of a whole reply: ``message.content`` (chat) or ``text`` (completion)."""
    return _choice_text(obj, "message")


#: Where a reasoning parser puts the thinking, in the order they are read.
REASONING_FIELDS = ("reasoning_content", "reasoning")


def _reasoning(obj: Any, part: str) -> str | None:
    choice = first_choice(obj)
    holder = choice.get(part) if choice is not None else None
    if not isinstance(holder, dict):
        return None
    for key in REASONING_FIELDS:
        text = holder.get(key)
        if isinstance(text, str) and text:
            return text
    return None


def reply_reasoning(obj: Any) -> str | None:
    """The thinking of a whole chat reply (``message.reasoning_content``), or None."""
    return _reasoning(obj, "message")


def chunk_reasoning(obj: Any) -> str | None:
    """The thinking piece of a stream chunk (``delta.reasoning_content``), or None."""
    return _reasoning(obj, "delta")


def chunk_delta(obj: Any) -> dict[str, Any] | None:
    """The ``delta`` object of a chat stream chunk, or None (a completion chunk has none)."""
    choice = first_choice(obj)
    delta = choice.get("delta") if choice is not None else None
    return delta if isinstance(delta, dict) else None


def chunk_text(obj: Any) -> str | None:
    """The text piece of a stream chunk: ``delta.content`` (chat) or ``text`` (completion)."""
    return _choice_text(obj, "delta")


def finish_reason(obj: Any) -> str | None:
    """``choices[0].finish_reason`` when it is a string."""
    choice = first_choice(obj)
    reason = choice.get("finish_reason") if choice is not None else None
    return reason if isinstance(reason, str) else None


#: The largest token count believed in a usage object (a hundred million: ten times the
#: longest context any model has); a larger or non-finite one reads as missing, so no
#: figure built on it overflows (a 401-digit count once raised OverflowError).
MAX_USAGE_COUNT = 100_000_000


def usage_of(obj: Any) -> dict[str, Any] | None:
    """The ``usage`` object of a reply or chunk, when there is a non-empty one.

    Its counts are sanitised before anyone does arithmetic with them: a number that is
    negative, not finite or over :data:`MAX_USAGE_COUNT` is left out, as if not sent.
    """
    usage = obj.get("usage") if isinstance(obj, dict) else None
    if not isinstance(usage, dict) or not usage:
        return None
    return {key: value for key, value in usage.items() if _sane(value)}


def _sane(value: Any) -> bool:
    """A usage field worth keeping: anything but an absurd number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return True  # not a number: the readers check the type they need
    return 0 <= value <= MAX_USAGE_COUNT  # NaN compares false: left out too


def completion_tokens(obj: Any) -> int | None:
    """``usage.completion_tokens`` as a non-negative int, else None."""
    usage = usage_of(obj)
    tokens = usage.get("completion_tokens") if usage is not None else None
    if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0:
        return tokens
    return None


def is_error_object(obj: Any) -> bool:
    """An error object inside a 200 stream or body: ``{"error": ...}`` or vLLM's form."""
    if not isinstance(obj, dict):
        return False
    return "error" in obj or obj.get("object") == "error"


def error_message(body: Any) -> str | None:
    """The server's message in an error body (parsed JSON, or bytes / text to parse)."""
    if isinstance(body, bytes | str):
        try:
            body = json.loads(body)
        except ValueError:
            return None
    if not isinstance(body, dict):
        return None
    err = body.get("error")
    if isinstance(err, dict):
        message = err.get("message")
        if isinstance(message, str):
            return message
    for key in ("message", "detail", "error", "msg"):
        value = body.get(key)
        if isinstance(value, str):
            return value
    return None


def model_ids(body: Any) -> list[str] | None:
    """The ids listed by ``GET /v1/models`` (``{"data": [{"id"}]}``), or None for another shape."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return None
    return [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]


def reply_shape(body: Any) -> list[str]:
    """What a non-streamed chat reply lacks (empty when it has everything)."""
    if not isinstance(body, dict):
        return [_("a JSON object")]
    missing = [k for k in ("id", "object") if not isinstance(body.get(k), str)]
    choice = first_choice(body)
    if choice is None:
        return [*missing, "choices[0]"]
    message = choice.get("message")
    if not isinstance(message, dict):
        missing.append("choices[0].message")
    else:
        if not isinstance(message.get("role"), str):
            missing.append("choices[0].message.role")
        if not isinstance(message.get("content"), str):
            missing.append("choices[0].message.content")
    if "finish_reason" not in choice:
        missing.append("choices[0].finish_reason")
    return missing
