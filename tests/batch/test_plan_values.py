"""The plan check refuses the values `onboard -p` refuses, every one at once (found by the
user pass of the fifth release).

Before: a row with ``class_size -1``, ``check_requests -5``, ``context_need 99999999`` and
``lang fr`` passed the plan check; the run then failed on the first of them only
("class_size: must be 0 or more"), and with ``lang fr`` the school's record and its
summary.csv cells came out in English in a Chinese batch. A plan of 50 schools took a
run per mistake. In-process: files in tmp_path, no notebook run.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from lmreg_nb.batch.plan import read_plan
from lmreg_nb.cli import main
from lmreg_nb.plan import PlanError

_CJK = re.compile(r"[\u4e00-\u9fff]")
HEADER = "run_id,env_file,school,check_requests,class_size,context_need,lesson_tokens,lang\n"


def _plan(folder: Path, body: str) -> Path:
    (folder / "a.env").write_text("LMREG_APP_ID=x\n")
    path = folder / "plan.csv"
    path.write_text(HEADER + body, encoding="utf-8")
    return path


def test_out_of_range_values_are_mistakes_of_the_plan(tmp_path: Path) -> None:
    plan = _plan(
        tmp_path,
        "good,a.env,A,20,40,8000,1500,zh-CN\nbad,a.env,B,-5,-1,99999999,0,fr\n",
    )
    with pytest.raises(PlanError) as caught:
        read_plan(plan)
    said = caught.value.problems
    assert not any("run_id good" in p for p in said), said
    for column in ("check_requests", "class_size", "context_need", "lesson_tokens", "lang"):
        assert sum(f"(run_id bad), column {column}" in p for p in said) == 1, (column, said)
    assert len(said) == 5, said


def test_in_chinese_one_line_each_and_exit_2(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "bad,a.env,B,-5,5000,8000,1500,fr\n")
    result = CliRunner().invoke(
        main, ["--lang", "zh-CN", "batch", str(plan), "--out", str(tmp_path / "runs")]
    )
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 3, lines
    assert all(ln.startswith("错误：") and "列：" in ln for ln in lines), lines
    assert "must" not in result.stderr, lines  # said in Chinese, not the English rule
    assert not (tmp_path / "runs").exists()  # nothing ran


def test_an_env_file_that_expects_expansion_is_named_before_any_run(tmp_path: Path) -> None:
    # ${VAR} is never expanded (it could carry the provider's secrets to a platform): a
    # row whose env_file relies on it would send "${SCHOOL_SECRET}" as its appSecret and
    # fail as "appId or appSecret is wrong, ask the provider". Said up front instead.
    (tmp_path / "b.env").write_text(
        "LMREG_APP_ID=app-b\nLMREG_APP_SECRET=${SCHOOL_SECRET}\nOTHER=${NOT_OURS}\n"
    )
    path = tmp_path / "plan.csv"
    path.write_text("run_id,env_file,school\nb,b.env,B\n", encoding="utf-8")
    with pytest.raises(PlanError) as caught:
        read_plan(path)
    (said,) = caught.value.problems
    assert "(run_id b), column env_file" in said and "LMREG_APP_SECRET" in said, said
    assert "SCHOOL_SECRET" not in said and "OTHER" not in said  # names the variable only


CONTACT_COLUMNS = (
    "run_id,env_file,lang,school,contact_name,contact_mobile,contact_email,model_name,"
    "registry_url,check_requests,class_size"
)


def test_a_bad_contact_card_stops_the_batch_before_anything_runs(tmp_path: Path) -> None:
    """The plan check applies the contact rules up front: in Chinese, naming the line and
    the column, and no run started (issue 33); a wrong mobile and a wrong e-mail are both
    named at once, one line each, as README.zh-CN promises (issue 43)."""
    (tmp_path / "a.env").write_text("LMREG_APP_ID=x\n")
    card = "王芳,13812345678,ai@school.edu.cn"
    (tmp_path / "plan.csv").write_text(
        f"{CONTACT_COLUMNS}\n"
        f"good,a.env,,第一中学,{card},zh-good,,0,0\n"
        f"card,a.env,,第二中学,王芳,12345,not-an-email,zh-card,,0,0\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main, ["--lang", "zh-CN", "batch", str(tmp_path / "plan.csv"), "--out", str(out)]
    )
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 2 and "Traceback" not in result.output, result.output
    mobile, email = lines
    assert "3" in mobile and "contact_mobile" in mobile and _CJK.search(mobile), mobile
    assert "3" in email and "contact_email" in email and _CJK.search(email), email
    assert all(line.startswith("错误：") for line in lines), lines
    assert not (out / "good").exists() and not (out / "card").exists()
