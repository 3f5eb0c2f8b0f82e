"""Issue 32 item 8: `onboard` prints each problem once, then the verdict (both languages)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from lmreg_nb.commands.runs import report_lines
from lmreg_nb.i18n import _
from lmreg_nb.records.text import status_label
from lmreg_nb.summary import Check, Step, build_summary

DOWN = "nothing listens on 127.0.0.1:9 (connection refused)"
CUT = "two streams sent at once: one was cut (interrupt_requests)"
URL = "http://127.0.0.1:9/v1/chat/completions"


def _result(checks: list[Check], steps: list[Step]) -> SimpleNamespace:
    summary = build_summary(
        school="S", contact=None, base_url=None, env=None, steps=steps, models=[],
        checks=checks, target_urls=[URL],
    )  # fmt: skip
    error = _("summary status {status}: {reason}").format(
        status=status_label(summary.status), reason=summary.reason or ""
    )
    return SimpleNamespace(
        summary=summary, status=summary.status, duration_s=12.3, kernel_retried=False,
        error=error, notebook=Path("o.ipynb"), html=Path("o.html"), short_html=Path("s.html"),
        status_only=True,  # the runner's flag: the error is only the summary's status
    )  # fmt: skip


def test_each_problem_is_printed_once(lang: str) -> None:
    checks = [
        Check("reachable", False, "error", DOWN),
        Check("streams-not-cut", False, "error", CUT),
        Check("url-https", False, "warning", "registryUrl uses plain http"),
        Check("url-path", True, "warning", "ends in v1/chat/completions"),
    ]
    steps = [Step(n, True, "done") for n in ("contact card", "token", "register", "list models")]
    steps.append(Step("chat endpoint checks", False, f"required checks failed: reachable ({DOWN})"))
    out, err = report_lines(_result(checks, steps))
    text = "\n".join(out + err)
    assert text.count("127.0.0.1:9 (connection") == 1, text
    assert text.count("interrupt_requests") == 1, text
    assert not err, err  # the status is explained by the go-live list above
    assert out[-4].startswith("  - ")  # the verdict's list comes last, before the files
    assert len(out) <= 15, text  # a line per step, per problem, per file
    if lang == "zh-CN":
        assert "failed" not in text and "FAILED" not in text and "联系人信息：done" in text


def test_an_error_the_summary_does_not_explain_is_still_printed() -> None:
    steps = [Step(n, True, "done") for n in ("contact card", "token")]
    result = _result([], steps)
    result.error, result.status_only = "cell 7 raised ZeroDivisionError", False
    _out, err = report_lines(result)
    assert err == ["error: cell 7 raised ZeroDivisionError"]
