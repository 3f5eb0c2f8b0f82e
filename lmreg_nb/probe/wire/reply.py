"""One chat reply as it arrives: every reader of a school's answer accumulates it here.

The checks' recorder (:mod:`.exchange`, httpx and the SSE decoder), the lean
client of the load test and the capacity search (:mod:`.stream_client`) and
the chat step (:mod:`.chat`) each turn bytes into events their own way, then
hand each event here: a ``data:`` payload (:meth:`Reply.take_data`), a parsed
chunk (:meth:`Reply.take_chunk`) or a whole non-streamed body
(:meth:`Reply.take_whole`). So what a reply says is read once, through
:mod:`.shapes`: the answer's text and the thinking's text (``reasoning_content``
/ ``reasoning``), each piece with its arrival time, finish_reason, usage,
[DONE], error objects, and the deviations the checks note. Text is capped at
:data:`MAX_TEXT_CHARS` per kind (``truncated`` says the answer's cap was hit).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from .shapes import (
    chunk_delta,
    chunk_reasoning,
    chunk_text,
    finish_reason,
    is_error_object,
    reply_reasoning,
    reply_text,
    usage_of,
)

__all__ = ["MAX_TEXT_CHARS", "USAGE_PER_CHUNK", "Reply"]

#: The most reply text kept (of the answer, and of the thinking).
MAX_TEXT_CHARS = 256 * 1024
#: A streamed ``usage.completion_tokens`` over this many tokens per chunk received is not
#: believed (a chunk may carry a few tokens; 5 chunks are never 100,000 tokens).
USAGE_PER_CHUNK = 4
#: The fields of llama.cpp's ``timings`` that are kept.
TIMING_KEYS = ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "cache_n")


@dataclass(slots=True)
class Reply:
    """What a chat reply said so far. Times are the caller's clock (``perf_counter``)."""

    pieces: list[str] = field(default_factory=list)  # the answer (content), capped
    times: list[float] = field(default_factory=list)  # arrival of each answer piece
    reasoning: list[str] = field(default_factory=list)  # the thinking, capped
    reasoning_times: list[float] = field(default_factory=list)  # arrival of each thinking piece
    finish: str | None = None  # the last finish_reason seen
    usage: dict[str, Any] | None = None
    done: bool = False  # saw `data: [DONE]`
    after_done: int = 0  # events after [DONE]
    events: int = 0  # data events taken
    non_json: list[str] = field(default_factory=list)  # data that was not a JSON object
    error_events: list[Any] = field(default_factory=list)  # {"error": ...} inside the stream
    role_only_first: bool = False
    null_content: int = 0
    usage_chunks: int = 0  # chunks with empty choices and a usage object
    text_chars: int = 0
    reasoning_chars: int = 0
    truncated: bool = False  # the answer's text reached MAX_TEXT_CHARS
    chunks_seen: int = 0  # chunks with choices (the first one may be role-only)
    whole: bool = False  # one body, not a stream: its usage cannot be checked against chunks
    #: When the first chunk came that carried a token but no text yet: ``content: ""``
    #: after the role chunk (vLLM holds back the bytes of a partial character so), or
    #: finish_reason "length" (None: no such chunk).
    silent_token_at: float | None = None
    #: llama.cpp's own ``timings`` of this reply (its last chunk, or the whole body):
    #: ``prompt_n``, ``prompt_ms``, ``predicted_n``, ``predicted_ms``, ``cache_n``.
    timings: dict[str, float] | None = None

    @property
    def text(self) -> str:
        """The answer's text received (capped)."""
        return "".join(self.pieces)

    @property
    def reasoning_text(self) -> str:
        """The thinking's text received (capped): what ``reasoning-separated`` looks at."""
        return "".join(self.reasoning)

    @property
    def first_token_at(self) -> float | None:
        """When the first token of any kind (thinking or answer) arrived."""
        firsts = [t[0] for t in (self.times, self.reasoning_times) if t]
        return min(firsts) if firsts else None

    @property
    def silent_answer(self) -> bool:
        """A reply cut by ``max_tokens`` before its tokens carried any text: e.g.
        ``max_tokens`` 1 whose token is the first byte of a Chinese character (vLLM sends
        ``content: ""`` for it). Not a broken reply: an empty first token. (A reply that
        stopped by itself with no text said nothing: that stays a reply without content.)"""
        return not self.pieces and self.finish == "length"

    @property
    def gaps(self) -> list[float]:
        """Seconds between consecutive answer pieces."""
        t = self.times
        return [t[i] - t[i - 1] for i in range(1, len(t))]

    @property
    def output_tokens(self) -> tuple[int, str]:
        """Output tokens and where the number comes from: ``"usage"`` or ``"chunks"``.

        A streamed usage count over :data:`USAGE_PER_CHUNK` tokens per chunk received
        (answer and thinking) is not believed (:attr:`usage_disbelieved`): the chunks
        are counted instead.
        """
        tokens = self._usage_tokens()
        if tokens is not None and not self.usage_disbelieved:
            return tokens, "usage"
        return len(self.pieces), "chunks"

    @property
    def usage_disbelieved(self) -> bool:
        """The stream's ``usage.completion_tokens`` is more than the chunks could carry."""
        tokens = self._usage_tokens()
        if tokens is None or self.whole or self.truncated:
            return False
        chunks = len(self.times) + len(self.reasoning_times)
        return tokens > USAGE_PER_CHUNK * max(chunks, 1)

    def _usage_tokens(self) -> int | None:
        tokens = self.usage.get("completion_tokens") if self.usage is not None else None
        if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0:
            return tokens
        return None

    def take_data(self, data: str | bytes, now: float) -> str:
        """One ``data:`` payload of a stream ([DONE] or a JSON chunk); the answer text it added."""
        self.events += 1
        if self.done:
            self.after_done += 1
            return ""
        if data in ("[DONE]", b"[DONE]"):
            self.done = True
            return ""
        try:
            obj = json.loads(data)
        except ValueError:
            self.non_json.append(_shown(data))
            return ""
        return self.take_chunk(obj, now, data)

    def take_chunk(self, obj: Any, now: float, raw: str | bytes = "") -> str:
        """One parsed stream chunk; the answer text it added (``raw``: shown when it is bad)."""
        if not isinstance(obj, dict):
            self.non_json.append(_shown(raw) if raw else str(obj)[:200])
            return ""
        if is_error_object(obj):
            self.error_events.append(obj.get("error", obj))
            return ""
        usage = usage_of(obj)
        if usage is not None:
            self.usage = usage
        self.take_timings(obj)
        choices = obj.get("choices")
        if not choices:
            if usage is not None:
                self.usage_chunks += 1
            return ""
        if not isinstance(choices, list) or not isinstance(choices[0], dict):
            self.non_json.append(_shown(raw) if raw else str(obj)[:200])
            return ""
        delta = chunk_delta(obj)
        text = chunk_text(obj)
        role_only = not self.chunks_seen and delta is not None and "role" in delta and not text
        if role_only:
            self.role_only_first = True
        self.chunks_seen += 1
        self.finish = finish_reason(obj) or self.finish
        silent = text == "" or (not text and finish_reason(obj) == "length")
        if silent and not role_only and self.silent_token_at is None:
            self.silent_token_at = now
        thought = chunk_reasoning(obj)
        if thought:
            self._think(thought, now)
        if text:
            return self._answer(text, now)
        if text is None and (delta is None or delta.get("content", "") is None):
            self.null_content += 1
        return ""

    def take_whole(self, obj: Any, now: float) -> str:
        """A whole (non-streamed) reply arriving at once; its answer text."""
        self.whole = True
        thought = reply_reasoning(obj)
        if thought:
            self._think(thought, now)
        text = reply_text(obj)
        added = self._answer(text, now) if text else ""
        self.finish = finish_reason(obj)
        usage = usage_of(obj)
        if usage is not None:
            self.usage = usage
        self.take_timings(obj)
        return added

    def take_timings(self, obj: dict[str, Any]) -> None:
        """Keep llama.cpp's ``timings`` (finite, non-negative numbers only: untrusted)."""
        timings = obj.get("timings")
        if not isinstance(timings, dict):
            return
        kept = {k: float(v) for k in TIMING_KEYS
                if isinstance(v := timings.get(k), int | float) and not isinstance(v, bool)
                and math.isfinite(v) and v >= 0}  # fmt: skip
        if kept:
            self.timings = kept

    def _answer(self, text: str, now: float) -> str:
        room = MAX_TEXT_CHARS - self.text_chars
        if room <= 0:
            self.truncated = True
            return ""
        piece = text[:room]
        self.text_chars += len(piece)
        self.pieces.append(piece)
        self.times.append(now)
        return piece

    def _think(self, text: str, now: float) -> None:
        self.reasoning_times.append(now)
        room = MAX_TEXT_CHARS - self.reasoning_chars
        if room > 0:  # past the cap only the times are kept (first_token_at needs the first)
            self.reasoning_chars += min(room, len(text))
            self.reasoning.append(text[:room])


def _shown(data: str | bytes) -> str:
    """A bad payload as the checks quote it (200 characters)."""
    text = data if isinstance(data, str) else data[:800].decode("utf-8", "replace")
    return text[:200]
