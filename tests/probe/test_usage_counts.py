"""Usage counts are untrusted numbers: sanitised before any arithmetic, believed only when
a tokenizer could give them (issue 42, items 5 and 6).

A 401-digit ``usage.prompt_tokens`` once raised OverflowError in ``capacity``, ``check
-n 4`` and the onboarding's checks; counts with a believable slope and an absurd
intercept (characters + 10**30, characters + 100,000) sized "a 0-token lesson". And a
reply our own 4 MiB cap ended was called a stream the server cut (item 13).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from fakes.hostile import hostile_server

from lmreg_nb.probe import Target
from lmreg_nb.probe.load.workload import WorkloadSpec, prepare_workload
from lmreg_nb.probe.report import check_endpoint
from lmreg_nb.probe.wire.reply import Reply
from lmreg_nb.probe.wire.shapes import MAX_USAGE_COUNT, usage_of

pytestmark = pytest.mark.timeout(120)

KEY = "sk-usage-counts-0123456789"


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with hostile_server() as found:
        yield found


def test_absurd_usage_numbers_read_as_missing() -> None:
    usage = {
        "prompt_tokens": 10**400,
        "completion_tokens": -3,
        "total_tokens": float("nan"),
        "cached": float("inf"),
        "fine": 12,
        "details": {"cached_tokens": 3},
    }
    assert usage_of({"usage": usage}) == {"fine": 12, "details": {"cached_tokens": 3}}
    assert usage_of({"usage": {"prompt_tokens": MAX_USAGE_COUNT}}) == {
        "prompt_tokens": MAX_USAGE_COUNT
    }


def test_a_streamed_usage_over_four_tokens_a_chunk_is_not_believed() -> None:
    lying = Reply(pieces=["a"] * 5, times=[0.0, 1.5, 3.0, 4.5, 6.0])
    lying.take_chunk({"choices": [], "usage": {"completion_tokens": 100_000}}, 6.0)
    assert lying.usage_disbelieved and lying.output_tokens == (5, "chunks")
    fair = Reply(pieces=["ab"] * 5, times=[0.0, 0.1, 0.2, 0.3, 0.4])
    fair.take_chunk({"choices": [], "usage": {"completion_tokens": 20}}, 0.4)
    assert not fair.usage_disbelieved and fair.output_tokens == (20, "usage")
    whole = Reply()  # one body: its count cannot be held against chunks
    whole.take_whole(
        {"choices": [{"message": {"content": "hi"}}], "usage": {"completion_tokens": 300}}, 0.0
    )
    assert whole.output_tokens == (300, "usage")


@pytest.mark.slow  # the lean client and the calibration speak to a real socket
@pytest.mark.parametrize("variant", ["huge", "offset30", "offset5"])
def test_absurd_counts_leave_the_lesson_sized_by_the_estimate(base: str, variant: str) -> None:
    target = Target(f"{base}/counts/{variant}/v1/chat/completions", KEY, "m", timeout=10)
    work = asyncio.run(prepare_workload(target, WorkloadSpec(lesson_tokens=1500, seed=1)))
    assert work.scale.estimate  # the server's counts were not believed
    info = work.info()
    # About the asked 1,500 tokens (and the instructions), never "a 0-token lesson".
    assert 1300 <= info.shared_prefix_tokens <= 2000, info


@pytest.mark.slow  # the lean client and the calibration speak to a real socket
def test_a_401_digit_count_gives_no_traceback_in_the_checks_and_load_test(base: str) -> None:
    target = Target(f"{base}/counts/huge/v1/chat/completions", KEY, "m", timeout=10)
    report = check_endpoint(target, requests=4, concurrency=2)
    assert report.performance.requests == 4
    assert report.workload is not None and report.workload.shared_prefix_tokens > 1000


@pytest.mark.slow  # the lean client and the calibration speak to a real socket
def test_a_reply_our_own_4_mib_cap_ended_is_not_blamed_on_the_server(base: str) -> None:
    # An endless stream: the client stops reading at 4 MiB. The server cut nothing, so no
    # "cut stream" and no llama.cpp interrupt_requests advice (issue 42, item 13).
    from lmreg_nb.probe.load.fixed import run_load
    from lmreg_nb.probe.report import _load_row
    from lmreg_nb.probe.text.checks import worded

    target = Target(f"{base}/endless/v1/chat/completions", KEY, "m", timeout=10)
    result = asyncio.run(run_load(target, 2, 2, max_duration=60))
    assert [r.error for r in result.rows] == ["too long", "too long"]
    assert result.cut_streams == 0
    detail = worded(_load_row(result, 2, 60)).detail
    assert "reply over 4 MiB, not read to its end" in detail
    assert "interrupt_requests" not in detail and "cut stream" not in detail
