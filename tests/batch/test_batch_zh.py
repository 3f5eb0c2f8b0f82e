"""`lmreg-nb --lang zh-CN batch plan.csv` against the sandbox_process, with no `lang` column:
every record, the index and the bad rows' messages are Chinese; a row's `lang` still
wins; an unreachable model names its cause once. (A bad contact card, found before any
run: tests/batch/test_plan_values.py.)"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from lmreg_nb import i18n
from lmreg_nb.cli import main
from lmreg_nb.records import read_records
from lmreg_nb.sandbox.process import SandboxInfo
from lmreg_nb.summary import Summary

pytestmark = [pytest.mark.notebooks, pytest.mark.slow]
CJK = re.compile(r"[\u4e00-\u9fff]")
COLUMNS = (
    "run_id,env_file,lang,school,contact_name,contact_mobile,contact_email,model_name,"
    "registry_url,check_requests,class_size"
)


@pytest.fixture(autouse=True)
def _english_after(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("TZ", raising=False)
    yield
    i18n.set_language("en")


def test_a_chinese_batch_without_a_lang_column(
    sandbox_process: SandboxInfo, tmp_path: Path
) -> None:
    account = sandbox_process.add_app("batch-zh")
    env = {**sandbox_process.env(), "LMREG_APP_ID": account["app_id"],
           "LMREG_APP_SECRET": account["app_secret"]}  # fmt: skip
    (tmp_path / "a.env").write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    card = "王芳,13812345678,ai@school.edu.cn"
    down = "http://127.0.0.1:9/v1/chat/completions"
    (tmp_path / "plan.csv").write_text(
        f"{COLUMNS}\n"
        f"good,a.env,,第一中学,{card},zh-good,,0,0\n"
        f"down,a.env,,第三中学,{card},zh-down,{down},0,0\n"
        f"english,a.env,en,School E,{card},zh-english,,0,0\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main, ["--lang", "zh-CN", "batch", str(tmp_path / "plan.csv"), "--out", str(out),
               "--jobs", "3"],  # the three rows at once
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    summaries = {
        run: Summary.from_json(read_records(out / run / "onboarding.ipynb")["summary"])
        for run in ("good", "down", "english")
    }
    assert {run: s.lang for run, s in summaries.items()} == {
        "good": "zh-CN", "down": "zh-CN", "english": "en",
    }  # fmt: skip
    assert summaries["good"].status == "ok"
    import nbformat

    record = nbformat.read(out / "good" / "onboarding.ipynb", as_version=4)
    injected = next(c.source for c in record.cells if "injected-parameters" in c.metadata.get(
        "tags", []))  # fmt: skip
    assert "school = '第一中学'" in injected and "\\u" not in injected  # readable, unescaped
    for run in ("good", "down"):
        page = (out / run / "onboarding.html").read_text(encoding="utf-8")
        assert '<html lang="zh-CN"' in page and "Onboarding record" not in page
        assert "lmreg-run" not in page  # no temporary path where .env was looked for

    with (out / "summary.csv").open(encoding="utf-8-sig") as fh:
        rows = list(csv.reader(fh))
    header, by_run = rows[0], {row[0]: dict(zip(rows[0], row, strict=True)) for row in rows[1:]}
    assert header[:4] == ["运行编号", "状态", "错误", "学校"]
    assert by_run["good"]["状态"] == "成功" and by_run["down"]["状态"] == "失败"
    assert "Asia/Shanghai" in by_run["good"]["完成时间"]

    blockers = summaries["down"].go_live.blockers
    failed = {c.detail.rstrip(".。") for c in summaries["down"].failed_checks}
    assert failed, summaries["down"].checks
    joined = "\n".join(blockers)
    for cause in failed:
        assert joined.count(cause) == 1, blockers
    assert len(blockers) == len(set(blockers))
    assert all(CJK.search(b) for b in blockers), blockers

    index = (out / "index.html").read_text(encoding="utf-8")
    assert "<html lang='zh-CN'>" in index and "<h1>批量接入</h1>" in index
    assert "尚不能上线" in index and "Asia/Shanghai" in index
    for english in ("not ready", "Onboarding batch", "Updated", ">ok<", ">failed<"):
        assert english not in index
    assert "失败" in result.output and "成功" in result.output
