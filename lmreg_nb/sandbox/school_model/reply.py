"""One reply of the mock school model: its tokens, its timing, its SSE frames and error pages.

See :mod:`lmreg_nb.sandbox.school_model` for the timing rule and
:mod:`~lmreg_nb.sandbox.school_model.config` for the quirks.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import AsyncGenerator, Callable
from typing import Any

from starlette.responses import JSONResponse, Response

from .compute import prompt_tokens
from .config import MockModelConfig

__all__ = [
    "THINKING_TOKENS",
    "Reply",
    "asks_chinese",
    "chinese_tokens",
    "error_body",
    "error_reply",
    "reply_tokens",
    "sleep_until",
    "split_utf8",
    "sse_stream",
]

_SENTENCE = (
    "The quick brown fox jumps over the lazy dog while the school model "
    "streams one token per chunk for the probe to measure."
)
_WORDS = tuple(_SENTENCE.split())


def reply_tokens(count: int) -> list[str]:
    """The token strings of a reply of ``count`` tokens (the ground truth of the text)."""
    return [_WORDS[k % len(_WORDS)] + " " for k in range(count)]


_TOKEN_JSON = {t: json.dumps(t) for t in reply_tokens(len(_WORDS))}
#: A reasoning model's thinking before its answer (quirks reasoning-content, think-in-content).
_THOUGHT = "Let me think: the student asks a short question, so one clear answer is best"
_THINKING = tuple(w + " " for w in _THOUGHT.split())
#: Tokens of thinking before the answer.
THINKING_TOKENS = 16
_CHINESE = "图书馆每天早上八点开门，同学们可以在这里安静地读书、查资料和讨论问题。"


def chinese_tokens(count: int, garble: bool) -> list[str]:
    """A Chinese reply, one character per token; ``garble``: U+FFFD for every fifth."""
    return [
        "\ufffd" if garble and k % 5 == 2 else _CHINESE[k % len(_CHINESE)] for k in range(count)
    ]


def asks_chinese(body: dict[str, Any]) -> bool:
    text = json.dumps(body.get("messages") or body.get("prompt") or "", ensure_ascii=False)
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


async def split_utf8(stream: AsyncGenerator[bytes, None]) -> AsyncGenerator[bytes, None]:
    """Each write cut inside its first multi-byte character (a read boundary mid-character)."""
    async for block in stream:
        cut = next((i + 1 for i, b in enumerate(block) if b >= 0xC0), 0)
        if cut:
            yield block[:cut]
            await asyncio.sleep(0.005)
            block = block[cut:]
        yield block


_MARK = "\x00token\x00"  # a placeholder no token contains


def error_body(message: str, type_: str, code: str | None, param: str | None = None) -> dict:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def error_reply(
    status: int,
    message: str,
    type_: str,
    code: str | None,
    quirks: frozenset[str],
    headers: dict[str, str] | None = None,
) -> Response:
    """An error reply: OpenAI-style JSON, or an HTML / text page when a quirk asks."""
    if "html-errors" in quirks:
        page = (
            f"<html><head><title>{status} Error</title></head><body>"
            f"<center><h1>{status} Error</h1></center><hr><center>nginx</center></body></html>"
        )
        return Response(page, status, headers=headers, media_type="text/html")
    if "text-errors" in quirks:
        return Response(f"{status} {message}", status, headers=headers, media_type="text/plain")
    return JSONResponse(error_body(message, type_, code), status, headers=headers)


class _Frames:
    """SSE framing of one stream, with the framing quirks applied."""

    def __init__(self, quirks: frozenset[str]) -> None:
        self.eol = "\r\n" if "crlf" in quirks else "\r" if "cr" in quirks else "\n"
        self.prefix = "data:" if "no-space" in quirks else "data: "
        self.keepalive = "keepalive" in quirks

    def data(self, payload: str) -> str:
        head = f": keep-alive{self.eol}{self.eol}" if self.keepalive else ""
        return f"{head}{self.prefix}{payload}{self.eol}{self.eol}"

    def event(self, obj: dict[str, Any]) -> str:
        return self.data(json.dumps(obj, separators=(",", ":")))


class Reply:
    """One request's reply: its ids, its tokens and when each one is due."""

    def __init__(
        self, config: MockModelConfig, body: dict[str, Any], chat: bool, t0: float
    ) -> None:
        self.t0 = t0
        self.chat = chat
        self.model = str(body.get("model") or "mock-model")
        cap = body.get("max_completion_tokens", body.get("max_tokens"))
        count = config.tokens
        self.finish = "stop"
        if isinstance(cap, int) and not isinstance(cap, bool) and 0 <= cap < count:
            count, self.finish = cap, "length"
        self.tokens = reply_tokens(count)
        self.cap = cap if isinstance(cap, int) and not isinstance(cap, bool) and cap >= 0 else None
        self.thinking = 0  # the first `thinking` tokens are reasoning_content, not content
        self.ttft = config.ttft_ms / 1000
        self.itl = config.itl_ms / 1000
        self.id = ("chatcmpl-" if chat else "cmpl-") + secrets.token_hex(12)
        self.created = int(time.time())
        self.object = "chat.completion" if chat else "text_completion"
        self.prompt = _prompt(body, chat)  # its tokens, for the prefill and the prefix cache
        self.prompt_tokens = len(self.prompt)
        self.pace: Callable[[int], float] | None = None  # set under a decode slowdown

    def think(self, quirks: frozenset[str]) -> None:
        """Thinking before the answer: as reasoning_content, or as a <think> block in content.

        The thinking counts against max_tokens, as in vLLM: a small cap leaves no answer.
        """
        thoughts = [_THINKING[k % len(_THINKING)] for k in range(THINKING_TOKENS)]
        if "think-in-content" in quirks:
            thoughts = ["<think>\n", *thoughts, "</think>\n\n"]
        elif "reasoning-content" not in quirks:
            return
        tokens = thoughts + self.tokens
        if self.cap is not None and len(tokens) > self.cap:
            tokens, self.finish = tokens[: self.cap], "length"
        self.tokens = tokens
        if "reasoning-content" in quirks:
            self.thinking = min(len(thoughts), len(tokens))

    def due(self, k: int) -> float:
        """Monotonic time at which token ``k`` is due."""
        if self.pace is not None:
            return self.pace(k)
        return self.t0 + self.ttft + k * self.itl

    @property
    def done_at(self) -> float:
        return self.due(max(len(self.tokens) - 1, 0))

    def usage(self) -> dict[str, int]:
        n = len(self.tokens)
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": n,
            "total_tokens": self.prompt_tokens + n,
        }

    def whole(self, quirks: frozenset[str]) -> dict[str, Any]:
        """The non-streamed reply."""
        text = "".join(self.tokens[self.thinking :])
        choice: dict[str, Any] = {"index": 0, "finish_reason": self.finish, "logprobs": None}
        if self.chat:
            choice["message"] = {"role": "assistant", "content": text}
            if self.thinking:
                choice["message"]["reasoning_content"] = "".join(self.tokens[: self.thinking])
        else:
            choice["text"] = text
        out: dict[str, Any] = {
            "id": self.id,
            "object": self.object,
            "created": self.created,
            "model": self.model,
            "choices": [choice],
        }
        if "no-usage" not in quirks:
            out["usage"] = self.usage()
        return out

    def chunk(self, delta: dict[str, Any] | str | None, finish: str | None = None) -> dict:
        """One stream chunk (chat: ``delta`` is a dict; completions: a text piece)."""
        choice: dict[str, Any] = {"index": 0, "finish_reason": finish, "logprobs": None}
        if self.chat:
            choice["delta"] = delta
        else:
            choice["text"] = delta
        return {
            "id": self.id,
            "object": "chat.completion.chunk" if self.chat else "text_completion",
            "created": self.created,
            "model": self.model,
            "choices": [choice],
        }

    def content(self, text: str | None) -> dict[str, Any] | str | None:
        return {"content": text} if self.chat else text


def _prompt(body: dict[str, Any], chat: bool) -> list[str]:
    """The prompt's tokens as :func:`~.compute.tokenize` counts them (at least one)."""
    if chat:
        messages = body.get("messages") or []
        texts = [_text(m.get("content")) for m in messages if isinstance(m, dict)]
    else:
        prompt = body.get("prompt")
        texts = [str(p) for p in prompt] if isinstance(prompt, list) else [str(prompt or "")]
    return prompt_tokens(texts) or [""]


def _text(content: object) -> str:
    """A message's text: a string, or the text parts of a list of parts."""
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        return " ".join(p for p in parts if isinstance(p, str))
    return str(content or "")


async def sleep_until(deadline: float) -> None:
    delay = deadline - time.monotonic()
    if delay > 0:
        await asyncio.sleep(delay)


async def sse_stream(
    reply: Reply, quirks: frozenset[str], include_usage: bool
) -> AsyncGenerator[bytes, None]:
    frames = _Frames(quirks)
    null = "null-content" in quirks
    pieces: list[str] = []
    if reply.chat:
        role: dict[str, Any] = {"role": "assistant", "content": None if null else ""}
        pieces.append(frames.event(reply.chunk(role)))
    n = len(reply.tokens)
    burst = "burst" in quirks
    # Render the chunk once and splice each token in: json.dumps per chunk would make
    # the mock, not the client under test, the bottleneck of a load benchmark.
    head, tail = frames.event(reply.chunk(reply.content(_MARK))).split(json.dumps(_MARK))
    thought = frames.event(reply.chunk({"reasoning_content": _MARK})).split(json.dumps(_MARK))
    for k, token in enumerate(reply.tokens):
        due = reply.due(k)
        if pieces and not burst and due > time.monotonic():
            # Send what is due now, then wait for this token's time.
            yield "".join(pieces).encode()
            pieces.clear()
        if not burst:
            await sleep_until(due)
        text = _TOKEN_JSON.get(token) or json.dumps(token, ensure_ascii=False)  # raw UTF-8
        pieces.append(head + text + tail if k >= reply.thinking else thought[0] + text + thought[1])
        if k == n // 2 and "non-json-chunk" in quirks:
            pieces.append(frames.data("this is not json"))
        if k == n // 2 and "error-in-stream" in quirks:
            err = error_body("the model failed mid-stream", "server_error", "internal_error")
            pieces.append(frames.event(err))
            pieces.append(frames.data("[DONE]"))
            yield "".join(pieces).encode()
            return
    if burst:
        await sleep_until(reply.done_at)
    last: dict[str, Any] | str | None = {} if reply.chat else ""
    if null:
        last = reply.content(None)
    pieces.append(frames.event(reply.chunk(last, reply.finish)))
    if include_usage and "no-usage" not in quirks:
        final = reply.chunk(None)
        final["choices"] = []
        final["usage"] = reply.usage()
        pieces.append(frames.event(final))
    if "no-done" not in quirks:
        pieces.append(frames.data("[DONE]"))
    yield "".join(pieces).encode()
