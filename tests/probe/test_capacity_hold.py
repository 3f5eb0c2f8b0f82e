"""A level within the SLO ends once its replies, run to their end, settle it. In-process.

A running reply counts as slow for "clearly inside" (it may still freeze), so C chats
always held C unknowns and a level within the SLO ran to its ceiling (at 4 chats 74
whole replies would have settled it; the ceiling is 40): the demo's capacity step took
17 s where 10 do. Now the level holds (sends nothing new) once only its running
replies stand between it and "clearly inside", and is judged on them whole.
"""

from __future__ import annotations

import itertools

import pytest
from test_capacity_settle import SLO, PacedConnection, _level, _paced_level

from lmreg_nb.probe.load import level_run
from lmreg_nb.probe.load.levels import LevelPlan
from lmreg_nb.probe.load.settle import Measure, Tally, hopeful, settled


def test_a_level_whose_running_requests_await_their_first_token_ends_before_its_ceiling() -> None:
    # Each first token after 30 ms, then the reply at once: whenever the level looks, its
    # 4 running requests are still waiting, unknown. It ran to its ceiling (40).
    plan = LevelPlan(max_seconds=20)
    level, _ = _level(lambda n: (0.03, 0.0), 4, SLO(ttft_ms=100), plan)
    assert level.meets_slo and level.failed is None
    # 22 whole replies settle it (the last running ones awaited, not cut).
    assert 22 <= level.requests <= 30 < plan.ceiling(4), level
    assert level.unfinished == 0 and level.in_flight == 0


def test_a_level_whose_running_replies_show_their_pace_ends_on_them_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Replies of 0.2 s, their pace shown after 50 ms (2 s in a real level): every running
    # reply is unknown until it ends, and the level ran to its ceiling.
    monkeypatch.setattr(level_run, "PACE_SEEN_S", 0.05)
    plan = LevelPlan(max_seconds=20)
    level, _ = _paced_level(lambda: PacedConnection(10, 0.02), 4, plan)
    assert level.meets_slo and level.failed is None
    assert 22 <= level.requests <= 30 < plan.ceiling(4), level
    assert level.unfinished == 0 and level.in_flight == 0 and level.paced == level.requests


def test_the_hold_is_not_counted_in_the_next_requests_first_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One chat's replies take 1 s and are too slow to read (200 ms a token); while the
    # level holds for one of them, the three others wait. Their next requests are due when
    # the hold ends: their first tokens come at once (2 ms), not up to 1 s late.
    monkeypatch.setattr(level_run, "PACE_SEEN_S", 0.05)
    chats = itertools.count()

    def conn() -> PacedConnection:
        return PacedConnection(6, 0.2) if next(chats) == 0 else PacedConnection(10, 0.01)

    level, _ = _paced_level(conn, 4, LevelPlan(max_seconds=10))
    assert level.ttft_ms["p99"] is not None and level.ttft_ms["p99"] < 500, level


def test_hopeful_counts_the_unknown_as_fast_and_nothing_else() -> None:
    tally = Tally(fast=18, unknown=4, finished=18, pace=Measure(18, 0, 4), shown=4)
    rule = {"floor": 8, "most": 44, "max_error_rate": 0.01, "chats": 4}
    assert settled(tally, **rule) is None  # the 4 running could still be slow
    assert settled(hopeful(tally), **rule) is True  # were they fast, it would be inside
    assert hopeful(tally).pace == Measure(22, 0, 0) and hopeful(tally).finished == 18
    slow = Tally(fast=18, slow=1, unknown=4, finished=19, pace=Measure(18, 1, 4), shown=4)
    assert settled(hopeful(slow), **rule) is None  # one slow of 23: not clearly inside
