"""The shipped notebooks: where they are found, and `lmreg-nb notebooks DIR`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from lmreg_nb.cli import main
from lmreg_nb.errors import ConfigurationError
from lmreg_nb.runner import shipped
from lmreg_nb.runner.shipped import NOTEBOOKS, copy_notebooks, notebook_path

REPO_NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def test_the_checkout_holds_the_six_notebooks() -> None:
    assert {p.stem for p in REPO_NOTEBOOKS.glob("*.ipynb")} == set(NOTEBOOKS)
    assert notebook_path("onboarding") == REPO_NOTEBOOKS / "onboarding.ipynb"


def test_lmreg_notebooks_wins_and_a_language_folder_is_preferred(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = tmp_path / "own"
    (own / "zh-CN").mkdir(parents=True)
    shutil.copy(REPO_NOTEBOOKS / "onboarding.ipynb", own / "onboarding.ipynb")
    shutil.copy(REPO_NOTEBOOKS / "onboarding.ipynb", own / "zh-CN" / "onboarding.ipynb")
    monkeypatch.setenv("LMREG_NOTEBOOKS", str(own))
    assert notebook_path("onboarding") == own / "onboarding.ipynb"
    assert notebook_path("onboarding", "zh_CN.UTF-8") == own / "zh-CN" / "onboarding.ipynb"
    assert notebook_path("onboarding", "en") == own / "onboarding.ipynb"
    # What the operator's folder lacks comes from the next place (the checkout here).
    assert notebook_path("01_get_token") == REPO_NOTEBOOKS / "01_get_token.ipynb"


def test_installed_package_data_comes_before_the_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "lmreg_nb"
    (package / "notebooks").mkdir(parents=True)
    (package / "notebooks" / "onboarding.ipynb").write_text("{}")
    monkeypatch.setattr(shipped, "_HERE", package)
    assert notebook_path("onboarding") == package / "notebooks" / "onboarding.ipynb"
    with pytest.raises(ConfigurationError, match="LMREG_NOTEBOOKS") as info:
        notebook_path("01_get_token")  # neither package data nor a checkout beside it
    assert str(info.value).count("\n") == 0


def test_copy_never_overwrites_a_changed_notebook_without_force(tmp_path: Path) -> None:
    dest = tmp_path / "my-onboarding"
    first = copy_notebooks(dest)
    assert sorted(first.written) == sorted(f"{n}.ipynb" for n in NOTEBOOKS)
    changed = dest / "onboarding.ipynb"
    changed.write_text(changed.read_text().replace("onboarding", "my own"))
    mine = changed.read_text()
    again = copy_notebooks(dest)
    assert again.kept == ["onboarding.ipynb"] and again.written == []
    assert len(again.unchanged) == len(NOTEBOOKS) - 1 and changed.read_text() == mine
    forced = copy_notebooks(dest, force=True)
    assert forced.written == ["onboarding.ipynb"]
    assert changed.read_bytes() == (REPO_NOTEBOOKS / "onboarding.ipynb").read_bytes()


def test_cli_notebooks_copies_six_and_says_how_to_open_them(tmp_path: Path) -> None:
    dest = tmp_path / "nb"
    result = CliRunner().invoke(main, ["--lang", "en", "notebooks", str(dest)])
    assert result.exit_code == 0, result.output
    assert sorted(p.stem for p in dest.glob("*.ipynb")) == sorted(NOTEBOOKS)
    assert f"{len(NOTEBOOKS)} notebooks ready in {dest}: jupyter lab {dest}" in result.output
    # .env.example comes along, documenting each LMREG_* variable; it is never a .env.
    assert "LMREG_APP_SECRET" in (dest / ".env.example").read_text()
    assert "wrote     .env.example" in result.output and not (dest / ".env").exists()
    (dest / "04_list_models.ipynb").write_text("{}")
    kept = CliRunner().invoke(main, ["notebooks", str(dest)])
    assert kept.exit_code == 0 and "kept      04_list_models.ipynb" in kept.output
    assert (dest / "04_list_models.ipynb").read_text() == "{}"
    a_file = tmp_path / "file"
    a_file.write_text("")
    bad = CliRunner().invoke(main, ["notebooks", str(a_file)])
    assert bad.exit_code == 2 and "give a folder" in bad.stderr


def test_the_chinese_notebooks_come_with_a_chinese_env_example(tmp_path: Path) -> None:
    """Issue 32 item 9: `.env.example`'s comments in the notebooks' language, same variables."""
    import re

    zh, en = tmp_path / "zh", tmp_path / "en"
    result = CliRunner().invoke(main, ["--lang", "zh-CN", "notebooks", str(zh)])
    assert result.exit_code == 0, result.output
    CliRunner().invoke(main, ["--lang", "en", "notebooks", str(en)])
    chinese, english = ((d / ".env.example").read_text(encoding="utf-8") for d in (zh, en))

    def variables(text: str) -> list[str]:
        return re.findall(r"^([A-Z_]+)=", text, re.MULTILINE)

    assert variables(chinese) == variables(english)
    comments = [line for line in chinese.splitlines() if line.startswith("#")]
    assert comments and all(re.search(r"[\u4e00-\u9fff]", line) for line in comments[:5])
    assert "# Platform base address" not in chinese
