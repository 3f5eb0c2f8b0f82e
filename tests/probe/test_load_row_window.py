"""The load-test row names the context window when the lesson does not fit it (issue 39, item 8).

Seen on llama-server (a 2048-token slot): "8 of 8 requests ... 8 failed (HTTP 400 x8).
The platform will see such failures under load: check the server's capacity, rate
limits and timeouts". Load had nothing to do with it: every prompt of the lesson was
longer than the window the context-window row had already found too small.
"""

from __future__ import annotations

import re

import pytest
from fakes.hosts import mock_served

from lmreg_nb.probe import Target, check_endpoint
from lmreg_nb.sandbox.school_model import MockModelConfig

pytestmark = pytest.mark.timeout(120)

KEY = "sk-window-0123456789abcdef"


def test_a_lesson_longer_than_the_window_is_not_called_a_load_problem(lang: str) -> None:
    config = MockModelConfig(api_key=KEY, ttft_ms=5, itl_ms=2, tokens=4, context_window=1200)
    with mock_served(config) as base:
        report = check_endpoint(Target(base + "/v1/chat/completions", KEY, "m", timeout=5),
                                requests=2, concurrency=1)  # fmt: skip
    rows = {c.name: c for c in report.checks}
    assert not rows["context-window"].passed
    load = rows["load-test"]
    assert not load.passed and "context-window" in load.detail, load.detail
    assert "rate limits" not in load.detail
    # The prefix-cache finding says why it is missing (before: no row, no reason).
    prefix = rows["prefix-cache"]
    assert "HTTP 400" in prefix.detail, prefix.detail
    words = re.sub(r"\(.*?\)", "", load.detail)
    assert bool(re.search(r"[\u4e00-\u9fff]", words)) is (lang == "zh-CN")


def test_llama_cpp_pythons_empty_stream_for_a_long_prompt_names_the_window_too() -> None:
    # llama-cpp-python answers a prompt over --n_ctx with HTTP 200 and a stream that closes
    # before any event (its generator raises "Requested tokens ... exceed context window").
    from lmreg_nb.probe.load.fixed import LoadResult
    from lmreg_nb.probe.load.metrics import failed_row
    from lmreg_nb.probe.report import _load_row
    from lmreg_nb.probe.text.checks import worded

    load = LoadResult(concurrency=2, duration_s=0.1)
    load.rows = [failed_row("bad stream", request=k) for k in range(8)]
    row = worded(_load_row(load, 8, 300.0, window_refused=True))
    assert not row.passed and "context-window" in row.detail, row.detail
    alone = worded(_load_row(load, 8, 300.0, window_refused=False))  # no window refused: not said
    assert "context-window" not in alone.detail
