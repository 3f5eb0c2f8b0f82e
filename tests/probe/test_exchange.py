"""The request engine on in-process transports: cases the mock model does not serve."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable

import httpx

from lmreg_nb.probe.checks.conformance import CheckResult
from lmreg_nb.probe.checks.suite import run_checks
from lmreg_nb.probe.target import Target
from lmreg_nb.probe.text.checks import worded
from lmreg_nb.probe.wire.exchange import (
    MAX_BODY_BYTES,
    Exchange,
    chat_body,
    completions_url,
    send,
)

URL = "https://llm.school.example/v1/chat/completions"
TARGET = Target(URL, "sk-test-key-123456", "m", timeout=0.05)


def _run(handler: Callable[[httpx.Request], httpx.Response]) -> Exchange:
    async def go() -> Exchange:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            return await send(client, TARGET, chat_body("m", stream=True), stream=True)

    return asyncio.run(go())


class _Trickle(httpx.AsyncByteStream):
    """A stream that sends keep-alive comments forever."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            await asyncio.sleep(0.01)
            yield b": keep-alive\n\n"


def test_a_reply_that_never_ends_is_bounded() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=_Trickle())

    ex = _run(handler)
    assert ex.failure == "timeout"
    assert "stalled after" in ex.failure_detail or "did not finish within" in ex.failure_detail


def test_an_oversized_stream_is_cut() -> None:
    chunk = b'data: {"choices":[{"delta":{"content":"' + b"x" * 60_000 + b'"}}]}\n\n'

    def handler(request: httpx.Request) -> httpx.Response:
        body = chunk * (MAX_BODY_BYTES // len(chunk) + 5)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    ex = _run(handler)
    assert ex.truncated
    assert len(ex.text) <= 256 * 1024


def test_a_redirect_is_explained() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(301, headers={"location": "https://new.example/v1/chat/completions"})

    async def go() -> list[CheckResult]:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            return [worded(c) for c in (await run_checks(client, TARGET))[0].checks]

    rows = {c.name: c for c in asyncio.run(go())}
    assert not rows["chat-answers"].passed
    assert "redirects to https://new.example/v1/chat/completions" in rows["chat-answers"].detail


def test_the_request_carries_the_key_and_the_spec_fields() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"choices": [{"message": {"content": "hi"}}]})

    _run(handler)
    body = json.loads(seen[0].content)
    assert seen[0].headers["authorization"] == "Bearer sk-test-key-123456"
    assert seen[0].headers["content-type"] == "application/json"
    assert body["model"] == "m" and body["stream"] is True
    assert body["messages"][0]["role"] == "user" and isinstance(body["temperature"], float)
    assert "sk-test-key" not in repr(TARGET)


def test_completions_url() -> None:
    assert completions_url(URL) == "https://llm.school.example/v1/completions"
    assert completions_url(URL + "/?x=1") == "https://llm.school.example/v1/completions?x=1"
    assert completions_url("https://h/api/generate") is None
