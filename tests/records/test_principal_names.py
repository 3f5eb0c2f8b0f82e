"""The principal's page shows typed names safely (issue 33, partial).

A school name holding a right-to-left override or zero-width marks showed
reversed or with hidden parts; they now become a visible U+FFFD, as on a
terminal. Real right-to-left text (Arabic, Hebrew) and the joiners that shape it stay.
"""

from __future__ import annotations

import pytest
from fakes.summaries import demo_summary

from lmreg_nb.records.principal import render_principal_html

MARKS = ["\u202e", "\u200b", "\u2066", "\u200f", "\ufeff", "\u061c"]


@pytest.mark.parametrize("mark", MARKS)
def test_bidi_and_zero_width_marks_in_the_school_name_do_not_reach_the_page(mark: str) -> None:
    school = f"Demo{mark}Middle School"
    contact = {"name": f"Li{mark} Hua", "mobile": "13800138000", "email": "ai@demo.example"}
    page = render_principal_html(demo_summary("en", school=school, contact=contact))
    assert mark not in page
    assert "Demo\ufffdMiddle School" in page and "Li\ufffd Hua" in page


def test_real_right_to_left_text_and_joiners_stay() -> None:
    # A joiner stays where it shapes a script (a Persian non-joiner between two letters);
    # after a space it only hides (issue 42 item 10: tests/records/test_shown_names.py).
    school = "مدرسة النور دبیرستان می\u200cخواهم"
    page = render_principal_html(demo_summary("en", school=school))
    assert school in page
