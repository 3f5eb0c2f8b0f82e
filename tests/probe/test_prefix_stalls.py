"""The prefix-cache finding is not the client's stalls (issue 39, item 2).

Before: "does not seem to reuse ... turn on --enable-prefix-caching" came from one
probe in 20 against vLLM, whose own counters showed the lesson's tokens as cache
hits: the toolkit shared two cores with vLLM and stalled up to a second while it
timed the later students. Now a finding must hold with and without the time the
client stalled in each sample, else it is "could not tell: this machine stalled";
and the server's own counters (vLLM's /metrics), when it has them, decide.
"""

from __future__ import annotations

import re

import pytest

from lmreg_nb.probe.load.prefix import LATER, judge_counters, judge_prefix, judge_stalled
from lmreg_nb.probe.text.workload_text import prefix_sentence
from lmreg_nb.probe.wire.server_metrics import MetricsReading
from lmreg_nb.summary import ClientLag, PrefixCache
from lmreg_nb.summary.client import Stall

SHARED = 1650  # the lesson's tokens as the server counts them


def _samples(times_ms: list[float], start: float) -> list[tuple[float, float, float]]:
    """One request after another from ``start`` (s): (sent, first token, seconds)."""
    out, at = [], start
    for ms in times_ms:
        out.append((at, at + ms / 1000, ms / 1000))
        at += ms / 1000 + 0.05
    return out


def test_later_students_slowed_by_the_clients_stalls_are_could_not_tell() -> None:
    shorts = _samples([20.0, 22.0], 0.0)
    lesson = _samples([600.0, 590.0, 605.0, 612.0], 1.0)
    # Measured alone, every later student paid the lesson again: "not reused"...
    first, *later = (t * 1000 for _a, _b, t in lesson)
    assert judge_prefix([20.0, 22.0], first, later).reused is False
    # ...but the client stalled 560 ms in each of them (vLLM on both cores).
    stalls = tuple(Stall(a + 0.01, a + 0.57) for a, _b, _t in lesson[1:])
    lag = ClientLag(stalls=3, worst_stall_ms=560.0, stalled_share=0.4, intervals=stalls)
    found = judge_stalled(shorts, lesson, lag)
    assert found.reused is None and found.stalls == 3 and found.worst_stall_ms == pytest.approx(560)
    sentence = prefix_sentence(found)
    assert "this machine stalled 3 times, up to 0.6 s" in sentence
    assert "--enable-prefix-caching" not in sentence


def test_a_finding_that_holds_either_way_stands_despite_stalls() -> None:
    shorts = _samples([20.0, 22.0], 0.0)
    lesson = _samples([600.0, 30.0, 35.0, 28.0], 1.0)
    stalls = (Stall(0.3, 0.36),)  # a short stall between the samples' windows
    lag = ClientLag(stalls=1, worst_stall_ms=60.0, stalled_share=0.01, intervals=stalls)
    found = judge_stalled(shorts, lesson, lag)
    assert found.reused is True and found.stalls == 0


def _reading(hits: float, queries: float) -> MetricsReading:
    return MetricsReading(prefix_hits=hits, prefix_queries=queries)


@pytest.mark.parametrize(
    ("hits", "reused"), [(LATER * SHARED * 0.92, True), (0.0, False), (LATER * SHARED * 0.3, None)]
)
def test_the_servers_own_counters_decide_when_it_has_them(hits: float, reused: bool | None) -> None:
    timed = PrefixCache(None, 540.0, 520.0, stalls=2, worst_stall_ms=900.0)
    before, after = _reading(1000.0, 5000.0), _reading(1000.0 + hits, 5000.0 + 4 * SHARED + 40)
    found = judge_counters(timed, before, after, SHARED)
    assert found.reused is reused
    if reused is not None:
        assert found.hit_share is not None and found.stalls == 0
        assert "by its own counters" in prefix_sentence(found)
        assert ("--enable-prefix-caching" in prefix_sentence(found)) is (not reused)
    assert PrefixCache.from_json(found.to_json()) == found


def test_counters_that_did_not_count_the_lessons_are_not_believed() -> None:
    timed = PrefixCache(True, 600.0, 30.0)
    assert judge_counters(timed, _reading(0, 0), _reading(0, 10), SHARED) == timed  # too few
    assert judge_counters(timed, _reading(50, 9000), _reading(10, 90000), SHARED) == timed
    assert judge_counters(timed, None, _reading(0, 9000), SHARED) == timed


def test_the_stalled_sentence_in_chinese(lang: str) -> None:
    found = PrefixCache(None, 540.0, 520.0, stalls=2, worst_stall_ms=900.0)
    chinese = bool(re.search(r"[\u4e00-\u9fff]", prefix_sentence(found)))
    assert chinese is (lang == "zh-CN")
    assert "0.9" in prefix_sentence(found)


@pytest.mark.parametrize(
    "found",
    [PrefixCache(None, 380.0, 16.0, stalls=1, worst_stall_ms=364.0),
     PrefixCache(None, 920.0, 391.0, noise_ms=600.0)],
)  # fmt: skip
def test_could_not_tell_is_not_judged_neither_passed_nor_failed(found: PrefixCache) -> None:
    """Contract: a check that cannot be judged on what it got has ``"passed": null``."""
    from lmreg_nb.probe.checks.measured import judge_prefix_cache
    from lmreg_nb.probe.text.checks import worded

    row = worded(judge_prefix_cache(found))
    assert row.passed is None and row.detail.startswith(("could not tell", "Could not tell"))
