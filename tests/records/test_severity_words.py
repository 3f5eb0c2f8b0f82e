"""A check's severity in words that mean what they say: required / recommended / info
(必需 / 建议 / 提示), the same in the notebook's table, the record and the CLI; the JSON
keeps error / warning / info."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lmreg_nb import i18n
from lmreg_nb.probe.checks.conformance import CheckResult
from lmreg_nb.probe.report import EndpointReport, format_report
from lmreg_nb.records.html import render_summary_html
from lmreg_nb.records.text import render_summary_text
from lmreg_nb.severity import severity_label
from lmreg_nb.summary import build_summary
from lmreg_nb.summary.performance import Performance

WORDS = {
    "en": {"error": "required", "warning": "recommended", "info": "info"},
    "zh-CN": {"error": "必需", "warning": "建议", "info": "提示"},
}
CHECKS = [
    CheckResult("reachable", True, "error", "HTTP 200"),
    CheckResult("usage-present", False, "warning", "no usage block"),
    CheckResult("model-echo", True, "info", "model demo"),
]


@pytest.fixture(autouse=True)
def _english_after() -> Iterator[None]:
    yield
    i18n.set_language("en")


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_severity_words(lang: str) -> None:
    i18n.set_language(lang)
    for severity, word in WORDS[lang].items():
        assert severity_label(severity) == word


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_cli_report_says_required_not_error(lang: str) -> None:
    i18n.set_language(lang)
    figures = Performance(requests=1, load_test=False)
    report = EndpointReport("http://x/v1/chat/completions", "m", list(CHECKS), figures)
    lines = format_report(report).splitlines()
    row = next(line for line in lines if "reachable" in line)
    assert WORDS[lang]["error"] in row and " error " not in row
    if lang == "zh-CN":
        assert "错误" not in row
    assert WORDS[lang]["warning"] in next(line for line in lines if "usage-present" in line)
    assert report.to_json()["checks"][0]["severity"] == "error"  # the JSON keeps its value


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_record_and_notebook_table_say_required(lang: str) -> None:
    i18n.set_language(lang)
    summary = build_summary(
        school="S", contact=None, base_url=None, env=None, steps=[], models=[],
        checks=list(CHECKS),
    )  # fmt: skip
    page = render_summary_html(summary)
    text = render_summary_text(summary)
    for word in WORDS[lang].values():
        assert word in page and word in text
    if lang == "zh-CN":
        assert "错误" not in page and "警告" not in page

    from lmreg_nb.onboarding import Onboarding

    run = Onboarding("S")
    run.checks = list(CHECKS)
    table = run.checks_table()
    assert [row[2] for row in table.rows] == list(WORDS[lang].values())
    verdict = repr(run.verdict())
    assert WORDS[lang]["warning"] in verdict
