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
from lmreg_nb.runner import RunResult

ONBOARD = ["onboard", "-p", "school", "S", "-p", "contact_name", "Li Hua",
           "-p", "contact_mobile", "13812345678", "-p", "contact_email", "a@b.example",
           "-p", "model_name", "m"]  # fmt: skip


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[dict[str, Any]]:
    """Settings for onboard, and run_notebook replaced by a recorder of its arguments."""
    calls: list[dict[str, Any]] = []
    for name, value in {
        "LMREG_BASE_URL": "http://127.0.0.1:9", "LMREG_APP_ID": "app",
        "LMREG_APP_SECRET": "app-secret-value-1", "LMREG_MODEL_URL": "http://127.0.0.1:9/v1",
        "LMREG_MODEL_API_KEY": "model-key-value-1", "LMREG_MODEL_NAME": "m",
        "LMREG_TOKEN_CACHE": str(tmp_path / "users-cache.json"),
    }.items():  # fmt: skip
        monkeypatch.setenv(name, value)

    def fake(notebook: Path, out: Path, **kwargs: Any) -> RunResult:
        calls.append({"notebook": notebook, **kwargs})
        return RunResult("ok", out / "onboarding.ipynb", out / "onboarding.html")

    monkeypatch.setattr("lmreg_nb.runner.run_notebook", fake)
    return calls


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
