"""LiteLLM's proxy in front of llama-server, replayed without it (issue 39, item 8).

tests/data/litellm/ holds LiteLLM 1.108's bytes (`litellm --config` with a master key and
no database, routing to llama-server): a made-up key gets HTTP 400 ``"No connected
db."`` (refused, but not as an authentication error), the stream ends with a usage
chunk whose ``choices`` holds an empty delta, and a too-long prompt gets LiteLLM's own
400 quoting llama.cpp's.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import httpx
import pytest

from lmreg_nb.probe import Target
from lmreg_nb.probe.checks.conformance import CheckResult
from lmreg_nb.probe.checks.suite import run_checks

pytestmark = pytest.mark.timeout(60)

DATA = Path(__file__).resolve().parents[1] / "data" / "litellm"
KEY = "sk-litellm-0123456789"
TARGET = Target("http://127.0.0.1:9/v1/chat/completions", KEY, "tiny-llama", timeout=5)
JSON = {"content-type": "application/json"}
SSE = {"content-type": "text/event-stream; charset=utf-8"}


def _data(name: str) -> bytes:
    return (DATA / name).read_bytes()


def _handle(request: httpx.Request) -> httpx.Response:
    if request.headers.get("authorization") != f"Bearer {KEY}":
        return httpx.Response(400, content=_data("wrong_key.json"), headers=JSON)
    if request.method == "GET":
        return httpx.Response(200, json={"object": "list", "data": [{"id": "tiny-llama"}]})
    body = json.loads(request.content)
    if "messages" not in body:  # /v1/completions: LiteLLM routes it to llama.cpp too
        return httpx.Response(200, json={"id": "c", "object": "text_completion",
                                         "choices": [{"index": 0, "text": "Hello"}]})  # fmt: skip
    if len(body["messages"][-1]["content"].split()) > 1800:
        return httpx.Response(400, content=_data("too_long.json"), headers=JSON)
    if body.get("stream"):
        return httpx.Response(200, content=_data("stream_zh.sse"), headers=SSE)
    return httpx.Response(200, content=_data("whole_zh.json"), headers=JSON)


def _rows() -> dict[str, CheckResult]:
    async def go() -> list[CheckResult]:
        async with httpx.AsyncClient(transport=httpx.MockTransport(_handle)) as client:
            return list((await run_checks(client, TARGET, context_need=1000))[0].checks)

    return {c.name: c for c in asyncio.run(go())}


def test_a_made_up_key_refused_with_400_is_a_warning_quoting_litellm(lang: str) -> None:
    # Before: an error ("not 401 or 403"), so `check` exited 1 for a proxy that refuses
    # every key but its own.
    row = _rows()["wrong-key-rejected"]
    assert not row.passed and row.severity == "warning", row.detail
    assert "No connected db." in row.detail and "401" in row.detail
    words = row.detail.replace("No connected db.", "")
    assert bool(re.search(r"[\u4e00-\u9fff]", words)) is (lang == "zh-CN")


def test_litellms_stream_and_its_usage_chunk_pass() -> None:
    rows = _rows()
    failed = {n for n, c in rows.items() if c.severity == "error" and not c.passed}
    # (context-window: this replay answers every prompt with the same captured usage)
    assert failed <= {"url-https", "url-public-host", "context-window"}, failed
    assert "64 output tokens (from usage)" in rows["stream-content"].detail
    assert rows["stream-utf8"].passed and rows["stream-done"].passed
