"""llama.cpp's own server (`llama-server`), replayed without it: the checks judge what it sends.

tests/data/llamacpp/ holds its bytes (llama.cpp b1 as vendored in llama-cpp-python
0.3.36, the tiny GGUF of the peer lane): ``timings`` on the usage chunk (its own
prompt and decode times), ``content: null`` in the role chunk, and its JSON errors.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from lmreg_nb.probe import Target
from lmreg_nb.probe.checks.conformance import CheckResult
from lmreg_nb.probe.checks.suite import run_checks
from lmreg_nb.probe.loop_lag import LoopLag
from lmreg_nb.probe.text.checks import worded
from lmreg_nb.probe.wire.server_metrics import llamacpp_figures

pytestmark = pytest.mark.timeout(60)

DATA = Path(__file__).resolve().parents[1] / "data" / "llamacpp"
KEY = "sk-llamaserver-0123456789"
TARGET = Target("http://127.0.0.1:9/v1/chat/completions", KEY, "tiny-llama", timeout=5)
JSON = {"content-type": "application/json; charset=utf-8"}


def _data(name: str) -> bytes:
    return (DATA / name).read_bytes()


class _Late(httpx.AsyncByteStream):
    """The whole stream in one read, 50 ms after the request: a fast server (64 tokens in
    77 ms by its own timings) read by a client a little late on a busy machine."""

    def __init__(self, body: bytes) -> None:
        self.body = body

    async def __aiter__(self):  # type: ignore[no-untyped-def]
        await asyncio.sleep(0.05)
        yield self.body


def _handle(request: httpx.Request) -> httpx.Response:
    if request.headers.get("authorization") != f"Bearer {KEY}":
        return httpx.Response(401, content=_data("wrong_key.json"), headers=JSON)
    if request.method == "GET":
        return httpx.Response(200, json={"object": "list", "data": [{"id": "tiny-llama"}]})
    body = json.loads(request.content)
    if body.get("stream"):
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              stream=_Late(_data("stream_zh.sse")))  # fmt: skip
    return httpx.Response(200, content=_data("whole_zh.json"), headers=JSON)


def _rows() -> dict[str, CheckResult]:
    async def go() -> list[CheckResult]:
        async with LoopLag() as lag, httpx.AsyncClient(transport=httpx.MockTransport(_handle)) as c:
            found = await run_checks(c, TARGET, context_need=1000, lag=lag)
            return [worded(x) for x in found[0].checks]

    return {c.name: c for c in asyncio.run(go())}


def test_a_reply_made_in_77_ms_in_one_lump_is_no_buffering_proxy() -> None:
    # Seen on llama-server: "all 49 chunks arrived within 1.0 ms, 54 ms after the request
    # (twice): something buffers the stream ... nginx: proxy_buffering off". Nothing did.
    row = _rows()["stream-not-buffered"]
    assert row.passed is None, row.detail  # could not tell: not judged, not blamed
    assert "77 ms" in row.detail and "proxy_buffering" not in row.detail


def test_llamacpp_timings_are_read_as_the_servers_own_figures() -> None:
    from lmreg_nb.probe.wire.reply import Reply

    reply = Reply()
    for line in _data("stream_zh.sse").decode().splitlines():
        if line.startswith("data: "):
            reply.take_data(line[6:], 0.0)
    assert reply.timings is not None and reply.timings["predicted_ms"] == pytest.approx(76.743)
    figures = llamacpp_figures([reply])
    assert figures is not None and figures.source == "llamacpp-timings"
    assert figures.ttft_ms["p50"] == pytest.approx(22.2) and figures.prefix_cache_hit_share == 0.0
    hostile = Reply()
    hostile.take_chunk({"choices": [], "timings": {"prompt_ms": "NaN", "predicted_ms": -1}}, 0.0)
    assert hostile.timings is None  # not numbers a server may send: dropped
