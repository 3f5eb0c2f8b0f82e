"""Notebook runs and batches: real papermill processes, a sandbox process, no secret on disk."""

from __future__ import annotations

import csv
import io
import json
import os
import pickle
import shutil
import tempfile
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import nbformat
import psutil
import pytest
from click.testing import CliRunner

from lmreg_nb.batch import (
    RunTask,
    execute_run,
    key_figures,
    read_plan,
    run_batch,
    run_notebook,
    write_index_html,
    write_summary_csv,
)
from lmreg_nb.cli import main
from lmreg_nb.errors import ConfigurationError, SecretLeakError, ValidationError
from lmreg_nb.records import read_records
from lmreg_nb.sandbox.process import SandboxInfo
from lmreg_nb.summary import Summary

DATA = Path(__file__).resolve().parents[1] / "data"
CANARY = "CanaryAppSecret-7f3Q9x2LmZ81"
CANARY_KEY = "sk-canary-model-key-44Rt0pW"
ONBOARDING_COLUMNS = "school,contact_name,contact_mobile,contact_email,model_name,check_requests"
#: The sleepy run's timeout: every run of the batch has it, and the five onboarding runs,
#: all at once beside the sleepy one (--jobs 6), take ~6 s each, ~9 s with both cores busy.
TIMEOUT_S = 18
RERUN_TIMEOUT_S = 5  # the rerun of the failed ones (the sleepy and the wrong secret)


def assert_no_secret(folder: Path, secrets: Iterable[str]) -> int:
    """No secret, raw, JSON-escaped or any 8-character slice, in any file under ``folder``."""
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert files
    for path in files:
        text = path.read_bytes().decode("utf-8", errors="replace")
        for secret in secrets:
            forms = {secret, json.dumps(secret)[1:-1]}
            forms |= {secret[i : i + 8] for i in range(len(secret) - 7)}
            leaked = [f for f in forms if f in text]
            assert not leaked, f"{path.relative_to(folder)} holds {len(leaked)} forms of a secret"
    return len(files)


def _kernels_under(folder: Path) -> list[int]:
    """Kernels whose connection file is under ``folder`` (a run's private temp folder)."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if "ipykernel" in cmdline and str(folder) in cmdline:
            found.append(proc.info["pid"])
    return found


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tempfile's folder for this test, to see that runs leave nothing in it."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


# ---------------------------------------------------------------- run_notebook


@pytest.mark.notebooks
def test_run_notebook_keeps_a_scrubbed_record_and_nothing_else(
    tmp_path: Path, private_tmp: Path
) -> None:
    env = {"LMREG_APP_SECRET": CANARY, "LMREG_MODEL_API_KEY": CANARY_KEY, "LMREG_APP_ID": "app-1"}
    out = tmp_path / "out"
    result = run_notebook(
        DATA / "leaky.ipynb", out, parameters={"school": "Leaky <School>", "fail": True}, env=env,
        timeout=120,
    )  # fmt: skip
    # The failing cell's exception, in one line, its secret masked to the last 4.
    assert result.status == "failed"
    assert result.error == f"RuntimeError: refused with …{CANARY[-4:]}"
    names = sorted(p.name for p in out.iterdir())
    assert names == ["leaky-short.html", "leaky.html", "leaky.ipynb"]
    assert assert_no_secret(out, [CANARY, CANARY_KEY]) == 3
    assert list(private_tmp.iterdir()) == []  # papermill's raw output is gone
    nb = nbformat.read(out / "leaky.ipynb", as_version=4)
    assert "widgets" not in nb.metadata and "parameters" not in nb.metadata.papermill
    # The run saw only the clean base plus its own env (no operator LMREG_* variable).
    names = read_records(out / "leaky.ipynb")["env_names"]
    assert {"LMREG_APP_SECRET", "LMREG_APP_ID", "PATH"} <= set(names)
    assert result.records["summary"]["school"] == "Leaky <School>"
    page = (out / "leaky.html").read_text()
    assert page.index('class="lmreg-summary"') < page.index("Leaky notebook")
    assert "Leaky &lt;School&gt;" in page and "Leaky <School>" not in page
    # A failed run shows its summary card, not papermill's banner; the short view has no code.
    assert "An Exception was encountered" not in page
    short = (out / "leaky-short.html").read_text()
    assert 'class="verdict' in short and "An Exception was encountered" not in short
    code = 'class="jp-CodeMirrorEditor jp-Editor jp-InputArea-editor"'
    assert code in page and code not in short


@pytest.mark.notebooks
def test_a_secret_the_scrubber_missed_means_nothing_is_written(
    tmp_path: Path, private_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lmreg_nb.runner.record

    # Simulate a scrubber that misses everything: the last gate must refuse the write.
    monkeypatch.setattr(lmreg_nb.runner.record, "scrub_notebook", lambda nb, secrets: nb)
    with pytest.raises(SecretLeakError, match="LMREG_APP_SECRET") as info:
        run_notebook(DATA / "leaky.ipynb", tmp_path / "out", parameters={},
                     env={"LMREG_APP_SECRET": CANARY}, timeout=120)  # fmt: skip
    assert CANARY not in str(info.value)
    assert list((tmp_path / "out").iterdir()) == []
    assert list(private_tmp.iterdir()) == []


def test_run_notebook_refuses_bad_input_before_starting_anything(
    tmp_path: Path, private_tmp: Path
) -> None:
    env = {"LMREG_MODEL_API_KEY": CANARY_KEY}
    with pytest.raises(ValidationError, match="school: holds the value of LMREG_MODEL_API_KEY"):
        run_notebook(DATA / "leaky.ipynb", tmp_path / "o", parameters={"school": CANARY_KEY},
                     env=env)  # fmt: skip
    with pytest.raises(ValidationError, match="token: looks like a secret"):
        run_notebook(DATA / "leaky.ipynb", tmp_path / "o", parameters={"token": "x"}, env=env)
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{")
    with pytest.raises(ConfigurationError, match="not a readable notebook"):
        run_notebook(broken, tmp_path / "o", parameters={}, env=env)
    assert not (tmp_path / "o").exists() and list(private_tmp.iterdir()) == []


# ---------------------------------------------------------------- plans


def _plan(folder: Path, text: str) -> Path:
    path = folder / "plan.csv"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("school\nx\n", "plan.csv line 1: no run_id column"),
        ("run_id,notebook\na,leaky.ipynb\na,leaky.ipynb\n",
         "line 3, column run_id: a is used twice"),
        ("run_id,notebook\n../up,leaky.ipynb\n", "line 2, column run_id: '../up'"),
        ("run_id,notebook\na,missing.ipynb\n", "line 2 (run_id a), column notebook:"),
        ("run_id,notebook,colour\na,leaky.ipynb,red\n", "column colour: not a parameter of leaky"),
        ("run_id,notebook,fail\na,leaky.ipynb,\nb,leaky.ipynb,maybe\n",
         "line 3 (run_id b), column fail: 'maybe' is not a true/false value"),
        ("run_id,notebook,app_secret\na,leaky.ipynb,x\n", "column app_secret looks like a secret"),
        ("run_id,notebook,env_file\na,leaky.ipynb,nope.env\n", "column env_file: env file"),
        ("run_id,notebook,env_file,school\na,leaky.ipynb,a.env,CanaryAppSecret-7f3Q9x2LmZ81\n",
         "column school: holds a secret"),
        ("run_id,notebook\na,leaky.ipynb,extra\n", "line 2: more values than columns"),
        ("run_id,notebook\n", "has no runs"),
    ],
)  # fmt: skip
def test_a_bad_plan_names_the_line_and_column(tmp_path: Path, body: str, message: str) -> None:
    shutil.copy(DATA / "leaky.ipynb", tmp_path)
    (tmp_path / "a.env").write_text(f"LMREG_APP_SECRET={CANARY}\n")
    with pytest.raises(ConfigurationError) as info:
        read_plan(_plan(tmp_path, body))
    assert message in str(info.value)
    assert CANARY not in str(info.value)


def test_plan_types_follow_the_parameters_cell(tmp_path: Path) -> None:
    shutil.copy(DATA / "leaky.ipynb", tmp_path)
    path = _plan(tmp_path, "run_id,notebook,fail,school\na,leaky.ipynb,yes,007\nb,leaky.ipynb,,\n")
    a, b = read_plan(path)
    assert a.parameters == {"fail": True, "school": "007"}  # a str stays a str
    assert b.parameters == {}  # empty cells keep the notebook's defaults
    assert a.notebook == tmp_path / "leaky.ipynb" and a.line == 2


def test_cli_bad_plan_exits_2_in_one_line_and_runs_nothing(tmp_path: Path) -> None:
    shutil.copy(DATA / "leaky.ipynb", tmp_path)
    plan = _plan(tmp_path, "run_id,notebook,fail\nok,leaky.ipynb,no\nbad,leaky.ipynb,perhaps\n")
    result = CliRunner().invoke(main, ["batch", str(plan), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert result.stderr.strip().count("\n") == 0
    assert "line 3 (run_id bad), column fail" in result.stderr
    assert not (tmp_path / "out").exists()


def _summary(**changes: object) -> Summary:
    data = {
        "school": "北京第一中学", "status": "ok",
        "steps": [{"name": "token", "passed": True, "detail": ""}],
        "checks": [
            {"name": "stream", "passed": True, "severity": "error", "detail": ""},
            {"name": "url-https", "passed": False, "severity": "warning", "detail": "http"},
            {"name": "url-public-host", "passed": False, "severity": "warning", "detail": "lo"},
        ],
        "performance": {"requests": 20, "errors": 0, "ttft_ms": {"p50": 41.5},
                        "requests_per_s": 12.5},
        "capacity": {"capacity": {"concurrency": 8}}, "class_size": 40,
        "go_live": {"ready": False, "blockers": ["The platform cannot reach 127.0.0.1"]},
    }  # fmt: skip
    return Summary.from_json({**data, **changes})


def test_summary_csv_is_for_excel_and_counts_warnings_apart(tmp_path: Path) -> None:
    runs = [
        {"run_id": "r1", "status": "ok", **key_figures(_summary())},
        {"run_id": "r2", "status": "failed", "school": "第二中学", "error": "timed out after 5 s"},
    ]
    write_summary_csv(tmp_path / "s.csv", runs)
    raw = (tmp_path / "s.csv").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")  # the BOM: Excel then reads UTF-8
    rows = list(csv.DictReader(io.StringIO(raw.decode("utf-8-sig"))))
    assert rows[0]["school"] == "北京第一中学"
    assert (rows[0]["checks_passed"], rows[0]["checks_failed"], rows[0]["warnings"]) == (
        "1",
        "0",
        "2",
    )
    assert rows[0]["ready"] == "no" and rows[0]["blockers"] == "The platform cannot reach 127.0.0.1"
    assert (rows[0]["ttft_p50_ms"], rows[0]["capacity"], rows[0]["class_size"]) == (
        "41.5",
        "8",
        "40",
    )
    assert rows[1]["school"] == "第二中学" and rows[1]["ready"] == ""
    write_index_html(tmp_path / "i.html", runs)
    page = (tmp_path / "i.html").read_text(encoding="utf-8")
    assert "not ready" in page and "<li>The platform cannot reach 127.0.0.1</li>" in page
    assert "1 passed, 0 failed, 2 warnings" in page and "TTFT p50 41.5 ms" in page
    # The one capacity number, with enough or not for the class beside it (issue 40).
    assert "serves 8 chats at once within the SLO. Not enough for a class of 40." in page
    assert "第二中学" in page
    assert "2 runs: 1 not ok, 0 ready for go-live." in page


def test_summary_csv_and_index_escape_untrusted_values(tmp_path: Path) -> None:
    runs = [{"run_id": "r1", "status": "failed", "error": "=HYPERLINK(\"x\")", "school": "<b>S</b>",
             "duration_s": 1.5, "html": "onboarding.html", "errors": -1}]  # fmt: skip
    write_summary_csv(tmp_path / "s.csv", runs)
    write_index_html(tmp_path / "i.html", runs)
    row = next(csv.DictReader((tmp_path / "s.csv").open(encoding="utf-8-sig")))
    assert row["error"] == '\'=HYPERLINK("x")' and row["errors"] == "-1"
    assert row["html"] == "r1/onboarding.html"
    page = (tmp_path / "i.html").read_text()
    assert "&lt;b&gt;S&lt;/b&gt;" in page and "<b>S</b>" not in page
    assert 'href="r1/onboarding.html"' in page


@pytest.mark.notebooks
def test_the_submitted_function_runs_in_a_process_pool(tmp_path: Path) -> None:
    task = RunTask("p1", str(DATA / "leaky.ipynb"), str(tmp_path / "p1"), {"school": "P"},
                   {"LMREG_APP_SECRET": CANARY}, 120, "fp")  # fmt: skip
    assert pickle.loads(pickle.dumps(execute_run)) is execute_run
    assert CANARY not in repr(task)
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        result = pool.submit(execute_run, task).result(timeout=120)
    assert result["status"] == "ok" and result["school"] == "P"
    assert json.loads((tmp_path / "p1" / "result.json").read_text())["fingerprint"] == "fp"
    assert_no_secret(tmp_path, [CANARY])


# ---------------------------------------------------------------- against the sandbox


def _env_file(path: Path, sandbox_process: SandboxInfo, app_id: str, app_secret: str) -> Path:
    env = {**sandbox_process.env(), "LMREG_APP_ID": app_id, "LMREG_APP_SECRET": app_secret}
    path.write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    return path


@pytest.mark.notebooks
def test_batch_of_six_survives_failures_and_reruns_only_those(
    sandbox_process: SandboxInfo, tmp_path: Path, private_tmp: Path
) -> None:
    a, b = sandbox_process.add_app("batch-school-a"), sandbox_process.add_app("batch-school-b")
    wrong_secret = "Wrong-" + a["app_secret"][::-1]
    _env_file(tmp_path / "a.env", sandbox_process, a["app_id"], a["app_secret"])
    _env_file(tmp_path / "b.env", sandbox_process, b["app_id"], b["app_secret"])
    _env_file(tmp_path / "wrong.env", sandbox_process, a["app_id"], wrong_secret)
    shutil.copy(DATA / "sleepy.ipynb", tmp_path)
    people = "Li Hua,13812345678,ai@school.example"
    plan = _plan(
        tmp_path,
        # class_size 0: this test is about failures and reruns, not capacity.
        f"run_id,notebook,env_file,{ONBOARDING_COLUMNS},class_size\n"
        f"slow,sleepy.ipynb,a.env,,,,,,,\n"  # first: it sleeps while the others run
        f"a1,,a.env,School A,{people},batch-a1,0,0\n"
        f"a2,onboarding,a.env,School A,{people},batch-a2,0,0\n"
        f"b1,,b.env,School B,{people},batch-b1,0,0\n"
        f"b2,,b.env,School B,{people},batch-b2,0,0\n"
        f"wrong,,wrong.env,School W,{people},batch-w,0,0\n",
    )
    out = tmp_path / "out"
    first = CliRunner().invoke(
        main, ["batch", str(plan), "--out", str(out), "--jobs", "6", "--timeout", str(TIMEOUT_S)]
    )
    assert first.exit_code == 1, first.output
    with (out / "summary.csv").open(encoding="utf-8-sig") as fh:
        rows = {r["run_id"]: r for r in csv.DictReader(fh)}
    assert list(rows) == ["slow", "a1", "a2", "b1", "b2", "wrong"]
    assert {k for k, r in rows.items() if r["status"] == "ok"} == {"a1", "a2", "b1", "b2"}
    assert "40102" in rows["wrong"]["error"] and "LMREG_APP_SECRET" in rows["wrong"]["error"]
    assert rows["slow"]["error"] == f"timed out after {TIMEOUT_S} s"
    slow = nbformat.read(out / "slow" / "sleepy.ipynb", as_version=4)
    assert f"stopped: timed out after {TIMEOUT_S} s" in slow.cells[0].source
    assert _kernels_under(private_tmp) == []  # the timed-out run's kernel was stopped too
    assert rows["a1"]["school"] == "School A" and int(rows["a1"]["models"]) >= 1
    assert rows["b2"]["summary_status"] == "ok" and int(rows["b2"]["checks_passed"]) > 0
    for run_id in rows:
        stem = "sleepy" if run_id == "slow" else "onboarding"
        assert (out / run_id / f"{stem}.html").is_file()
        assert f'href="{run_id}/{stem}.html"' in (out / "index.html").read_text()
    finished = {k: json.loads((out / k / "result.json").read_text())["finished_at"] for k in rows}
    stamps = {k: (out / k / "result.json").stat().st_mtime_ns for k in rows}

    # Only the two failed runs run again, and both fail again: a short timeout will do
    # (the sleepy one would otherwise sleep its whole TIMEOUT_S once more).
    second = run_batch(plan, out, jobs=2, timeout=RERUN_TIMEOUT_S, progress=False)
    assert sorted(second.executed) == ["slow", "wrong"]
    assert sorted(second.skipped) == ["a1", "a2", "b1", "b2"]
    assert sorted(second.failed) == ["slow", "wrong"]
    for run_id in ("a1", "a2", "b1", "b2"):
        assert (out / run_id / "result.json").stat().st_mtime_ns == stamps[run_id]
        assert (
            json.loads((out / run_id / "result.json").read_text())["finished_at"]
            == finished[run_id]
        )
    assert (out / "wrong" / "result.json").stat().st_mtime_ns != stamps["wrong"]

    secrets = [a["app_secret"], b["app_secret"], wrong_secret, sandbox_process.model_api_key]
    assert assert_no_secret(out, secrets) >= 6 * 4 + 2
    assert list(private_tmp.iterdir()) == []


@pytest.mark.notebooks
def test_onboard_command_writes_no_secret(
    sandbox_process: SandboxInfo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = sandbox_process.add_app("records-onboard")
    for name, value in {**sandbox_process.env(), "LMREG_APP_ID": app["app_id"],
                        "LMREG_APP_SECRET": app["app_secret"]}.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    out = tmp_path / "onboard"
    parameters = {
        "school": "Onboard School", "contact_name": "Li Hua", "contact_mobile": "13812345678",
        "contact_email": "ai@school.example", "model_name": "records-onboard",
        "check_requests": "2", "class_size": "0",
    }  # fmt: skip
    args = ["onboard", "--out", str(out)]
    for name, value in parameters.items():
        args += ["-p", name, value]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert read_records(out / "onboarding.ipynb")["summary"]["status"] == "ok"
    assert_no_secret(out, [app["app_secret"], sandbox_process.model_api_key])
    # The run exchanged its token in a private cache: the user's default one is untouched.
    assert not (Path(os.environ["XDG_CACHE_HOME"]) / "lmreg_nb" / "tokens.json").exists()
    assert "go-live: not ready" in result.output and "onboarding-short.html" in result.output
