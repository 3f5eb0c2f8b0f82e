"""The context prompt is at least the need as the server counts it, never under (issue 39, item 5).

Before: `--context-need 4096` passed vLLM with a 4096-token window, since the prompt
sized from two calibration points landed at 4089 tokens. A real tokenizer does not
count every filler word alike: the calibration's average is exact over whole cycles of
the filler, the long prompt ends in a partial cycle. The server here counts the first
words of the cycle as one token and the last ones as two, and refuses as vLLM does
(prompt + max_tokens over the window: HTTP 400), in process.
"""

from __future__ import annotations

import asyncio
import json

import httpx

from lmreg_nb.probe import Target
from lmreg_nb.probe.checks.context_window import _WORDS, context_row, probe_context

URL = "http://127.0.0.1:9/v1/chat/completions"
TARGET = Target(URL, "sk-floor-0123456789abcdef", "m", timeout=5)
TEMPLATE = 17  # the chat template's tokens around the message
DENSE = set(_WORDS[len(_WORDS) // 2 :])  # the cycle's second half: two tokens a word


def _count(text: str) -> int:
    return TEMPLATE + sum(2 if w in DENSE else 1 for w in text.split())


def _server(window: int, seen: list[int]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        prompt = _count(body["messages"][-1]["content"])
        seen.append(prompt)
        if prompt + body["max_tokens"] > window:
            return httpx.Response(400, json={
                "error": {"message": f"This model's maximum context length is {window} tokens. "
                          f"However, you requested {prompt + body['max_tokens']} tokens "
                          f"({prompt} in the messages, {body['max_tokens']} in the completion).",
                          "type": "BadRequestError", "param": None, "code": 400}})  # fmt: skip
        return httpx.Response(200, json={
            "id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "length",
                         "message": {"role": "assistant", "content": "ok"}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": 1,
                      "total_tokens": prompt + 1}})  # fmt: skip

    return httpx.MockTransport(handle)


def _probe(window: int, need: int) -> tuple[list[int], bool, str]:
    seen: list[int] = []

    async def go() -> tuple[bool, str]:
        async with httpx.AsyncClient(transport=_server(window, seen)) as client:
            row = context_row(await probe_context(client, TARGET, need, 30.0))
        return row.passed, row.detail

    passed, detail = asyncio.run(go())
    return seen, passed, detail


def test_a_window_of_exactly_the_need_fails() -> None:
    seen, passed, detail = _probe(window=4096, need=4096)
    assert not passed, detail
    assert max(seen) >= 4096, seen  # the prompt asked for reached the need


def test_the_prompt_judged_holds_at_least_the_need_and_passes_a_window_with_room() -> None:
    seen, passed, detail = _probe(window=8192, need=4096)
    assert passed, detail
    judged = seen[-1]
    assert 4096 <= judged <= 4096 * 1.05, seen  # never under, not far over
    assert str(judged) in detail
