"""Issue 32 item 10 (05's part): the check table's short columns never wrap, and its text
form lines up Chinese words (two columns each)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

import pytest

from lmreg_nb import i18n
from lmreg_nb.onboarding.endpoint_steps import checks_table
from lmreg_nb.summary import Check

CHECKS = [
    Check("reachable", True, "error", "HTTP 200"),
    Check("url-https", False, "warning", "registryUrl uses plain http; serve it over TLS"),
    Check("stream-usage", True, "info", "a usage chunk came"),
]


@pytest.fixture(autouse=True)
def _chinese() -> Iterator[None]:
    i18n.set_language("zh-CN")
    yield
    i18n.set_language("en")


def test_severity_and_name_cells_do_not_wrap_the_detail_does() -> None:
    html = checks_table(CHECKS)._repr_html_()
    cells = re.findall(r"<td style='([^']*)'>([^<]*)</td>", html)
    by_text = {text: style for style, text in cells}
    assert "nowrap" in by_text["必需"] and "nowrap" in by_text["建议"]
    assert "nowrap" in by_text["reachable"]
    assert "nowrap" not in by_text["HTTP 200"]  # the detail wraps in a narrow window


def test_the_text_form_aligns_chinese_columns() -> None:
    table = checks_table(CHECKS)
    lines = repr(table).splitlines()

    def at(line: str, word: str) -> int:
        head = line[: line.index(word)]
        return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in head)

    details = [at(lines[i + 1], c.detail) for i, c in enumerate(CHECKS)]
    details.append(at(lines[0], table.columns[-1]))  # under its Chinese heading
    assert len(set(details)) == 1, lines  # every detail starts in the same column
