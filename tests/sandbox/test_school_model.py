"""The mock school model, driven by the official `openai` client, in this process.

The app is reached through Starlette's TestClient (an httpx.Client: no socket) for
what it answers, and through tests/fakes/asgi_stream.py (the app in the test's own event
loop, streamed) for when each chunk arrives and for a timeout.
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import time
from collections.abc import Iterator

import httpx
import openai
import pytest
from fakes.asgi_stream import StreamingASGITransport
from starlette.applications import Starlette
from starlette.testclient import TestClient

from lmreg_nb.sandbox.school_model import (
    QUIRKS,
    MockModelConfig,
    create_app,
    parse_quirks,
    reply_tokens,
)

KEY = "sk-mock-0123456789"
TOKENS = 12
MESSAGES = [{"role": "user", "content": "Say something"}]


BASE = "http://127.0.0.1:8766"  # never dialled: the transports call the app


@pytest.fixture(scope="module")
def app() -> Starlette:
    """The app whose timing is measured (the timing and timeout tests)."""
    return create_app(MockModelConfig(api_key=KEY, ttft_ms=120, itl_ms=15, tokens=TOKENS))


@pytest.fixture(scope="module")
def quick_app() -> Starlette:
    """The same app with 1 ms waits, for the tests of what it answers (not when)."""
    return create_app(MockModelConfig(api_key=KEY, ttft_ms=1, itl_ms=1, tokens=TOKENS))


@pytest.fixture()
def http(quick_app: Starlette) -> Iterator[TestClient]:
    """An httpx.Client into the quick app (each answer read whole)."""
    with TestClient(quick_app, base_url=BASE) as c:
        yield c


def _openai(http: TestClient, key: str = KEY) -> openai.OpenAI:
    return openai.OpenAI(base_url=BASE + "/v1", api_key=key, max_retries=0, http_client=http)


@pytest.fixture()
def client(http: TestClient) -> Iterator[openai.OpenAI]:
    with _openai(http) as c:
        yield c


def test_chat_completion(client: openai.OpenAI) -> None:
    reply = client.chat.completions.create(model="school-llm", messages=MESSAGES)
    assert reply.object == "chat.completion"
    assert reply.model == "school-llm"
    assert reply.choices[0].message.role == "assistant"
    assert reply.choices[0].message.content == "".join(reply_tokens(TOKENS))
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage is not None and reply.usage.completion_tokens == TOKENS


def test_streamed_chat_with_usage(client: openai.OpenAI) -> None:
    chunks = list(
        client.chat.completions.create(
            model="school-llm",
            messages=MESSAGES,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    pieces = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert pieces == reply_tokens(TOKENS)  # one token per chunk
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == TOKENS
    assert chunks[-2].choices[0].finish_reason == "stop"


def test_max_tokens_caps_the_reply(client: openai.OpenAI) -> None:
    reply = client.chat.completions.create(model="m", messages=MESSAGES, max_tokens=3)
    assert reply.choices[0].message.content == "".join(reply_tokens(3))
    assert reply.choices[0].finish_reason == "length"


def test_completion(client: openai.OpenAI) -> None:
    reply = client.completions.create(model="school-llm", prompt="Once upon", temperature=0.2)
    assert reply.object == "text_completion"
    assert reply.choices[0].text == "".join(reply_tokens(TOKENS))
    assert reply.usage is not None and reply.usage.prompt_tokens == 2


def test_streamed_completion(client: openai.OpenAI) -> None:
    stream = client.completions.create(model="m", prompt="Once", stream=True)
    assert "".join(c.choices[0].text for c in stream if c.choices) == "".join(reply_tokens(TOKENS))


def test_wrong_key_is_rejected(http: TestClient) -> None:
    with (
        _openai(http, key="wrong") as c,
        pytest.raises(openai.AuthenticationError) as info,
    ):
        c.chat.completions.create(model="m", messages=MESSAGES)
    body = info.value.response.json()
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["code"] == "invalid_api_key"


def test_bad_body_is_a_json_400(http: TestClient) -> None:
    reply = http.post(
        "/v1/chat/completions",
        headers={"Authorization": f"Bearer {KEY}"},
        content=b"{not json",
    )
    assert reply.status_code == 400
    assert reply.json()["error"]["type"] == "invalid_request_error"


def test_sse_framing_is_openai_like(http: TestClient) -> None:
    reply = http.post(
        "/v1/chat/completions",
        headers={"Authorization": f"Bearer {KEY}"},
        json={"model": "m", "messages": MESSAGES, "stream": True, "max_tokens": 2},
    )
    assert reply.headers["content-type"].startswith("text/event-stream")
    events = reply.text.split("\n\n")
    assert events[-1] == "" and events[-2] == "data: [DONE]"
    assert all(e.startswith("data: {") for e in events[:-2])


@pytest.mark.parametrize(
    ("quirk", "expect"),
    [
        ("no-space", lambda r: b"data:{" in r.content and b"data: " not in r.content),
        ("crlf", lambda r: r.content.endswith(b"data: [DONE]\r\n\r\n")),
        ("cr", lambda r: r.content.endswith(b"data: [DONE]\r\r") and b"\n" not in r.content),
        ("keepalive", lambda r: r.content.startswith(b": keep-alive\n\n")),
        ("null-content", lambda r: b'"content":null' in r.content),
        ("no-done", lambda r: b"[DONE]" not in r.content),
        ("non-json-chunk", lambda r: b"data: this is not json\n\n" in r.content),
        ("error-in-stream", lambda r: b'data: {"error":' in r.content),
        ("no-stream", lambda r: r.headers["content-type"] == "application/json"),
        ("wrong-content-type", lambda r: r.headers["content-type"].startswith("text/plain")),
        ("status-500", lambda r: r.status_code == 500 and "error" in r.json()),
        ("status-429", lambda r: r.status_code == 429 and r.headers["retry-after"] == "1"),
        ("any-key", lambda r: r.status_code == 200),
    ],
)
def test_quirk_by_path_prefix(http: TestClient, quirk: str, expect: object) -> None:
    key = "anything" if quirk == "any-key" else KEY
    reply = http.post(
        f"/quirks/{quirk}/v1/chat/completions",
        headers={"Authorization": f"Bearer {key}"},
        json={"model": "m", "messages": MESSAGES, "stream": True, "max_tokens": 4},
    )
    assert expect(reply)  # type: ignore[operator]


@pytest.mark.parametrize(
    ("quirk", "media"), [("html-errors", "text/html"), ("text-errors", "text/plain")]
)
def test_error_page_quirks(http: TestClient, quirk: str, media: str) -> None:
    reply = http.post(
        f"/quirks/{quirk}/v1/chat/completions",
        headers={"Authorization": "Bearer wrong"},
        json={"model": "m", "messages": MESSAGES},
    )
    assert reply.status_code == 401
    assert reply.headers["content-type"].startswith(media)


def test_slow_quirk_hangs_past_the_timeout(app: Starlette) -> None:
    async def post() -> httpx.Response:
        transport = StreamingASGITransport(app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as http:
            return await http.post(
                "/quirks/slow/v1/chat/completions",
                headers={"Authorization": f"Bearer {KEY}"},
                json={"model": "m", "messages": MESSAGES},
                timeout=0.2,
            )

    with pytest.raises(httpx.ReadTimeout):
        asyncio.run(post())


def test_unknown_quirks_are_refused(http: TestClient) -> None:
    reply = http.post("/quirks/nope/v1/chat/completions", json={})
    assert reply.status_code == 404 and "nope" in reply.json()["error"]["message"]
    with pytest.raises(ValueError, match="nope"):
        parse_quirks(["crlf,nope"])
    with pytest.raises(ValueError, match="nope"):
        MockModelConfig(api_key="k", quirks=frozenset({"nope"}))
    assert parse_quirks(["crlf", "burst, keepalive"]) == {"crlf", "burst", "keepalive"}
    assert parse_quirks(["crlf"]) <= QUIRKS


def _arrivals(app: Starlette, quirks: str = "") -> tuple[float, list[float]]:
    """Seconds from sending to each content chunk, read with a plain line reader."""
    prefix = f"/quirks/{quirks}" if quirks else ""

    async def read() -> list[float]:
        times: list[float] = []
        transport = StreamingASGITransport(app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE, timeout=10) as http:
            start = time.perf_counter()
            async with http.stream(
                "POST",
                f"{prefix}/v1/chat/completions",
                headers={"Authorization": f"Bearer {KEY}"},
                json={"model": "m", "messages": MESSAGES, "stream": True},
            ) as reply:
                async for line in reply.aiter_lines():
                    if '"content":"' in line and '"content":""' not in line:
                        times.append(time.perf_counter() - start)
        return times

    times = asyncio.run(read())
    return times[0], [b - a for a, b in itertools.pairwise(times)]


def test_timing_follows_the_knobs(app: Starlette) -> None:
    ttft, gaps = _arrivals(app)
    assert len(gaps) == TOKENS - 1
    assert 0.110 <= ttft <= 0.200  # ttft_ms=120, generous
    assert 0.010 <= statistics.median(gaps) <= 0.022  # itl_ms=15


def test_burst_sends_everything_at_the_end(app: Starlette) -> None:
    ttft, gaps = _arrivals(app, "burst")
    # The last token is due at 120 + 11 * 15 = 285 ms; everything arrives then.
    assert ttft >= 0.270
    assert max(gaps) < 0.005
