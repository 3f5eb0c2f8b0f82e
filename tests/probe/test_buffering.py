"""stream-not-buffered: a proxy that buffers is flagged, a passing stall is not.

In-process transport: the stream's timing is what is under test, and the
transport sets it exactly (the first streamed request stalls, later ones stream).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator

import httpx

from lmreg_nb.probe import Target
from lmreg_nb.probe.checks.conformance import CheckResult
from lmreg_nb.probe.checks.suite import run_checks
from lmreg_nb.probe.loop_lag import LoopLag
from lmreg_nb.probe.text.checks import worded
from lmreg_nb.summary import ClientLag

URL = "http://127.0.0.1:9/v1/chat/completions"
TARGET = Target(URL, "sk-test-key-123456", "m", timeout=2.0)
REPLY = {
    "id": "c", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "hi"}}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}  # fmt: skip


def _chunk(content: str | None, finish: str | None = None) -> bytes:
    delta = {} if content is None else {"content": content}
    body = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip
    return b"data: " + json.dumps(body).encode() + b"\n\n"


class _Stream(httpx.AsyncByteStream):
    """Eight chunks: all at once after a wait (``burst``), or 10 ms apart."""

    def __init__(self, burst: bool) -> None:
        self.burst = burst

    async def __aiter__(self) -> AsyncIterator[bytes]:
        pieces = [_chunk(f"w{k} ") for k in range(8)]
        pieces += [_chunk(None, "stop"), b"data: [DONE]\n\n"]
        if self.burst:
            await asyncio.sleep(0.1)
            yield b"".join(pieces)
            return
        for piece in pieces:
            await asyncio.sleep(0.01)
            yield piece


def _handler(bursts: list[bool]) -> httpx.MockTransport:
    """Streamed English requests burst as ``bursts`` says, in order, the last one repeating
    (the streams-not-cut pair is English too); the rest stream."""

    def handle(request: httpx.Request) -> httpx.Response:
        if request.method != "POST":
            return httpx.Response(200, json={"object": "list", "data": [{"id": "m"}]})
        body = json.loads(request.content)
        if not body.get("stream"):
            return httpx.Response(200, json=REPLY)
        prompt = body["messages"][-1]["content"]
        english = body.get("max_tokens", 0) > 8 and prompt.isascii()
        burst = (bursts.pop(0) if len(bursts) > 1 else bursts[0]) if english else False
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, stream=_Stream(burst)
        )

    return httpx.MockTransport(handle)


def _row(bursts: list[bool]) -> CheckResult:
    async def go() -> list[CheckResult]:
        async with httpx.AsyncClient(transport=_handler(bursts)) as client:
            return [worded(c) for c in (await run_checks(client, TARGET))[0].checks]

    return next(c for c in asyncio.run(go()) if c.name == "stream-not-buffered")


def test_a_stream_that_streams_passes() -> None:
    row = _row([False])
    assert row.passed, row.detail


def test_one_stalled_stream_is_not_called_a_buffer() -> None:
    # The first stream stalls (a busy machine); a second one streams: no false alarm.
    row = _row([True, False])
    assert row.passed, row.detail
    assert "second" in row.detail


def test_a_buffering_proxy_is_flagged_after_a_second_look() -> None:
    row = _row([True, True])
    assert not row.passed
    assert "proxy_buffering off" in row.detail
    assert "twice" in row.detail


# -- the client's own stalls (issue 39, item 3) ------------------------------------------


class _StalledStream(_Stream):
    """The burst of a buffering proxy, but first the client's own loop is held (a model
    server on the same cores does that): a stalled client reads any stream in one lump."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        time.sleep(0.1)  # twice the 50 ms that count as a stall
        async for piece in super().__aiter__():
            yield piece


def _lag_row(stall: bool) -> CheckResult:
    def handle(request: httpx.Request) -> httpx.Response:
        if request.method != "POST":
            return httpx.Response(200, json={"object": "list", "data": [{"id": "m"}]})
        body = json.loads(request.content)
        if not body.get("stream"):
            return httpx.Response(200, json=REPLY)
        english = body.get("max_tokens", 0) > 8 and body["messages"][-1]["content"].isascii()
        stream = (_StalledStream(True) if stall else _Stream(True)) if english else _Stream(False)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=stream)

    async def go() -> list[CheckResult]:
        # Without the stall, the watch says none happened: a busy machine (CI's two cores)
        # must not turn this test's proxy into "could not tell".
        watch = LoopLag() if stall else _Quiet()
        async with watch as lag, httpx.AsyncClient(transport=httpx.MockTransport(handle)) as c:
            return [worded(x) for x in (await run_checks(c, TARGET, lag=lag))[0].checks]

    return next(c for c in asyncio.run(go()) if c.name == "stream-not-buffered")


class _Quiet(LoopLag):
    """A watch that saw no stall."""

    def result(self) -> ClientLag:
        return ClientLag()


def test_a_lump_read_while_the_client_stalled_is_could_not_tell_not_a_proxy() -> None:
    row = _lag_row(stall=True)
    # Not judged (passed null): the server is not blamed, nor is a stream it may buffer
    # called fine; counted as neither passed nor failed.
    assert row.passed is None, row.detail
    assert row.detail.startswith("could not tell: this machine stalled"), row.detail
    assert "proxy_buffering" not in row.detail


def test_a_lump_without_a_stall_is_still_a_buffering_proxy() -> None:
    row = _lag_row(stall=False)
    assert not row.passed and "proxy_buffering off" in row.detail
