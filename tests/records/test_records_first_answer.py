"""The record shows first_answer_ms next to TTFT, with the sentence saying which students feel."""

from __future__ import annotations

from typing import Any

import pytest

from lmreg_nb import i18n
from lmreg_nb.records.html import render_summary_html
from lmreg_nb.records.text import render_summary_text
from lmreg_nb.summary import Step, build_summary
from lmreg_nb.summary.performance import Performance

PCT = {"p50": 120.0, "p90": 130.0, "p99": 140.0}


def _summary(performance: dict[str, Any]) -> Any:
    return build_summary(
        school="S", contact=None, base_url="https://p", env="e",
        steps=[Step("chat endpoint checks", True, "ok")], models=[], checks=[],
        performance=Performance.from_json(performance),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("lang", "ttft", "row", "felt"),
    [
        ("en", "time to first token (ms)", "time to the first answer token (ms)",
         "Students feel the time to the first answer"),
        ("zh-CN", "首字延迟（毫秒）", "答案首字延迟（毫秒）", "学生感受到的是答案首字延迟"),
    ],
)  # fmt: skip
def test_first_answer_sits_next_to_ttft_with_the_sentence(
    lang: str, ttft: str, row: str, felt: str
) -> None:
    i18n.set_language(lang)
    try:
        perf = {"requests": 1, "errors": 0, "ttft_ms": PCT,
                "first_answer_ms": {"p50": 900.0, "p90": 950.0, "p99": 990.0}}  # fmt: skip
        text, page = render_summary_text(_summary(perf)), render_summary_html(_summary(perf))
        for shown in (text, page):
            assert row in shown and felt in shown and "900" in shown
            assert shown.index(ttft) < shown.index(row)  # next to TTFT
        old = {"requests": 1, "errors": 0, "ttft_ms": PCT}  # a record from before
        for shown in (render_summary_text(_summary(old)), render_summary_html(_summary(old))):
            assert row not in shown and felt not in shown
    finally:
        i18n.set_language("en")
