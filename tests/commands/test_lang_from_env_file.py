"""LMREG_LANG written in a .env file sets the command's language, as the README says
("也可以写在 .env 里"; found by the user pass of the fifth release).

Before: the notebooks read it from .env, the CLI only from the environment, so a school
that configured everything in .env got English lines from `check` and `token`, and
`onboard` ran the English notebook and wrote an English record and principal's page.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from lmreg_nb.cli import main
from lmreg_nb.i18n import current_language, set_language

URL = "http://127.0.0.1:9/v1/chat/completions"


@pytest.fixture(autouse=True)
def _english_after() -> object:
    yield None
    set_language("en")


def _check(env: dict[str, str | None], *args: str) -> str:
    base: dict[str, str | None] = {"LMREG_LANG": None, "LMREG_MODEL_API_KEY": None, "LC_ALL": "C"}
    result = CliRunner().invoke(main, [*args, "check", URL, "--model", "m"], env={**base, **env})
    assert result.exit_code == 2, result.output
    return result.output


def test_a_named_env_file_sets_the_language(tmp_path: Path) -> None:
    env_file = tmp_path / "school.env"
    env_file.write_text("LMREG_LANG=zh-CN\n", encoding="utf-8")
    out = _check({"LMREG_ENV_FILE": str(env_file)})
    assert out.strip().startswith("错误："), out
    assert current_language() == "zh-CN"


def test_a_searched_env_file_sets_the_language(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".env").write_text("LMREG_LANG=zh-CN\n", encoding="utf-8")
    tmp_path.chmod(0o700)
    monkeypatch.chdir(tmp_path)
    out = _check({"LMREG_ENV_FILE": None})
    assert out.strip().startswith("错误："), out


def test_the_environment_and_lang_still_come_first(tmp_path: Path) -> None:
    env_file = tmp_path / "school.env"
    env_file.write_text("LMREG_LANG=zh-CN\n", encoding="utf-8")
    out = _check({"LMREG_ENV_FILE": str(env_file), "LMREG_LANG": "en"})
    assert out.strip().startswith("error:"), out
    out = _check({"LMREG_ENV_FILE": str(env_file)}, "--lang", "en")
    assert out.strip().startswith("error:"), out


def test_the_commands_list_follows_it_too(tmp_path: Path) -> None:
    env_file = tmp_path / "school.env"
    env_file.write_text("LMREG_LANG=zh-CN\n", encoding="utf-8")
    env = {"LMREG_LANG": None, "LC_ALL": "C", "LMREG_ENV_FILE": str(env_file)}
    result = CliRunner().invoke(main, ["--help"], env=env)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("用法："), result.output[:200]


def test_a_env_file_not_read_is_said_once_not_once_per_look(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Looking for the language reads the settings before the command does: its warning
    (a .env another user could change) is the command's to say, once."""
    (tmp_path / ".env").write_text("LMREG_LANG=zh-CN\n", encoding="utf-8")
    (tmp_path / ".env").chmod(0o666)
    tmp_path.chmod(0o700)
    monkeypatch.chdir(tmp_path)
    with caplog.at_level("WARNING", logger="lmreg_nb"):
        _check({"LMREG_ENV_FILE": None})
    said = [r for r in caplog.records if "another user could change it" in r.getMessage()]
    assert len(said) == 1, [r.getMessage() for r in said]
