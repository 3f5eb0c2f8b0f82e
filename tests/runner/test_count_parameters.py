"""Issue 42 item 8: ``lesson_tokens`` and ``max_tokens`` are counts, not secrets.

``-p lesson_tokens 3000``, ``-p max_tokens 200`` and a ``lesson_tokens`` plan
column were refused as "looks like a secret ... never with -p" (the name holds
"TOKEN"): the documented setting could not be used headless. A name whose
secret-looking word is the plural "tokens" counts tokens; ``app_secret``,
``api_key``, ``access_token`` still look secret.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from lmreg_nb import i18n
from lmreg_nb.batch.plan import read_plan
from lmreg_nb.cli import main
from lmreg_nb.onboarding import Onboarding
from lmreg_nb.runner.scrub import looks_secret

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
CARD = ("Count School", "Li Hua", "13812345678", "ops@school.edu.cn")
ONBOARD = ["onboard", "-p", "school", "S", "-p", "contact_name", "Li Hua",
           "-p", "contact_mobile", "13812345678", "-p", "contact_email", "a@b.example",
           "-p", "model_name", "m"]  # fmt: skip


@pytest.mark.parametrize(
    "name",
    ["lesson_tokens", "max_tokens", "LESSON_TOKENS", "prompt_tokens", "maxTokens", "max-tokens"],
)
def test_a_count_of_tokens_does_not_look_secret(name: str) -> None:
    assert not looks_secret(name)


@pytest.mark.parametrize(
    "name",
    ["app_secret", "api_key", "apiKey", "access_token", "token", "GITHUB_TOKEN", "OPENAI_APIKEY",
     "tokens_secret", "db_password", "LMREG_TOKEN"],
)  # fmt: skip
def test_secret_names_still_look_secret(name: str) -> None:
    assert looks_secret(name)


def test_onboard_takes_lesson_tokens_and_max_tokens(recorded: list[dict[str, Any]]) -> None:
    args = [*ONBOARD, "-p", "lesson_tokens", "3000", "-p", "max_tokens", "200"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    (call,) = recorded
    assert call["parameters"]["lesson_tokens"] == 3000
    assert call["parameters"]["max_tokens"] == 200


@pytest.mark.parametrize(
    ("lang", "words"), [("en", "must be a whole number of tokens"), ("zh-CN", "必须")]
)
@pytest.mark.parametrize("value", ["0", "40000", "lots"])
def test_a_bad_max_tokens_is_refused_in_one_line_before_the_run(
    recorded: list[dict[str, Any]], lang: str, words: str, value: str
) -> None:
    result = CliRunner().invoke(main, ["--lang", lang, *ONBOARD, "-p", "max_tokens", value])
    assert result.exit_code == 2, result.output
    assert "max_tokens" in result.stderr and result.stderr.count("\n") == 1
    assert "secret" not in result.stderr and "密" not in result.stderr
    assert words in result.stderr or value == "lots"  # a word is a type error, also one line
    assert not recorded


def test_a_plan_takes_lesson_tokens_and_max_tokens_columns(tmp_path: Path) -> None:
    plan = tmp_path / "plan.csv"
    plan.write_text(
        "run_id,school,contact_name,contact_mobile,contact_email,model_name,"
        "lesson_tokens,max_tokens\n"
        "a,A School,Li Hua,13812345678,li@school-a.cn,m,3000,200\n",
        encoding="utf-8",
    )
    (run,) = read_plan(plan)
    assert run.parameters["lesson_tokens"] == 3000 and run.parameters["max_tokens"] == 200


def test_max_tokens_sizes_the_replies_of_the_load_test_and_capacity() -> None:
    run = Onboarding.begin(*CARD, max_tokens=200, lang="en")
    assert run.stopped_by is None
    assert run.workload().max_tokens == 200
    assert Onboarding.begin(*CARD, lang="en").workload().max_tokens == 300


@pytest.mark.parametrize(("lang", "words"), [("en", "max_tokens"), ("zh-CN", "max_tokens")])
def test_a_bad_max_tokens_stops_a_headless_run_at_its_parameters(lang: str, words: str) -> None:
    try:
        run = Onboarding.begin(*CARD, max_tokens=0, lang=lang)
        assert run.stopped_by == "parameters" and words in run.summary().reason
    finally:
        i18n.set_language("en")


@pytest.mark.parametrize("folder", [NOTEBOOKS, NOTEBOOKS / "zh-CN"], ids=["en", "zh-CN"])
def test_the_notebooks_declare_max_tokens(folder: Path) -> None:
    cells = json.loads((folder / "onboarding.ipynb").read_text(encoding="utf-8"))["cells"]
    cell = next(c for c in cells if "parameters" in c.get("metadata", {}).get("tags", []))
    found: dict[str, Any] = {}
    exec("".join(cell["source"]), {}, found)
    assert found["max_tokens"] == 300 and found["lesson_tokens"] == 1500
