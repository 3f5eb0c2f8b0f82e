"""The capacity form and `lmreg-nb capacity` show the table the record shows: translated
columns, whole milliseconds, marks instead of True/False, no pandas index."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lmreg_nb import i18n
from lmreg_nb.probe.load.capacity import CapacityResult
from lmreg_nb.probe.text.capacity_table import level_headers
from lmreg_nb.probe.text.capacity_text import format_capacity

LEVELS = [
    {"concurrency": c, "requests": 8, "errors": 0,
     "ttft_ms": {"p50": 900.5, "p90": 1932.977 if c == 4 else 411.2, "p99": 2100.0},
     "itl_ms": {"p50": 20.0, "p90": 31.4, "p99": 40.0},
     "latency_ms": {"p50": 1.0, "p90": 2.0, "p99": 3.0},
     "longest_pause_ms": 812.6 if c == 4 else None,
     "requests_per_s": 3.14159, "output_tokens_per_s": 55.5, "meets_slo": c == 2}
    for c in (1, 2, 4)
]  # fmt: skip
RESULT = {
    "slo": {"ttft_ms": 2000.0, "max_error_rate": 0.01},
    "levels": LEVELS,
    "capacity": {"concurrency": 2, "requests_per_s": 3.1, "limited_by": "ttft"},
    "need": 4,
}
RAW = ("ttft_p90_ms", "meets_slo", "True", "False", "1932.977", "concurrency ")


@pytest.fixture(autouse=True)
def _english_after() -> Iterator[None]:
    yield
    i18n.set_language("en")


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_cli_text_shows_the_records_table(lang: str) -> None:
    i18n.set_language(lang)
    text = format_capacity(CapacityResult.from_json(RESULT), 4)
    for raw in RAW:
        assert raw not in text, raw
    header = text.splitlines()[0]
    assert all(h in header for h in level_headers())
    assert "1933" in text and "✔" in text and "✘" in text
    if lang == "zh-CN":
        assert "首字延迟 p90（毫秒）" in header


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_the_capacity_form_shows_the_same_table(lang: str) -> None:
    from lmreg_nb.ui.capacity import capacity_levels

    i18n.set_language(lang)
    table = capacity_levels(CapacityResult.from_json(RESULT).levels)
    assert table.columns == level_headers()
    assert [row[0] for row in table.rows] == ["1", "2", "4"]  # the levels, no 0-based index
    shown = table._repr_html_() + repr(table)
    for raw in RAW:
        assert raw not in shown, raw
    assert "1933" in shown


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_every_view_shows_the_longest_pause_beside_the_pace(lang: str) -> None:
    """The pause a student sees is judged (--slo-pause-ms): the CLI, the form and the
    record's HTML show it in the same column, from the same cells."""
    from lmreg_nb.records.html import render_summary_html
    from lmreg_nb.summary import CapacityRecord, Summary
    from lmreg_nb.ui.capacity import capacity_levels

    i18n.set_language(lang)
    result = CapacityResult.from_json(RESULT)
    heading = level_headers()[5]
    assert heading == ("longest pause p90 (ms)" if lang == "en" else "最长停顿 p90（毫秒）")
    text = format_capacity(result, 4)
    assert heading in text.splitlines()[0] and "813" in text
    form = capacity_levels(result.levels)
    assert [row[5] for row in form.rows] == ["-", "-", "813"]
    record = CapacityRecord.from_json({**RESULT, "verdict": "v", "class_size": 4})
    page = render_summary_html(Summary("S", None, None, None, [], [], [], capacity=record))
    assert heading in page and "<td>813</td>" in page
