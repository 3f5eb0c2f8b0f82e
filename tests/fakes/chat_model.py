"""A school's chat endpoint served through ``httpx.MockTransport`` (no socket, no thread).

vLLM's routes: ``POST /v1/chat/completions`` (the key checked, streamed or not), ``GET
/v1/models`` (405 to any other method), 404 elsewhere; port 9 refuses the connection, as
a model that is down. :func:`use_in_checks` points the checks' client at it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import httpx
import pytest

__all__ = ["MODEL", "chunk", "reply", "school_model", "use_in_checks"]

#: Where the in-process school model answers (never dialled: the transport answers).
MODEL = "http://127.0.0.1:8766"

Handler = Callable[[httpx.Request], httpx.Response]


def reply(content: str = "ok", completion_tokens: int = 1) -> dict[str, Any]:
    """A ``chat.completion`` with ``content``."""
    return {
        "id": "c", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": completion_tokens,
                  "total_tokens": 3 + completion_tokens},
    }  # fmt: skip


def chunk(content: str | None, finish: str | None = None) -> bytes:
    """One SSE event of a ``chat.completion.chunk`` (``content`` None: the finish chunk)."""
    delta = {} if content is None else {"content": content}
    body = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip
    return b"data: " + json.dumps(body, ensure_ascii=False).encode() + b"\n\n"


class _Words(httpx.AsyncByteStream):
    def __init__(self, words: Sequence[str], delay_s: float) -> None:
        self.words, self.delay_s = words, delay_s

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for word in self.words:
            await asyncio.sleep(self.delay_s)
            yield chunk(word)
        yield chunk(None, "stop") + b"data: [DONE]\n\n"


def school_model(key: str, words: Sequence[str] = ("ok",), *, delay_s: float = 0.005) -> Handler:
    """The endpoint's handler: streams ``words`` ``delay_s`` apart, or answers them whole."""
    whole = reply("".join(words), completion_tokens=len(words))

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.port == 9:
            raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
        path = request.url.path
        if path == "/v1/models":
            if request.method != "GET":
                return httpx.Response(405, json={"detail": "Method Not Allowed"})
            return httpx.Response(200, json={"object": "list", "data": [{"id": "m"}]})
        if path != "/v1/chat/completions":
            return httpx.Response(404, json={"detail": "Not Found"})
        if request.headers.get("authorization") != f"Bearer {key}":
            return httpx.Response(401, json={"error": {"message": "bad key"}})
        if json.loads(request.content).get("stream"):
            stream = _Words(words, delay_s)
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=stream)
        return httpx.Response(200, json=whole)

    return handle


def use_in_checks(monkeypatch: pytest.MonkeyPatch, handler: Handler) -> None:
    """The checks' client (``probe.report.make_client``) talks to ``handler``."""

    def client(timeout: float) -> httpx.AsyncClient:
        return httpx.AsyncClient(timeout=timeout, transport=httpx.MockTransport(handler))

    monkeypatch.setattr("lmreg_nb.probe.report.make_client", client)
