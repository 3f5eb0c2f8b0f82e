"""The context-window check against llama.cpp's own server: slots split ``-c`` (issue 28).

The transport answers as llama-server 0.3.36's build did on the wire
(``system_fingerprint`` ``b1-0c1e570``; a refusal of type
``exceed_context_size_error`` naming the slot's ``n_ctx``; ``GET /props`` with
``total_slots`` and ``default_generation_settings.n_ctx``): a server started
with ``-c 8192 -np 4`` holds 2,048 tokens per request.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import httpx
import pytest

from lmreg_nb import i18n
from lmreg_nb.probe import Target
from lmreg_nb.probe.checks.context_window import judge_context, probe_context
from lmreg_nb.probe.text.checks import worded

URL = "http://llama.school.example/v1/chat/completions"
KEY = "sk-llamacpp-0123456789"


@pytest.fixture(autouse=True)
def english() -> Iterator[None]:
    i18n.set_language("en")
    yield
    i18n.set_language("en")


def _llama_server(
    per_slot: int, slots: int | None, *, fingerprint: str = "b1-0c1e570", trained: int = 131072
):
    gets: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            gets.append(request.url.path)
            if request.url.path == "/v1/models":
                meta = {"n_ctx": per_slot, "n_ctx_train": trained, "n_vocab": 2048}
                entry = {"id": "tiny-llama", "object": "model", "meta": meta}
                return httpx.Response(200, json={"object": "list", "data": [entry]})
            if request.url.path == "/props" and slots is not None:
                settings = {"n_ctx": per_slot, "n_predict": -1}
                return httpx.Response(
                    200, json={"default_generation_settings": settings, "total_slots": slots}
                )
            return httpx.Response(404, json={"error": {"code": 404, "message": "File Not Found"}})
        body = json.loads(request.content)
        words = sum(len(m["content"].split()) for m in body["messages"])
        tokens = words + 10  # one token per filler word, and the chat template's
        if tokens > per_slot:
            message = (
                f"request ({tokens} tokens) exceeds the available context size "
                f"({per_slot} tokens), try increasing it"
            )
            error = {"code": 400, "message": message, "type": "exceed_context_size_error"}
            error |= {"n_prompt_tokens": tokens, "n_ctx": per_slot}
            return httpx.Response(400, json={"error": error})
        reply = {
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hel"}}],
            "object": "chat.completion",
            "usage": {"prompt_tokens": tokens, "completion_tokens": 1, "total_tokens": tokens + 1},
        }
        if fingerprint:
            reply["system_fingerprint"] = fingerprint
        return httpx.Response(200, json=reply)

    return handle, gets


def _row(handler, need: int = 8000):
    async def run():
        transport = httpx.MockTransport(handler)
        async with httpx.AsyncClient(transport=transport) as client:
            return await probe_context(client, Target(URL, KEY, "tiny-llama"), need, 30)

    return worded(judge_context(asyncio.run(run())))


def test_a_refusal_names_the_slots_and_the_split() -> None:
    handler, gets = _llama_server(2048, 4)
    row = _row(handler)
    assert not row.passed and row.severity == "error"
    assert "exceeds the available context size (2048 tokens)" in row.detail  # its own words
    assert "4 parallel slots (-np 4), so each request gets 2048 tokens" in row.detail
    assert "raise -c to at least 32000 (4 x 8000)" in row.detail
    assert "--kv-unified" in row.detail and "vLLM" not in row.detail
    assert sorted(gets) == ["/props", "/v1/models"]


def test_a_model_trained_for_less_is_not_fixed_by_raising_c() -> None:
    # llama-server caps each slot at the model's n_ctx_train (a tiny model: 2048).
    handler, _gets = _llama_server(2048, 4, trained=2048)
    row = _row(handler)
    assert "the model itself takes at most 2048 tokens (n_ctx_train)" in row.detail
    assert "raise -c" not in row.detail


def test_without_props_the_refusal_still_tells_the_slot() -> None:
    handler, _gets = _llama_server(2048, None)
    row = _row(handler)
    assert "each request gets -c divided by -np tokens (2048 here)" in row.detail
    assert "number of slots x 8000" in row.detail


def test_a_passing_check_shows_the_slots() -> None:
    handler, _gets = _llama_server(16384, 4)
    row = _row(handler)
    assert row.passed
    assert "llama.cpp server with 4 parallel slots of 16384 tokens each" in row.detail


def test_another_server_gets_the_general_advice_and_no_props_request() -> None:
    handler, gets = _llama_server(2048, 4, fingerprint="")

    def plain(request: httpx.Request) -> httpx.Response:
        reply = handler(request)
        if reply.status_code == 400:  # vLLM's words, not llama.cpp's
            message = "This model's maximum context length is 2048 tokens."
            return httpx.Response(400, json={"error": {"message": message, "type": "BadRequest"}})
        return reply

    row = _row(plain)
    assert not row.passed and "vLLM: --max-model-len" in row.detail
    assert "slots" not in row.detail and gets == []


def test_the_split_is_advised_in_chinese() -> None:
    i18n.set_language("zh-CN")
    handler, _gets = _llama_server(2048, 4)
    row = _row(handler)
    assert "4 个并行槽位" in row.detail and "32000" in row.detail and "--kv-unified" in row.detail
