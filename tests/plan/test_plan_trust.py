"""A plan, the env files and notebooks it names: refused when another user can change them.

They decide what runs and with which school's secrets: a plan row that names a
notebook in a folder anyone can write runs that person's code with the appSecret in
its environment. In-process: files in tmp_path (a folder only this user can
write, under the sticky /tmp), modes changed by the test.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from lmreg_nb.batch.plan import read_plan
from lmreg_nb.cli import main
from lmreg_nb.errors import ConfigurationError
from lmreg_nb.file_trust import others_can_change
from lmreg_nb.plan import PlanError, load_env_file, read_rows
from lmreg_nb.watch.fleet import read_fleet

pytestmark = pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX modes")

DATA = Path(__file__).resolve().parents[1] / "data"
ROW = "a,{env},A,Li,13812345678,li@a.example,en\n"
HEADER = "run_id,env_file,school,contact_name,contact_mobile,contact_email,lang\n"


def _plan(folder: Path, body: str, header: str = HEADER) -> Path:
    path = folder / "plan.csv"
    path.write_text(header + body, encoding="utf-8")
    return path


def test_a_plan_every_user_can_write_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "a.env").write_text("LMREG_APP_ID=x\n")
    plan = _plan(tmp_path, ROW.format(env="a.env"))
    read_rows(plan)  # only this user can write it: read
    plan.chmod(0o666)
    with pytest.raises(ConfigurationError) as caught:
        read_rows(plan)
    said = str(caught.value)
    assert "another user can change it" in said and "writable by every user" in said, said
    assert "chmod go-w" in said and "\n" not in said


def test_an_env_file_in_a_folder_others_can_write_is_a_row_mistake(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "a.env").write_text("LMREG_APP_ID=x\nLMREG_APP_SECRET=from-a-shared-folder\n")
    shared.chmod(0o777)  # anyone can swap a.env for their own (the file itself is 0644)
    plan = _plan(tmp_path, ROW.format(env="shared/a.env"))
    with pytest.raises(PlanError) as caught:
        read_rows(plan)
    (said,) = caught.value.problems
    assert "column env_file" in said and f"{shared} above it" in said, said
    # The watch keeps the school, with the reason and no settings to call anything with.
    (school,) = read_fleet(plan)
    assert school.settings is None and "another user can change it" in school.problem
    # The batch's --env-file too.
    with pytest.raises(ConfigurationError, match="another user can change it"):
        load_env_file(shared / "a.env", "--env-file")


def test_a_sticky_folder_is_not_a_reason(tmp_path: Path) -> None:
    # /tmp's rule: anyone may add files, nobody may replace what is not theirs.
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    (sticky / "a.env").write_text("LMREG_APP_ID=x\n")
    sticky.chmod(0o1777)
    assert others_can_change(sticky / "a.env") is None
    (row,) = read_rows(_plan(tmp_path, ROW.format(env="sticky/a.env")))
    assert row.env["LMREG_APP_ID"] == "x"


def test_a_notebook_a_row_names_is_refused_when_others_can_change_it(tmp_path: Path) -> None:
    notebook = tmp_path / "mine.ipynb"
    notebook.write_bytes((DATA / "empty.ipynb").read_bytes())
    plan = _plan(tmp_path, "a,mine.ipynb\n", header="run_id,notebook\n")
    (run,) = read_plan(plan)
    assert run.notebook == notebook
    notebook.chmod(0o666)
    with pytest.raises(PlanError) as caught:
        read_plan(plan)
    (said,) = caught.value.problems
    assert "(run_id a), column notebook" in said and "writable by every user" in said, said


def test_a_symbolic_link_counts_where_it_leads(tmp_path: Path) -> None:
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    (open_folder / "a.env").write_text("LMREG_APP_ID=x\n")
    open_folder.chmod(0o777)
    (tmp_path / "a.env").symlink_to(open_folder / "a.env")
    assert f"{open_folder} above it" in (others_can_change(tmp_path / "a.env") or "")


def test_the_batch_command_says_it_in_one_line_and_runs_nothing(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "a\n", header="run_id\n")
    plan.chmod(0o666)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["--lang", "en", "batch", str(plan), "--out", str(out)])
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: plan "), lines
    assert "Traceback" not in result.output and not out.exists()
