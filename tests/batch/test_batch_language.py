"""A batch speaks the language chosen for it: its runs, index.html and summary.csv.

``lmreg-nb --lang zh-CN batch plan.csv`` (or LMREG_LANG) reaches every run without a
``lang`` column; a row's ``lang`` still wins. The overview's header, status words and
times (local, with the zone) follow the language too.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmreg_nb import i18n
from lmreg_nb.batch import read_plan, write_index_html, write_summary_csv
from lmreg_nb.batch.plan import fingerprint

RUNS = [
    {"run_id": "r1", "status": "ok", "school": "第一中学", "ready": False,
     "blockers": ["平台无法访问 127.0.0.1"], "summary_status": "ok",
     "finished_at": "2026-09-01T06:05:00+00:00", "checks_passed": 3, "checks_failed": 0,
     "warnings": 1},
    {"run_id": "r2", "status": "ok", "school": "第二中学", "ready": True, "blockers": [],
     "finished_at": "2026-09-01T06:06:00+00:00"},
    {"run_id": "r3", "status": "failed", "school": "第三中学", "error": "超时"},
]  # fmt: skip


@pytest.fixture(autouse=True)
def _english_after(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("TZ", raising=False)
    yield
    i18n.set_language("en")


def test_summary_csv_in_chinese(tmp_path: Path) -> None:
    with i18n.speaking("zh-CN"):
        write_summary_csv(tmp_path / "s.csv", RUNS)
    rows = list(csv.reader(io.StringIO((tmp_path / "s.csv").read_text(encoding="utf-8-sig"))))
    header = rows[0]
    assert header[:4] == ["运行编号", "状态", "错误", "学校"]
    assert all(not h.isascii() for h in header), header
    first = dict(zip(header, rows[1], strict=True))
    assert first["可以上线"] == "否"
    assert first["完成时间"] == "2026-09-01 14:05 Asia/Shanghai (UTC+08:00)"


def test_summary_csv_in_english_keeps_the_identifiers(tmp_path: Path) -> None:
    with i18n.speaking("en"):
        write_summary_csv(tmp_path / "s.csv", RUNS)
    row = next(csv.DictReader((tmp_path / "s.csv").open(encoding="utf-8-sig")))
    assert row["run_id"] == "r1" and row["ready"] == "no"


def test_index_in_chinese_with_local_times_and_no_green_beside_not_ready(tmp_path: Path) -> None:
    with i18n.speaking("zh-CN"):
        write_index_html(tmp_path / "i.html", RUNS)
    page = (tmp_path / "i.html").read_text(encoding="utf-8")
    assert "<html lang='zh-CN'>" in page
    assert "<title>批量接入</title>" in page and "<h1>批量接入</h1>" in page
    assert "尚不能上线" in page and "可以上线" in page
    assert ">成功</td>" in page and ">失败</td>" in page
    assert "Asia/Shanghai" in page and "+00:00" not in page
    for needle in ("not ready", "Onboarding batch", ">ok<", ">failed<", "Updated"):
        assert needle not in page
    r1 = page.split("<td class='run'>r1</td>")[1].split("</tr>")[0]
    assert "class='ok" not in r1.split("尚不能上线")[0]  # r1: ok, not ready: not green
    r2 = page.split("<td class='run'>r2</td>")[1].split("</tr>")[0]
    assert "<td class='ok nowrap'>" in r2  # r2: ready: green


def _plan(folder: Path, text: str) -> Path:
    path = folder / "plan.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_batch_language_chooses_each_rows_notebook_unless_the_row_says(
    tmp_path: Path,
) -> None:
    plan = _plan(
        tmp_path,
        "run_id,notebook,lang,school\na,onboarding,,S\nb,onboarding,en,S\nc,02_register_model,,\n",
    )
    runs = {r.run_id: r for r in read_plan(plan, lang="zh-CN")}
    assert runs["a"].notebook.parent.name == "zh-CN" and runs["a"].lang == "zh-CN"
    assert runs["a"].parameters["lang"] == "zh-CN"
    assert runs["b"].notebook.parent.name != "zh-CN" and runs["b"].lang == "en"
    assert runs["b"].parameters["lang"] == "en"
    assert runs["c"].notebook.parent.name == "zh-CN" and runs["c"].lang == "zh-CN"
    english = {r.run_id: r for r in read_plan(plan)}
    assert english["a"].notebook.parent.name != "zh-CN" and english["a"].lang is None
    assert "lang" not in english["a"].parameters
    assert fingerprint(runs["a"]) != fingerprint(english["a"])  # a new language runs again
