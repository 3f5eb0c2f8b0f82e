"""Issue 32 item 6: index.html reads well and the rerun summary adds up.

Readable widths (status, school, run and check counts never one character a
line), the cause first (a step not done comes after the failed check it waits
on), no error column repeating the blockers; and after a rerun, ok + failed +
skipped is the number of rows.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from lmreg_nb import i18n
from lmreg_nb.batch import BatchResult, write_index_html
from lmreg_nb.summary import Check, Step, build_summary

BLOCKERS = ["Required check reachable failed: nothing listens on 127.0.0.1:9", "Step not done"]
RUNS: list[dict[str, Any]] = [
    {"run_id": "a", "status": "ok", "school": "第一中学", "ready": False, "blockers": BLOCKERS,
     "checks_passed": 25, "checks_failed": 1, "warnings": 3,
     "error": "summary status failed: " + BLOCKERS[0], "html": "onboarding.html"},
    {"run_id": "b", "status": "failed", "school": "第二中学", "error": "kernel died"},
]  # fmt: skip


def test_index_has_readable_widths_and_no_repeated_error(tmp_path: Path) -> None:
    i18n.set_language("zh-CN")
    try:
        write_index_html(tmp_path / "i.html", RUNS)
    finally:
        i18n.set_language("en")
    page = (tmp_path / "i.html").read_text(encoding="utf-8")
    assert "white-space:nowrap" in page
    cells = re.findall(r"<td class='([^']*)'>(.*?)</td>", page)
    by_text = {text: cls for cls, text in cells}
    assert "nowrap" in by_text["成功"] and "nowrap" in by_text["失败"]
    assert "school" in by_text["第一中学"]  # a min-width: not one character a line
    assert any("checks" in cls and "25" in text for cls, text in cells)  # the counts
    assert page.count("nothing listens on 127.0.0.1:9") == 1  # in the go-live cell only
    assert "kernel died" in page  # a run without a summary still says why


def test_a_step_waiting_on_a_failed_check_is_not_listed_as_not_done() -> None:
    # Issue 40: the capacity step waits on the failed check, whose blocker names the cause;
    # "Step not done yet: capacity. Run it." would be advice the cause contradicts.
    steps = [Step(n, True, "") for n in ("contact card", "token", "register", "list models")]
    steps.append(Step("chat endpoint checks", False, "required checks failed: reachable"))
    summary = build_summary(
        school="S", contact=None, base_url=None, env=None, steps=steps, models=[],
        checks=[Check("reachable", False, "error", "nothing listens")], class_size=40,
        target_urls=[],
    )  # fmt: skip
    blockers = summary.go_live.blockers
    assert any("nothing listens" in b for b in blockers), blockers
    assert not any("not done" in b for b in blockers), blockers


def test_the_rerun_summary_adds_up(monkeypatch: Any, tmp_path: Path) -> None:
    plan = tmp_path / "plan.csv"
    plan.write_text("run_id,env_file\n", encoding="utf-8")
    runs = [
        {"run_id": "a", "status": "ok"}, {"run_id": "b", "status": "ok"},
        {"run_id": "c", "status": "failed"}, {"run_id": "d", "status": "failed"},
    ]  # fmt: skip
    result = BatchResult(
        out_dir=tmp_path, runs=runs, executed=["b", "c", "d"], skipped=["a"],
        summary_csv=tmp_path / "s.csv", index_html=tmp_path / "i.html",
    )  # fmt: skip
    monkeypatch.setattr("lmreg_nb.batch.read_plan", lambda *a, **k: [])
    monkeypatch.setattr("lmreg_nb.batch.run_batch", lambda *a, **k: result)
    from lmreg_nb.cli import main

    done = CliRunner().invoke(main, ["batch", str(plan), "--out", str(tmp_path / "o")])
    line = next(x for x in done.output.splitlines() if "skipped" in x)
    ok, failed, skipped = (int(n) for n in re.findall(r"(\d+) (?:ok|failed|skipped)", line))
    assert (ok, failed, skipped) == (1, 2, 1), line
    assert ok + failed + skipped == len(runs)


def test_summary_csv_quotes_every_cell_a_spreadsheet_would_run(tmp_path: Path) -> None:
    import csv

    from lmreg_nb.batch import write_summary_csv

    # OWASP's list: = + - @, and a tab or a carriage return first (Excel and LibreOffice
    # drop them and read a formula). A server's error text or a form's school name can
    # be any of these (red-team pass, issue 44).
    starts = ["=1+1", "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\t=1+1", "\r=1+1"]
    runs = [{"run_id": f"r{i}", "status": "failed", "error": text, "errors": -1}
            for i, text in enumerate(starts)]  # fmt: skip
    write_summary_csv(tmp_path / "s.csv", runs)
    rows = list(csv.DictReader((tmp_path / "s.csv").open(encoding="utf-8-sig", newline="")))
    assert [r["error"] for r in rows] == ["'" + text for text in starts]
    assert {r["errors"] for r in rows} == {"-1"}  # a number is left a number
