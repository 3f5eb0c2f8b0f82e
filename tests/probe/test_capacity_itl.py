"""Inter-token latency: per-request decode time, so chunks read together do not read as 0 ms.

When our event loop is late, several chunks arrive in one network read and the
gaps between read times read as ~0 ms (the ITL median once fell to 0.05 ms for a
truth of 10 ms). The estimator is decode time / (tokens - 1) per request: exact
for chunks bunched after the first one, which the first test shows with set
times. Against a real server the figure depends on how busy the machine is, so
tests/probe/test_capacity_knees.py asks only that it is of the truth's order; how close it stays at
32 and 128 chats, next to GuideLLM in the same run, is ``bench/bench_capacity.py``'s
(phase ``accuracy``).
"""

from __future__ import annotations

import itertools

import pytest

from lmreg_nb.probe.load.metrics import decode_itl_ms
from lmreg_nb.probe.wire.exchange import Exchange

pytestmark = pytest.mark.timeout(120)

KEY = "sk-itl-test-0123456789abcdef"
ITL_MS = 10.0
TOKENS = 32


def test_chunks_read_together_keep_the_decode_time() -> None:
    # 32 tokens 10 ms apart, but tokens 2-21 came in one late read (at token 21's time).
    due = [i * 0.010 for i in range(TOKENS)]
    read = [due[0], *[due[20]] * 20, *due[21:]]
    ex = Exchange(pieces=["x"] * TOKENS, times=list(read), usage={"completion_tokens": TOKENS})
    assert decode_itl_ms(ex) == pytest.approx(ITL_MS)
    gaps = sorted(b - a for a, b in itertools.pairwise(read))
    assert gaps[len(gaps) // 2] * 1000 < 1  # the pooled gaps' median would say ~0 ms


def test_a_level_where_no_reply_finished_has_no_rate_not_zero() -> None:
    """Settled on first tokens before any reply ended: the rate was not measured ("-" in
    the table), not 0.0 requests a second."""
    from lmreg_nb.probe.load.levels import Level
    from lmreg_nb.probe.load.samples import Sample
    from lmreg_nb.probe.text.capacity_table import level_cells

    running = [Sample(True, ttft_ms=40.0, itl_ms=9.0, tokens=5, partial=True) for _ in range(4)]
    level = Level.measured(4, running, duration_s=0.5, window_s=0.5)
    assert level.requests == 4 and level.errors == 0
    assert level.requests_per_s is None and level.output_tokens_per_s is None
    assert level_cells(level)[-1] == "-"
    done = [Sample(True, ttft_ms=40.0, itl_ms=9.0, tokens=5, end_s=0.2) for _ in range(4)]
    assert Level.measured(4, done, duration_s=0.5, window_s=0.5).requests_per_s == 8.0
