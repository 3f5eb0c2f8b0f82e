"""Paths given to the CLI: one line, never a traceback, never a write through a link
(issue 20, item 5).

`lmreg-nb notebooks DIR` used to follow a symbolic link planted in DIR (and
--force overwrote its target); a folder under a file, a folder on /proc, a
figure on /dev/full or in a missing folder were OSError tracebacks. Each path
option (demo, onboard, batch --out; check, capacity --plot; notebooks DIR;
LMREG_TOKEN_CACHE) is tried here with a planted file.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from fakes.hostile import hostile_server

from lmreg_nb.cli import main
from lmreg_nb.runner.shipped import NOTEBOOKS

pytestmark = pytest.mark.timeout(120)


def _cli(*args: str, env: dict[str, str] | None = None) -> Result:
    # catch_exceptions=False: a traceback fails the test instead of hiding in result.exception.
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def _one_line_error(result: Result, code: int) -> str:
    assert result.exit_code == code, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


# -- notebooks DIR: never through a link -------------------------------------------


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file outside DIR that an attacker wants overwritten."""
    path = tmp_path / "elsewhere" / "victim.txt"
    path.parent.mkdir()
    path.write_text("the school's own file")
    return path


@pytest.mark.parametrize("force", [False, True], ids=["plain", "force"])
def test_notebooks_never_writes_through_a_symbolic_link(
    tmp_path: Path, victim: Path, force: bool
) -> None:
    dest = tmp_path / "nb"
    dest.mkdir()
    (dest / "01_get_token.ipynb").symlink_to(victim)
    dangling = tmp_path / "elsewhere" / "created.ipynb"
    (dest / "02_register_model.ipynb").symlink_to(dangling)
    result = _cli("notebooks", str(dest), *(["--force"] if force else []))
    assert result.exit_code == 1, result.output
    assert victim.read_text() == "the school's own file"
    assert not dangling.exists()
    refused = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(refused) == 2 and all("symbolic link" in line for line in refused), refused
    assert (dest / "01_get_token.ipynb").is_symlink()  # refused, left as it is
    assert (dest / "03_modify_model.ipynb").is_file()  # the others are copied


def test_notebooks_refuses_a_fifo_or_a_folder_in_place_of_a_notebook(tmp_path: Path) -> None:
    dest = tmp_path / "nb"
    dest.mkdir()
    os.mkfifo(dest / "01_get_token.ipynb")  # reading it would wait forever
    (dest / "02_register_model.ipynb").mkdir()
    result = _cli("notebooks", str(dest), "--force")
    assert result.exit_code == 1, result.output
    assert len([line for line in result.stderr.splitlines() if line.strip()]) == 2
    assert sum((dest / f"{stem}.ipynb").is_file() for stem in NOTEBOOKS) == len(NOTEBOOKS) - 2


def test_notebooks_overwrites_with_force_without_writing_through_a_hard_link(
    tmp_path: Path,
) -> None:
    dest = tmp_path / "nb"
    dest.mkdir()
    other = tmp_path / "other.ipynb"
    other.write_text("{}")
    os.link(other, dest / "01_get_token.ipynb")
    assert _cli("notebooks", str(dest), "--force").exit_code == 0
    assert other.read_text() == "{}"  # replaced in DIR, not written into the shared file
    assert (dest / "01_get_token.ipynb").read_text() != "{}"


@pytest.mark.parametrize("where", ["under-a-file", "proc"])
def test_notebooks_folder_that_cannot_be_made_is_one_line(tmp_path: Path, where: str) -> None:
    (tmp_path / "afile").write_text("x")
    folder = tmp_path / "afile" / "nb" if where == "under-a-file" else Path("/proc/lmreg-nb-x")
    line = _one_line_error(_cli("notebooks", str(folder)), 2)
    assert str(folder) in line


# -- --out of demo, onboard, batch: checked before anything starts ----------------------


def _plan(tmp_path: Path) -> Path:
    plan = tmp_path / "plan.csv"
    empty = Path(__file__).resolve().parents[1] / "data" / "empty.ipynb"
    plan.write_text(f"run_id,notebook\nr1,{empty}\n")
    return plan


@pytest.mark.parametrize("command", ["demo", "onboard", "batch"])
@pytest.mark.parametrize("where", ["under-a-file", "proc"])
def test_out_folder_that_cannot_be_made_is_one_line_before_anything_runs(
    tmp_path: Path, command: str, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "afile").write_text("x")
    out = str(tmp_path / "afile" / "out") if where == "under-a-file" else "/proc/lmreg-nb-out"
    started: list[str] = []
    from lmreg_nb.sandbox import process

    # Nothing may start (a sandbox, a run) before the folder is known to work.
    monkeypatch.setattr(process, "running_sandbox", lambda **kw: started.append("sandbox"))
    args = {
        "demo": ["demo", "--out", out],
        "onboard": ["onboard", "--out", out, "-p", "school", "S", "-p", "contact_name", "C",
                    "-p", "contact_mobile", "1", "-p", "contact_email", "a@b.example",
                    "-p", "model_name", "m"],
        "batch": ["batch", str(_plan(tmp_path)), "--out", out],
    }[command]  # fmt: skip
    env = {
        "LMREG_BASE_URL": "http://127.0.0.1:9",
        "LMREG_TOKEN": "TOKEN-paths-0123456789",
        "LMREG_ENV": "env",
        "LMREG_MODEL_API_KEY": "sk-paths-0123456789",
        "LMREG_MODEL_NAME": "m",
        "LMREG_MODEL_URL": "https://llm.example/v1/chat/completions",
    }
    line = _one_line_error(_cli(*args, env=env), 2)
    assert "--out" in line and started == []


# -- --plot of check and capacity ----------------------------------------------------


def _endpoint_env(url: str) -> dict[str, str]:
    return {
        "LMREG_MODEL_URL": url,
        "LMREG_MODEL_API_KEY": "sk-figure-0123456789",
        "LMREG_MODEL_NAME": "m",
        "LMREG_TIMEOUT": "2",
    }


@pytest.mark.parametrize("command", ["check", "capacity"])
def test_a_figure_in_a_missing_folder_is_a_usage_error_before_measuring(
    tmp_path: Path, command: str
) -> None:
    figure = tmp_path / "missing" / "fig.png"
    with hostile_server() as base:
        url = f"{base}/e500all/v1/chat/completions"
        result = _cli(command, "--plot", str(figure), env=_endpoint_env(url))
    line = _one_line_error(result, 2)
    assert "--plot" in line and str(figure.parent) in line
    assert "requests" not in result.stdout  # nothing was measured


@pytest.mark.parametrize(
    "args",
    [
        ["check", "--requests", "2"],
        ["capacity", "--max-concurrency", "1", "--level-seconds", "0.1"],
    ],
    ids=["check", "capacity"],
)
@pytest.mark.parametrize("figure", ["/dev/full", "/proc/lmreg-nb-fig.png"])
def test_a_figure_that_cannot_be_written_is_one_line(args: list[str], figure: str) -> None:
    from fakes import hosts

    from lmreg_nb.sandbox.school_model import MockModelConfig, create_app

    key = "sk-figure-0123456789"
    config = MockModelConfig(api_key=key, ttft_ms=5, itl_ms=2, tokens=4)
    with hosts.served(create_app(config)) as base:
        env = {**_endpoint_env(f"{base}/v1/chat/completions"), "LMREG_MODEL_API_KEY": key}
        result = _cli(*args, "--plot", figure, env=env)
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert any(f"could not save the figure to {figure}" in line for line in errors), result.stderr
    assert not Path(figure + ".png").exists()  # matplotlib appended .png to a bare name


# -- output on /dev/full, and OSErrors no command expected --------------------------


def test_a_token_cache_under_a_file_does_not_stop_the_command(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from fakes.loopback_platform import cli_env, loopback_platform

    (tmp_path / "afile").write_text("x")
    with loopback_platform() as (base, _script):
        env = cli_env(base, tmp_path, LMREG_TOKEN_CACHE=str(tmp_path / "afile" / "tokens.json"))
        mine = {k: v for k, v in env.items() if k.startswith("LMREG_") or k == "HOME"}
        result = CliRunner().invoke(main, ["token"], env=mine)
    assert result.exit_code == 0 and result.exception is None, result.output
    # It says what to fix (a warning: pytest's log capture holds it in this process).
    assert "LMREG_TOKEN_CACHE" in result.stderr + caplog.text
