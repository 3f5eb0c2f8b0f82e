"""The mock school model's quirks for the function checks, seen by the official `openai` client.

no-system-role, a context window refusing (vLLM) or cutting silently
(truncate-prompt, Ollama), think-in-content, reasoning-content, and interrupt
(llama.cpp's interrupt_requests: any new request cuts the running stream). In this
process: Starlette's TestClient for the answers, tests/fakes/asgi_stream.py for a request
sent while a stream runs.
"""

from __future__ import annotations

import asyncio

import httpx
import openai
import pytest
from fakes.asgi_stream import StreamingASGITransport
from starlette.applications import Starlette
from starlette.testclient import TestClient

from lmreg_nb.sandbox.school_model import THINKING_TOKENS, MockModelConfig, create_app
from lmreg_nb.sandbox.school_model.serve import config_env

KEY = "sk-mock-quirks-0123456789"
WINDOW = 100
SYSTEM = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]


BASE = "http://127.0.0.1:8766"  # never dialled: the transports call the app


@pytest.fixture(scope="module")
def app() -> Starlette:
    config = MockModelConfig(api_key=KEY, ttft_ms=5, itl_ms=5, tokens=6, context_window=WINDOW)
    return create_app(config)


def _client(app: Starlette, quirks: str = "") -> openai.OpenAI:
    """An openai client into the app (its TestClient, closed with it)."""
    prefix = f"/quirks/{quirks}" if quirks else ""
    http = TestClient(app, base_url=BASE)
    return openai.OpenAI(
        base_url=f"{BASE}{prefix}/v1", api_key=KEY, max_retries=0, http_client=http
    )


def test_no_system_role_refuses_a_system_message_only(app: Starlette) -> None:
    with _client(app, "no-system-role") as client:
        with pytest.raises(openai.BadRequestError, match="System role not supported"):
            client.chat.completions.create(model="m", messages=SYSTEM)  # type: ignore[arg-type]
        reply = client.chat.completions.create(model="m", messages=SYSTEM[1:])  # type: ignore[arg-type]
    assert reply.choices[0].message.content


def test_a_long_prompt_is_refused_as_vllm_does(app: Starlette) -> None:
    prompt = "word " * (WINDOW + 1)
    with _client(app) as client, pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": prompt}], max_tokens=1
        )
    assert f"maximum context length is {WINDOW} tokens" in str(caught.value)
    assert f"you requested {WINDOW + 2} tokens" in str(caught.value)
    with _client(app) as client:  # prompt + max_tokens within the window: answered
        fits = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "word " * 90}], max_tokens=10
        )
    assert fits.usage is not None and fits.usage.prompt_tokens == 90


def test_truncate_prompt_answers_with_the_count_capped(app: Starlette) -> None:
    with _client(app, "truncate-prompt") as client:
        reply = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "word " * 500}], max_tokens=1
        )
    assert reply.usage is not None and reply.usage.prompt_tokens == WINDOW


def test_think_in_content_opens_the_content_with_a_think_block(app: Starlette) -> None:
    with _client(app, "think-in-content") as client:
        reply = client.chat.completions.create(model="m", messages=SYSTEM[1:])  # type: ignore[arg-type]
    content = reply.choices[0].message.content or ""
    assert content.startswith("<think>") and "</think>" in content
    assert reply.usage is not None and reply.usage.completion_tokens == 6 + THINKING_TOKENS + 2


def test_reasoning_content_comes_first_and_apart(app: Starlette) -> None:
    with _client(app, "reasoning-content") as client:
        whole = client.chat.completions.create(model="m", messages=SYSTEM[1:])  # type: ignore[arg-type]
        chunks = list(
            client.chat.completions.create(model="m", messages=SYSTEM[1:], stream=True)  # type: ignore[arg-type]
        )
    message = whole.choices[0].message
    assert message.content and "<think>" not in message.content
    assert (message.model_extra or {}).get("reasoning_content", "").startswith("Let me think")
    kinds = []
    for chunk in chunks:
        delta = chunk.choices[0].delta if chunk.choices else None
        if delta is not None and (delta.model_extra or {}).get("reasoning_content"):
            kinds.append("thinking")
        elif delta is not None and delta.content:
            kinds.append("answer")
    assert kinds == ["thinking"] * THINKING_TOKENS + ["answer"] * 6


def test_reasoning_counts_against_max_tokens(app: Starlette) -> None:
    with _client(app, "reasoning-content") as client:
        reply = client.chat.completions.create(model="m", messages=SYSTEM[1:], max_tokens=4)  # type: ignore[arg-type]
    assert reply.choices[0].finish_reason == "length" and reply.choices[0].message.content == ""


def test_interrupt_a_plain_request_cuts_the_running_stream() -> None:
    config = MockModelConfig(api_key=KEY, ttft_ms=5, itl_ms=40, tokens=20)
    url = "/quirks/interrupt/v1/chat/completions"
    headers = {"Authorization": f"Bearer {KEY}"}
    body = {"model": "m", "messages": SYSTEM[1:], "stream": True}

    async def run() -> list[str]:
        lines: list[str] = []
        transport = StreamingASGITransport(create_app(config))
        async with httpx.AsyncClient(transport=transport, base_url=BASE, timeout=10) as http:
            poster: asyncio.Task[httpx.Response] | None = None
            async with http.stream("POST", url, json=body, headers=headers) as reply:
                async for line in reply.aiter_lines():
                    lines.append(line)
                    running = sum('"content"' in x for x in lines) >= 3  # the stream is running
                    if running and poster is None:
                        # One token: its own reply is quick; its arrival is what cuts.
                        plain = {"model": "m", "messages": SYSTEM[1:], "max_tokens": 1}
                        poster = asyncio.create_task(http.post(url, json=plain, headers=headers))
            assert poster is not None
            await asyncio.wait_for(poster, 10)
        return lines

    lines = asyncio.run(run())
    data = [x for x in lines if x.startswith("data: ")]
    assert data[-1] == "data: [DONE]"
    assert '"finish_reason":"stop"' not in "".join(data)  # cut: no finish_reason
    assert len(data) < 20


def test_the_context_window_goes_through_the_environment() -> None:
    env = config_env(MockModelConfig(api_key=KEY, context_window=4096))
    assert env["LMREG_MOCK_CONTEXT_WINDOW"] == "4096"
    with pytest.raises(ValueError, match="context_window"):
        MockModelConfig(api_key=KEY, context_window=-1)
