"""A server that answers one request at a time (transformers serve without continuous batching).

The checks send their requests at once; such a server queues them, and the last
ones in its queue wait past the read timeout. That is our burst, not the server:
each request that timed out is asked again alone before its row is judged, and a
reply that broke off never passes max-tokens-honoured by its zero tokens.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest
from fakes.hosts import mock_served

from lmreg_nb.probe import Target, check_endpoint
from lmreg_nb.probe.checks.golive import judge_max_tokens
from lmreg_nb.probe.text.checks import worded
from lmreg_nb.probe.wire.exchange import Exchange, chat_body, send
from lmreg_nb.sandbox.school_model import MockModelConfig

pytestmark = pytest.mark.timeout(120)

KEY = "sk-one-at-a-time-0123456789"


@pytest.fixture(scope="module")
def one_slot() -> Iterator[str]:
    # One slot: every request waits for the one before it (about 0.11 s each), so the
    # checks' burst of 14 requests queues for about 1.5 s, past a 0.5 s read timeout (the
    # last nine wait past it).
    config = MockModelConfig(api_key=KEY, ttft_ms=10, itl_ms=10, tokens=10, slots=1)
    with mock_served(config) as base:
        yield base + "/v1/chat/completions"


def test_the_queue_our_burst_makes_fails_no_check(one_slot: str) -> None:
    report = check_endpoint(Target(one_slot, KEY, "school-llm", timeout=0.5), context_need=600)
    rows = {c.name: c for c in report.checks}
    for name in ("system-role", "context-window", "streams-not-cut", "stream-answers",
                 "stream-utf8", "max-tokens-honoured"):  # fmt: skip
        assert rows[name].passed, (name, rows[name].detail)
    assert "0 tokens" not in rows["max-tokens-honoured"].detail
    # The one-request figures are the server's alone (10 ms to the first token), not our
    # queue's (up to the 0.5 s timeout: half of it is far from either).
    assert (report.performance.ttft_ms.p50 or 0) < 250, report.performance


def test_a_stream_that_broke_off_does_not_honour_max_tokens() -> None:
    ex = Exchange(stream_requested=True)
    ex.status, ex.streamed = 200, True
    ex.failure, ex.failure_detail = "timeout", "no data for 10 s"
    row = worded(judge_max_tokens(ex))
    assert not row.passed and "no data for 10 s" in row.detail


def test_a_request_waits_as_long_as_its_target_says_not_the_clients_default() -> None:
    # The checks wait longer for a queue to empty with a copy of the target: the request
    # must take that timeout, whatever the shared client was made with.
    config = MockModelConfig(api_key=KEY, ttft_ms=300, itl_ms=1, tokens=2)
    with mock_served(config) as base:
        target = Target(base + "/v1/chat/completions", KEY, "school-llm", timeout=5.0)

        async def go() -> Exchange:
            async with httpx.AsyncClient(timeout=httpx.Timeout(0.1)) as client:
                return await send(client, target, chat_body("school-llm", stream=False),
                                  stream=False)  # fmt: skip

        ex = asyncio.run(go())
    assert ex.ok and ex.status == 200, ex.failure_detail
