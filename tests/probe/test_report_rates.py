"""The CLI's throughput line reads like the record's (found by the user pass of the fifth
release): `lmreg-nb check -n 2` printed "每秒 2.746 个请求，每秒输出 87.862 个 token",
the record "每秒 5.45 个请求，每秒输出 174.4 个 token" for the same kind of figures.
"""

from __future__ import annotations

from lmreg_nb.probe.checks.conformance import CheckResult
from lmreg_nb.probe.report import EndpointReport, format_report
from lmreg_nb.summary.performance import Performance


def test_throughput_has_three_significant_digits_at_most(lang: str) -> None:
    figures = Performance(
        requests=2, load_test=True, requests_per_s=2.746, output_tokens_per_s=87.862
    )
    checks = [CheckResult("reachable", True, "error", "HTTP 200")]
    report = EndpointReport("http://x/v1/chat/completions", "m", checks, figures)
    text = format_report(report)
    assert "2.75" in text and "87.9" in text, text
    assert "2.746" not in text and "87.862" not in text, text
