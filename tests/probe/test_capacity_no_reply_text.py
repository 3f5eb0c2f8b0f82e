"""`capacity` against a model that accepts connections and never answers says so in one
line (found by the user pass of the fifth release).

Before: after 3 s (LMREG_TIMEOUT) it printed the levels table's header with no row,
"capacity: 0 (limited by the search's time limit)" and a verdict ending "The search
reached its time limit before it finished.": the search's two-minute limit was never
near; the model did not answer its first request.
"""

from __future__ import annotations

from lmreg_nb.probe.load.capacity import CapacityResult
from lmreg_nb.probe.load.levels import SLO
from lmreg_nb.probe.text.capacity_text import format_capacity, verdict


def _silent() -> CapacityResult:
    result = CapacityResult(SLO(), [], need=4)
    result.stopped, result.no_reply_s = "time", 3.0
    return result


def test_a_model_that_never_answers_gets_one_line(lang: str) -> None:
    text = format_capacity(_silent(), 4)
    assert len(text.splitlines()) == 1, text
    assert "3" in text  # the seconds it waited


def test_no_time_limit_is_blamed_when_the_first_request_went_unanswered(lang: str) -> None:
    said = verdict(_silent(), 4)
    assert "time limit" not in said and "时间上限" not in said, said
