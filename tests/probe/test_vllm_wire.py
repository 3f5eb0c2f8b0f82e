"""vLLM's wire facts, replayed without vLLM (issue 39): the checks judge what it really sends.

The bytes in tests/data/vllm/ are vLLM 0.32.0's own (`vllm serve` on CPU, a tiny
Llama with random weights, `--max-model-len 4096`, a Bearer key), captured with
curl: a role-only first chunk (``{"role": "assistant", "content": ""}``), an
empty-content chunk where it holds back the bytes of a partial character, a
usage chunk with empty ``choices`` before ``[DONE]``, U+FFFD the model wrote
itself (the streamed and the unstreamed reply of the same seeded request carry
the same ones), a JSON 400 for a too-long prompt also when streamed, 401
``{"error":"Unauthorized"}`` and 404 ``{"detail":"Not Found"}``. They are served
in process (httpx.MockTransport), or over a socketpair in the client's own event loop for
the lean client (tests/fakes/hosts.py).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from fakes import hosts

from lmreg_nb.probe import Target, check_endpoint, format_report
from lmreg_nb.probe.checks.conformance import CheckResult
from lmreg_nb.probe.checks.context_window import judge_context, probe_context
from lmreg_nb.probe.checks.golive import CHINESE_PROMPT
from lmreg_nb.probe.checks.suite import run_checks
from lmreg_nb.probe.load.warmup import first_token
from lmreg_nb.probe.text.checks import worded
from lmreg_nb.probe.wire.exchange import chat_body, send
from lmreg_nb.probe.wire.server_metrics import figures_between, parse_metrics
from lmreg_nb.probe.wire.shapes import error_message
from lmreg_nb.probe.wire.stream_client import ChatConnection

pytestmark = pytest.mark.timeout(60)

DATA = Path(__file__).resolve().parents[1] / "data" / "vllm"
KEY = "sk-vllm-0123456789"
URL = "http://127.0.0.1:9/v1/chat/completions"
TARGET = Target(URL, KEY, "tiny-llama", timeout=5)
SSE = {"content-type": "text/event-stream; charset=utf-8"}
WINDOW = 4096  # --max-model-len


def _data(name: str) -> bytes:
    return (DATA / name).read_bytes()


def _vllm(whole_zh: str = "whole_fffd.json") -> Callable[[httpx.Request], httpx.Response]:
    """vLLM's answers, by what was asked (``whole_zh``: the unstreamed Chinese reply)."""

    def handle(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if request.headers.get("authorization") != f"Bearer {KEY}":
            return httpx.Response(401, content=_data("wrong_key.json"),
                                  headers={"content-type": "application/json"})  # fmt: skip
        if request.method == "GET" and path == "/v1/models":
            return httpx.Response(200, content=_data("models.json"))
        if request.method != "POST" or path not in ("/v1/chat/completions", "/v1/completions"):
            return httpx.Response(404, content=_data("unknown_path.json"),
                                  headers={"content-type": "application/json"})  # fmt: skip
        body = json.loads(request.content)
        if path == "/v1/completions":
            return httpx.Response(200, json={"id": "c", "object": "text_completion",
                                             "choices": [{"index": 0, "text": "ex"}]})  # fmt: skip
        prompt = body["messages"][-1]["content"]
        if len(prompt.split()) + body.get("max_tokens", 0) > WINDOW:  # a word is a token here
            return httpx.Response(400, content=_data("too_long.json"),
                                  headers={"content-type": "application/json"})  # fmt: skip
        chinese = prompt == CHINESE_PROMPT
        if body.get("stream"):
            if body.get("max_tokens") == 1:
                return httpx.Response(200, content=_data("stream_one_empty.sse"), headers=SSE)
            name = "stream_fffd.sse" if chinese else "stream_clean.sse"
            return httpx.Response(200, content=_data(name), headers=SSE)
        if len(prompt.split()) > 8:  # the context window's prompts: usage as vLLM counts
            return httpx.Response(200, json={
                "id": "c", "object": "chat.completion",
                "choices": [{"index": 0, "finish_reason": "length",
                             "message": {"role": "assistant", "content": "ex"}}],
                "usage": {"prompt_tokens": len(prompt.split()),
                          "completion_tokens": 1}})  # fmt: skip
        return httpx.Response(200, content=_data(whole_zh if chinese else "whole_clean.json"),
                              headers={"content-type": "application/json"})  # fmt: skip

    return handle


def _rows(handler: Callable[[httpx.Request], httpx.Response], target: Target = TARGET) -> dict:
    async def go() -> list[CheckResult]:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            found = await run_checks(client, target, context_need=3500)
            return [worded(c) for c in found[0].checks]

    return {c.name: c for c in asyncio.run(go())}


def test_u_fffd_the_model_wrote_is_a_warning_not_a_failed_stream() -> None:
    # The real reply: its stream and the same request unstreamed hold the same U+FFFD.
    rows = _rows(_vllm("whole_fffd.json"))
    utf8 = rows["stream-utf8"]
    assert utf8.severity == "warning" and not utf8.passed, utf8.detail
    assert "the model itself writes U+FFFD" in utf8.detail
    failed = {n for n, c in rows.items() if c.severity == "error" and not c.passed}
    assert failed <= {"url-https", "url-public-host"}, failed  # vLLM passes the rest


def test_u_fffd_only_in_the_stream_is_the_servers_fault() -> None:
    rows = _rows(_vllm("whole_clean.json"))
    utf8 = rows["stream-utf8"]
    assert utf8.severity == "error" and not utf8.passed
    assert "sends pieces of characters" in utf8.detail


def test_the_utf8_request_is_seeded_and_greedy_so_it_can_be_asked_twice() -> None:
    bodies: list[dict] = []
    handler = _vllm()

    def spy(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            bodies.append(json.loads(request.content))
        return handler(request)

    _rows(spy)
    asked = [b for b in bodies if b.get("messages", [{}])[-1].get("content") == CHINESE_PROMPT]
    assert {b["stream"] for b in asked} == {True, False}, asked  # the stream, then its twin
    for b in asked:
        assert b["temperature"] == 0 and isinstance(b.get("seed"), int)
    keys = [{k: v for k, v in b.items() if k not in ("stream", "stream_options")} for b in asked]
    assert keys[0] == keys[1]  # the same request


def test_vllms_stream_framing_is_tolerated_and_its_usage_chunk_read() -> None:
    rows = _rows(_vllm())
    framing = rows["stream-framing"].detail
    assert "role-only first chunk" in framing and "usage chunk with empty choices" in framing
    assert rows["stream-usage"].passed
    assert "64 output tokens (from usage)" in rows["stream-content"].detail
    assert rows["stream-done"].passed and rows["stream-events-json"].passed


def test_an_empty_first_token_is_not_a_bad_stream() -> None:
    # max_tokens 1 whose token is the first byte of a character: vLLM sends content "".
    async def go() -> tuple:
        async with httpx.AsyncClient(transport=httpx.MockTransport(_vllm())) as client:
            body = chat_body("tiny-llama", CHINESE_PROMPT, stream=True, max_tokens=1)
            return await send(client, TARGET, body, stream=True)

    ex = asyncio.run(go())
    assert ex.ok, (ex.failure, ex.failure_detail)
    assert ex.silent_answer and ex.silent_token_at is not None
    assert ex.output_tokens == (1, "usage") and ex.finish == "length" and not ex.text


def test_the_lean_client_and_the_prefix_probe_take_an_empty_first_token() -> None:
    reply = _data("stream_one_empty.sse")

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        size = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        await reader.readexactly(size)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
                     b"connection: close\r\n\r\n" + reply)  # fmt: skip
        await writer.drain()
        writer.close()

    async def go() -> tuple:
        # Served in this loop over a socketpair (tests/fakes/hosts.py): HTTP/1.1 on a socket.
        port = hosts.serve(lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader(), serve))
        target = Target(f"http://127.0.0.1:{port}/v1/chat/completions", KEY, "m", timeout=5)
        body = json.dumps(chat_body("m", "hi", stream=True, max_tokens=1)).encode()
        try:
            conn = ChatConnection(target, body)
            ex = await conn.send()
            conn.close()
            timed = await first_token(ChatConnection(target, body), 5.0)
        finally:
            hosts.stop(port)
        return ex, timed

    ex, (answered, waited) = asyncio.run(go())
    assert ex.ok, (ex.failure, ex.failure_detail)  # before: "bad stream: no content"
    assert answered and waited is not None and waited >= 0  # the probe has its sample


def test_a_too_long_prompt_gets_a_json_400_also_when_streamed() -> None:
    async def go() -> tuple:
        async with httpx.AsyncClient(transport=httpx.MockTransport(_vllm())) as client:
            body = chat_body("tiny-llama", "the " * 5000, stream=True, max_tokens=4)
            ex = await send(client, TARGET, body, stream=True)
            found = await probe_context(client, TARGET, 8000, 30.0)
        return ex, worded(judge_context(found))

    ex, row = asyncio.run(go())
    assert (
        ex.status == 400
        and not ex.streamed
        and "maximum context length is 4096" in (ex.failure_detail)
    )
    assert not row.passed and "maximum context length is 4096" in row.detail
    assert "--max-model-len" in row.detail


def test_a_wrong_key_gets_vllms_401_and_an_unknown_path_its_404() -> None:
    assert error_message(_data("wrong_key.json")) == "Unauthorized"
    assert error_message(_data("unknown_path.json")) == "Not Found"
    refused = _rows(_vllm(), Target(URL, "sk-not-the-key-0000", "tiny-llama", timeout=5))
    assert not refused["key-accepted"].passed and "Unauthorized" in refused["key-accepted"].detail
    assert _rows(_vllm())["wrong-key-rejected"].passed  # a made-up key got the 401
    lost = _rows(_vllm(), Target(URL.replace("/v1/", "/v2/"), KEY, "tiny-llama", timeout=5))
    assert not lost["chat-answers"].passed
    assert "404" in lost["chat-answers"].detail and "Not Found" in lost["chat-answers"].detail


def test_vllms_own_first_token_times_and_prefix_counters_are_read() -> None:
    before = parse_metrics(_data("metrics_before.txt").decode())
    after = parse_metrics(_data("metrics_after.txt").decode())
    assert before is not None and after is not None
    figures = figures_between(before, after)
    assert figures is not None and figures.source == "vllm-metrics" and figures.bucketed
    assert figures.requests == round(after.ttft_count - before.ttft_count) > 0
    assert figures.ttft_ms["p50"] is not None and figures.ttft_ms["p50"] <= 60.0  # le 0.06 s
    assert figures.prefix_cache_hit_share == 0.0  # this capture: no shared prefix
    assert figures_between(after, before) is None  # counters going back: a restart
    assert parse_metrics("<html>not metrics</html>") is None
    assert parse_metrics("vllm:time_to_first_token_seconds_count nan\n") is None


def _serving_metrics(
    monkeypatch: pytest.MonkeyPatch, stall_s: float = 0.0, then_s: float | None = None
) -> list[str]:
    """check_endpoint's client answers as vLLM, /metrics as captured before and after a run;
    ``stall_s``: the client's loop is held that long while the first streamed reply comes,
    ``then_s`` (``stall_s`` unless given) while each later one comes."""
    readings = [_data("metrics_before.txt"), _data("metrics_after.txt")]
    handler = _vllm()
    asked: list[str] = []
    stalls = [stall_s]

    def handle(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        if request.url.path == "/metrics":
            text = {"content-type": "text/plain; version=0.0.4"}
            return httpx.Response(200, content=readings.pop(0) if readings else b"", headers=text)
        if stall_s and request.method == "POST" and json.loads(request.content).get("stream"):
            # The client's own loop stalls (a model server on its cores).
            time.sleep(stalls.pop() if stalls else stall_s if then_s is None else then_s)
        return handler(request)

    def client(timeout: float) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(handle), timeout=timeout)

    monkeypatch.setattr("lmreg_nb.probe.report.make_client", client)
    return asked


def test_check_shows_vllms_own_figures_beside_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _serving_metrics(monkeypatch)
    report = check_endpoint(TARGET, context_need=3500)
    assert asked[0] == "/metrics" and asked[-1] == "/metrics"  # before and after the run
    data = report.to_json()
    assert data["server"]["source"] == "vllm-metrics" and data["server"]["bucketed"] is True
    assert data["server"]["ttft_ms"]["p50"] == 10.0  # le="0.01": at most 10 ms
    assert set(data["client"]) == {"stalls", "worst_stall_ms", "stalled_share"}
    assert "server's own TTFT ms (vLLM /metrics, " in format_report(report)


def test_the_clients_stalls_are_in_the_json_and_said_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # One long stall, then a short one (over the 50 ms that count) in each later stream.
    _serving_metrics(monkeypatch, stall_s=0.3, then_s=0.1)
    report = check_endpoint(TARGET, context_need=3500)
    client = report.to_json()["client"]
    assert client["stalls"] >= 1 and client["worst_stall_ms"] >= 200, client
    text = format_report(report)
    assert text.count("Measured from a busy machine: this computer stalled") == 1, text
