"""`lmreg-nb onboard` / `demo` arguments: language, class size, environment of the run.

The run itself is replaced by a recorder here (papermill runs are tested in
test_batch.py and test_runs.py); these tests check what the commands hand it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from lmreg_nb import i18n
from lmreg_nb.cli import main

ONBOARD = ["onboard", "-p", "school", "S", "-p", "contact_name", "Li Hua",
           "-p", "contact_mobile", "13812345678", "-p", "contact_email", "a@b.example",
           "-p", "model_name", "m"]  # fmt: skip


def test_lang_reaches_the_notebook_and_the_token_cache_stays_private(
    recorded: list[dict[str, Any]],
) -> None:
    result = CliRunner().invoke(main, ["--lang", "zh-CN", *ONBOARD, "-p", "class_size", "40"])
    assert result.exit_code == 0, result.output
    (call,) = recorded
    assert call["parameters"]["lang"] == "zh-CN" and call["parameters"]["class_size"] == 40
    assert call["env"]["LMREG_LANG"] == "zh-CN"
    assert "LMREG_TOKEN_CACHE" not in call["env"]  # the run makes a private one
    assert not any("secret-value" in str(v) for v in call["parameters"].values())
    i18n.set_language("en")
    again = CliRunner().invoke(main, ["--lang", "zh-CN", *ONBOARD, "-p", "lang", "en"])
    assert again.exit_code == 0 and recorded[1]["parameters"]["lang"] == "en"


def test_a_bad_lang_parameter_is_one_line_and_exit_2(recorded: list[dict[str, Any]]) -> None:
    result = CliRunner().invoke(main, [*ONBOARD, "-p", "lang", "fr"])
    assert result.exit_code == 2 and "lang" in result.stderr
    assert result.stderr.count("\n") == 1 and not recorded


def _onboarding_with(folder: Path, parameters: str) -> Path:
    """An onboarding notebook of our own (LMREG_NOTEBOOKS) declaring ``parameters``."""
    import nbformat

    cell = nbformat.v4.new_code_cell(parameters)
    cell.metadata["tags"] = ["parameters"]
    nb = nbformat.v4.new_notebook(cells=[cell])
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "P"}
    folder.mkdir()
    nbformat.write(nb, folder / "onboarding.ipynb")
    return folder


def test_onboard_types_parameters_as_the_notebook_declares_them(
    recorded: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A parameter the notebook gained (context_need) needs no second list in the command.
    declared = 'school = ""\ncontact_name = ""\ncontact_mobile = ""\ncontact_email = ""\n'
    declared += 'model_name = ""\ncontext_need = 8000\nlang = ""\n'
    monkeypatch.setenv("LMREG_NOTEBOOKS", str(_onboarding_with(tmp_path / "nb", declared)))
    result = CliRunner().invoke(main, [*ONBOARD, "-p", "context_need", "9000"])
    assert result.exit_code == 0, result.output
    assert recorded[0]["parameters"]["context_need"] == 9000
    bad = CliRunner().invoke(main, [*ONBOARD, "-p", "context_need", "lots"])
    assert bad.exit_code == 2 and "context_need: must be a whole number" in bad.stderr
    unknown = CliRunner().invoke(main, [*ONBOARD, "-p", "class_size", "40"])
    assert unknown.exit_code == 2
    assert "class_size: is not a parameter of onboarding; use one of school," in unknown.stderr
    assert len(recorded) == 1


@pytest.mark.parametrize(("lang", "error"), [("en", "Error:"), ("zh-CN", "错误：")])
@pytest.mark.parametrize("size", ["99999999999", "1025"])
def test_demo_bounds_the_class_size_before_anything_runs(
    monkeypatch: pytest.MonkeyPatch, lang: str, error: str, size: str
) -> None:
    """Issue 42 item 13: a class the capacity test cannot measure ran and wrote a failed record."""
    demo = main.commands["demo"]
    ran: list[object] = []
    monkeypatch.setattr(demo, "callback", lambda **kw: ran.append(kw))  # no sandbox, no run
    result = CliRunner().invoke(main, ["--lang", lang, "demo", "--class-size", size])
    i18n.set_language("en")
    assert result.exit_code == 2 and ran == [], result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith(error)]
    assert len(errors) == 1 and "--class-size" in errors[0] and "1024" in errors[0], result.stderr
