"""The plan room (lmreg_nb/plan): rows read once for batch and watch, every mistake at once.

In-process: files in tmp_path, no notebook run, no server.
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

HEADER = "run_id,env_file,school,contact_name,contact_mobile,contact_email,lang\n"
PROVIDER_SECRET = "smtp-Provider-Pw-4f9Qx27"


def _plan(folder: Path, body: str, header: str = HEADER) -> Path:
    path = folder / "plan.csv"
    path.write_text(header + body, encoding="utf-8")
    return path


def test_env_files_are_read_as_written_never_expanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The provider's own secrets, in the watch's environment (issue 42, FW14).
    monkeypatch.setenv("LMREG_NOTIFY_MAIL", f"mailtos://ops:{PROVIDER_SECRET}@smtp.example.cn")
    monkeypatch.setenv("LMREG_NOTIFY", f"json://hooks.example.cn/{PROVIDER_SECRET}")
    (tmp_path / "a.env").write_text(
        "LMREG_BASE_URL=https://platform.example.cn\n"
        "LMREG_APP_ID=x-${LMREG_NOTIFY_MAIL}-${LMREG_NOTIFY}-y\n"
        "LMREG_APP_SECRET=${LMREG_NOTIFY}\n"
    )
    values = load_env_file(tmp_path / "a.env", "a")
    assert values["LMREG_APP_ID"] == "x-${LMREG_NOTIFY_MAIL}-${LMREG_NOTIFY}-y"
    (school,) = read_fleet(_plan(tmp_path, "a,a.env,A,Li,13812345678,li@a.example,en\n"))
    assert school.settings is not None
    assert school.settings.app_id == "x-${LMREG_NOTIFY_MAIL}-${LMREG_NOTIFY}-y"
    assert school.settings.app_secret is not None
    assert PROVIDER_SECRET not in school.settings.app_secret.reveal()
    assert PROVIDER_SECRET not in repr(school)


def test_a_batch_row_env_file_is_not_expanded_either(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lmreg_nb.batch import plan as batch_plan

    monkeypatch.setenv("LMREG_NOTIFY", f"json://hooks.example.cn/{PROVIDER_SECRET}")
    (tmp_path / "a.env").write_text("LMREG_APP_ID=${LMREG_NOTIFY}\n")
    assert batch_plan.load_env_file(tmp_path / "a.env", "a") == {"LMREG_APP_ID": "${LMREG_NOTIFY}"}


def test_every_mistake_of_every_row_at_once(tmp_path: Path) -> None:
    (tmp_path / "a.env").write_text("LMREG_APP_ID=x\n")
    plan = _plan(
        tmp_path,
        "good,a.env,A,Li,13812345678,li@a.example,en\n"
        "bad,a.env,B,Wang,12345,not-an-email,en\n"
        "../up,a.env,C,Zhao,13812345678,x@b.c,en\n"
        "gone,missing.env,D,Qian,13812345678,q@d.example,en\n",
    )
    with pytest.raises(PlanError) as caught:
        read_rows(plan, check_contacts=True)
    problems = caught.value.problems
    assert len(problems) == 5, problems
    assert "line 3 (run_id bad), column contact_mobile" in problems[0]
    assert "line 3 (run_id bad), column contact_email" in problems[1]
    assert "line 4, column run_id: '../up'" in problems[2]
    assert "column contact_email: 'x@b.c'" in problems[3]
    assert "line 5 (run_id gone), column env_file" in problems[4]
    # As a ConfigurationError it is one line too: the first, and how many more.
    assert "\n" not in str(caught.value) and "4 more mistakes" in str(caught.value)


def test_the_batch_adds_its_own_columns_mistakes_to_the_same_list(tmp_path: Path) -> None:
    data = Path(__file__).resolve().parents[1] / "data"
    (tmp_path / "leaky.ipynb").write_bytes((data / "leaky.ipynb").read_bytes())
    plan = _plan(
        tmp_path,
        "a,leaky.ipynb,maybe,red,12345\nb,missing.ipynb,yes,,13812345678\n",
        header="run_id,notebook,fail,colour,contact_mobile\n",
    )
    with pytest.raises(PlanError) as caught:
        read_plan(plan, check_contacts=True)
    said = caught.value.problems
    assert any("(run_id a), column contact_mobile" in p for p in said), said
    assert any("(run_id a), column fail: 'maybe'" in p for p in said), said
    assert any("(run_id a), column colour: not a parameter" in p for p in said), said
    assert any("(run_id b), column notebook" in p for p in said), said


def test_the_cli_prints_each_mistake_on_its_own_line(tmp_path: Path) -> None:
    (tmp_path / "a.env").write_text("LMREG_APP_ID=x\n")
    plan = _plan(tmp_path, "bad,a.env,B,Wang,12345,not-an-email,en\n")
    result = CliRunner().invoke(
        main, ["--lang", "en", "watch", "--plan", str(plan), "--no-school-mail"]
    )
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 2 and all(ln.startswith("error: ") for ln in lines), lines
    assert "contact_mobile" in lines[0] and "contact_email" in lines[1]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_a_plan_that_is_no_file_says_what_it_is(tmp_path: Path) -> None:
    fifo = tmp_path / "plan.fifo"
    os.mkfifo(fifo)
    for path, kind in ((Path(os.devnull), "character device"), (fifo, "named pipe"),
                       (tmp_path, "folder")):  # fmt: skip
        with pytest.raises(ConfigurationError) as caught:
            read_rows(path)  # a FIFO is never opened: this would hang
        said = str(caught.value)
        assert kind in said and "does not exist" not in said, said
    with pytest.raises(ConfigurationError, match="does not exist"):
        read_rows(tmp_path / "nowhere.csv")


def test_an_env_file_that_is_a_fifo_is_a_row_problem_not_a_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "a.env")
    (school,) = read_fleet(_plan(tmp_path, "a,a.env,A,Li,13812345678,li@a.example,en\n"))
    assert school.settings is None and "named pipe" in school.problem


def test_the_watch_reads_a_plan_without_any_notebook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 44: the fleet builder no longer resolves and parses the onboarding notebook.
    import lmreg_nb.batch.plan as batch_plan
    import lmreg_nb.runner.parameters as parameters

    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("the watch opened a notebook")

    monkeypatch.setattr(batch_plan, "resolve_notebook", boom)
    monkeypatch.setattr(parameters, "declared_types", boom)
    (tmp_path / "a.env").write_text("LMREG_BASE_URL=https://platform.example.cn\n")
    plan = _plan(tmp_path, "a,a.env,A,Li,13812345678,li@a.example,en\n",
                 header=HEADER.rstrip("\n") + ",notebook,colour\n")  # fmt: skip
    (school,) = read_fleet(plan)
    assert school.key == "a" and school.contact_email == "li@a.example"


def test_school_names_are_one_line_and_capped(tmp_path: Path) -> None:
    (tmp_path / "a.env").write_text("LMREG_BASE_URL=https://platform.example.cn\n")
    long = "一" * 100_000
    plan = tmp_path / "plan.csv"
    plan.write_text(
        HEADER
        + 'a,a.env,"A\r\nBcc: evil@x.example",Li,13812345678,li@a.example,en\n'
        + "b,a.env,\u202eB\x1b[31m,Li,13812345678,li@a.example,en\n"
        + f"c,a.env,{long},Li,13812345678,li@a.example,en\n",
        encoding="utf-8",
    )
    a, b, c = read_fleet(plan)
    assert "\n" not in a.name and "\r" not in a.name
    assert "\u202e" not in b.name and "\x1b" not in b.name
    assert len(c.name) <= 100


# -- files another user can change: they decide what runs, with whose secrets --------------
# tmp_path is a folder only this user can write, under the sticky /tmp; the tests change
# the modes.

TRUST_ROW = "a,{env},A,Li,13812345678,li@a.example,en\n"
DATA = Path(__file__).resolve().parents[1] / "data"
POSIX_MODES = pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX modes")


def _env_in(folder: Path, mode: int) -> Path:
    """``folder/a.env`` (only this user can write the file), the folder set to ``mode``."""
    folder.mkdir()
    (folder / "a.env").write_text("LMREG_APP_ID=x\n")
    folder.chmod(mode)
    return folder / "a.env"


@POSIX_MODES
def test_a_plan_every_user_can_write_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "a.env").write_text("LMREG_APP_ID=x\n")
    plan = _plan(tmp_path, TRUST_ROW.format(env="a.env"))
    read_rows(plan)  # only this user can write it: read
    plan.chmod(0o666)
    with pytest.raises(ConfigurationError) as caught:
        read_rows(plan)
    said = str(caught.value)
    assert "another user can change it" in said and "writable by every user" in said, said
    assert "chmod go-w" in said and "\n" not in said


@POSIX_MODES
def test_an_env_file_in_a_folder_others_can_write_is_a_row_mistake(tmp_path: Path) -> None:
    # Anyone can swap a.env for their own: the folder is 0777 (the file itself is 0644).
    shared = _env_in(tmp_path / "shared", 0o777).parent
    plan = _plan(tmp_path, TRUST_ROW.format(env="shared/a.env"))
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


@POSIX_MODES
def test_a_sticky_folder_is_not_a_reason(tmp_path: Path) -> None:
    # /tmp's rule: anyone may add files, nobody may replace what is not theirs.
    assert others_can_change(_env_in(tmp_path / "sticky", 0o1777)) is None
    (row,) = read_rows(_plan(tmp_path, TRUST_ROW.format(env="sticky/a.env")))
    assert row.env["LMREG_APP_ID"] == "x"


@POSIX_MODES
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


@POSIX_MODES
def test_a_symbolic_link_counts_where_it_leads(tmp_path: Path) -> None:
    (tmp_path / "a.env").symlink_to(_env_in(tmp_path / "open", 0o777))
    assert f"{tmp_path / 'open'} above it" in (others_can_change(tmp_path / "a.env") or "")


@POSIX_MODES
def test_the_batch_command_says_it_in_one_line_and_runs_nothing(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "a\n", header="run_id\n")
    plan.chmod(0o666)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["--lang", "en", "batch", str(plan), "--out", str(out)])
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: plan "), lines
    assert "Traceback" not in result.output and not out.exists()
