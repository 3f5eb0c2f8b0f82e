"""Issue 42 item 10, the records side: names are shown by one rule in every view.

A school parameter or a platform's model names carried raw U+202E, U+200B, ESC,
BEL and U+2060 into the full HTML record (R-2); the principal's page kept
U+200C, U+200D, U+034F, U+3164, U+115F, U+2800, U+FE0F and U+17B4 (R13);
"my⠀model" (U+2800) registered beside "my model" (R12); ``--registered`` with a
look-alike of a listed name said nothing of it (R14). :func:`shown_name` makes
every character that hides, reverses or blanks part of a name visible (U+FFFD),
keeps a joiner only where it shapes a script, and caps the name.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import nbformat
import pytest
from fakes.summaries import demo_summary

from lmreg_nb import i18n
from lmreg_nb.batch import write_index_html
from lmreg_nb.batch.report import key_figures, write_summary_csv
from lmreg_nb.confusables import confusable_with
from lmreg_nb.display import Outcome, Table
from lmreg_nb.errors import NotFoundError
from lmreg_nb.models import RegisteredModel
from lmreg_nb.onboarding.contact import card_outcome
from lmreg_nb.onboarding.registry_steps import (
    models_table,
    registered_detail,
    registered_outcome,
)
from lmreg_nb.probe import Target
from lmreg_nb.records.export import render_html
from lmreg_nb.records.html import render_summary_html
from lmreg_nb.records.principal import render_principal_html
from lmreg_nb.records.text import render_summary_text
from lmreg_nb.secret import Secret
from lmreg_nb.settings import Settings
from lmreg_nb.summary import Contact
from lmreg_nb.terminal import MAX_NAME, PLACEHOLDER, shown_name

#: R-2: what reached the full record raw.
CONTROLS = ["\u202e", "\u200b", "\x1b", "\x07", "\u2060"]
#: R13: what stayed raw on the principal's page.
HIDDEN = ["\u200c", "\u200d", "\u034f", "\u3164", "\u115f", "\u2800", "\ufe0f", "\u17b4"]
URL = "https://llm.school.example/v1/chat/completions"


@pytest.mark.parametrize("mark", CONTROLS + HIDDEN)
def test_a_name_shows_every_hiding_character(mark: str) -> None:
    assert shown_name(f"Demo{mark}School") == f"Demo{PLACEHOLDER}School"


def test_a_name_is_one_line_and_capped() -> None:
    assert shown_name("Bcc: x\r\nBcc: y") == "Bcc: x Bcc: y"
    long = shown_name("北" * 100_000)
    assert len(long) == MAX_NAME and long.endswith("…")


@pytest.mark.parametrize(
    "name",
    [
        "北京市第一中学",
        "مدرسة النور",
        "دبیرستان می\u200cخواهم",  # Persian: a non-joiner between two joining letters
        "क्\u200dष विद्यालय",  # Devanagari: a joiner after a virama
        "École\u3000Sainte-Marie",
    ],
)
def test_real_scripts_and_joiners_that_shape_them_stay(name: str) -> None:
    assert shown_name(name) == name


def _evil(marks: list[str]) -> str:
    return "Evil" + "".join(f"{m}x" for m in marks) + " School"


def _record_notebook(school: str, model: str) -> nbformat.NotebookNode:
    """The outputs an onboarding shows: its contact card and a table of models."""
    contact = Contact("Li Hua", "13800138000", "ai@demo.example")
    listed = RegisteredModel(f"7{model}", model, URL, Secret("sk-school-Op1As3Df5Gh7"))
    shown_by_steps: list[Outcome | Table] = [
        card_outcome(school, contact),
        models_table([listed]),
        registered_outcome(listed, "registered"),
        Outcome(registered_detail(listed, "registered")),  # the step's detail
    ]
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell(f"# Parameters\nschool = {school!r}\nmodel_name = {model!r}")
    params.metadata["tags"] = ["injected-parameters"]  # as papermill writes them
    nb.cells.append(params)
    for shown in shown_by_steps:
        cell = nbformat.v4.new_code_cell("show()")
        cell.outputs = [
            nbformat.v4.new_output(
                "display_data",
                data={"text/html": shown._repr_html_(), "text/plain": repr(shown)},
            )
        ]
        nb.cells.append(cell)
    return nb


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_the_full_record_carries_no_hiding_character(lang: str) -> None:
    school, model = _evil(CONTROLS + HIDDEN), "m" + "".join(CONTROLS + HIDDEN) + "odel"
    i18n.set_language(lang)
    try:
        models = [{"modelName": model, "modelId": "7", "registryUrl": URL}]
        summary = demo_summary(lang, school=school, models=models)
        page = render_html(_record_notebook(school, model), summary)
        text = render_summary_text(summary)
    finally:
        i18n.set_language("en")
    for mark in CONTROLS + HIDDEN:
        assert mark not in page, f"U+{ord(mark):04X} in the page"
        assert mark not in text, f"U+{ord(mark):04X} in the text"
    assert shown_name(school) in page and shown_name(model) in page


@pytest.mark.parametrize("mark", CONTROLS + HIDDEN)
def test_the_principals_page_shows_every_hiding_character(mark: str) -> None:
    school = f"Demo{mark}Middle School"
    contact = {"name": f"Li{mark} Hua", "mobile": "13800138000", "email": "ai@demo.example"}
    page = render_principal_html(demo_summary("en", school=school, contact=contact))
    assert mark not in page
    assert f"Demo{PLACEHOLDER}Middle School" in page and f"Li{PLACEHOLDER} Hua" in page


def test_the_summary_card_caps_a_long_school_name() -> None:
    page = render_summary_html(demo_summary("en", school="S" * 100_000))
    assert "S" * MAX_NAME not in page and "S" * (MAX_NAME - 1) + "…" in page


def test_a_blank_braille_pattern_looks_like_a_space() -> None:  # R12
    assert confusable_with("my\u2800model", ["my model"]) == "my model"
    assert confusable_with("my model", ["my\u2800model"]) == "my\u2800model"
    assert confusable_with("my\u3000model", ["my model"]) == "my model"


class _Listing:
    """A registry client whose query-models lists ``names``."""

    def __init__(self, names: list[str]) -> None:
        self.models = [
            RegisteredModel(f"id-{i}", n, URL, Secret("sk-school-Op1As3Df5Gh7"))
            for i, n in enumerate(names)
        ]

    def query_models(self) -> list[RegisteredModel]:
        return self.models


def _settings() -> Settings:
    return Settings.load(environ={"LMREG_BASE_URL": "https://ai.school.example"})


@pytest.mark.parametrize(("lang", "words"), [("en", "looks the same"), ("zh-CN", "看起来")])
def test_a_look_alike_of_a_listed_name_is_named_when_not_found(lang: str, words: str) -> None:
    i18n.set_language(lang)
    try:
        with pytest.raises(NotFoundError) as info:
            Target.from_registered(_settings(), "сafé-llm", client=_Listing(["café-llm"]))  # type: ignore[arg-type]
    finally:
        i18n.set_language("en")
    message = str(info.value)
    assert "café-llm" in message and "сafé-llm" in message and "id-0" in message
    assert words in message and "\n" not in message


def test_a_look_alike_beside_the_name_found_is_warned_of(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client: Any = _Listing(["café-llm", "сafé-llm"])
    with caplog.at_level(logging.WARNING, logger="lmreg_nb"):
        target = Target.from_registered(_settings(), "café-llm", client=client)
    assert target.registered_name == "café-llm"
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "'сafé-llm'" in warning and "id-1" in warning and "looks the same" in warning


def test_no_warning_without_a_look_alike(caplog: pytest.LogCaptureFixture) -> None:
    client: Any = _Listing(["café-llm", "cafe-llm"])
    with caplog.at_level(logging.WARNING, logger="lmreg_nb"):
        Target.from_registered(_settings(), "café-llm", client=client)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_the_batch_index_and_summary_csv_show_the_school_by_the_same_rule(tmp_path: Path) -> None:
    school = _evil(CONTROLS + HIDDEN)
    run = {"run_id": "a", "status": "ok", **key_figures(demo_summary("en", school=school))}
    write_index_html(tmp_path / "index.html", [run])
    write_summary_csv(tmp_path / "summary.csv", [run])
    for name in ("index.html", "summary.csv"):
        text = (tmp_path / name).read_text(encoding="utf-8-sig")
        assert not [m for m in CONTROLS + HIDDEN if m in text], name
        assert shown_name(school) in text, name


def test_the_models_command_shows_names_by_the_same_rule() -> None:
    from click.testing import CliRunner
    from fakes.loopback_platform import loopback_platform

    from lmreg_nb.cli import main

    name = "ev" + "".join(HIDDEN) + "il"
    listed = {"modelId": "m-1", "modelName": name, "registryUrl": URL, "apiKey": "sk-x-0123456789"}
    with loopback_platform() as (base, script):
        script.models = [listed]
        env = {"LMREG_BASE_URL": base, "LMREG_TOKEN": "tok-shown-names-0123456789",
               "LMREG_ENV": "env-test", "LMREG_TIMEOUT": "2", "LMREG_LANG": "en"}  # fmt: skip
        result = CliRunner().invoke(main, ["models"], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert not [m for m in HIDDEN if m in result.stdout]
    assert shown_name(name) in result.stdout


@pytest.mark.parametrize(("lang", "words"), [("en", "did you mean"), ("zh-CN", "您是不是要找")])
def test_a_typo_of_a_listed_name_is_answered_with_the_name(lang: str, words: str) -> None:
    i18n.set_language(lang)
    try:
        with pytest.raises(NotFoundError) as info:
            Target.from_registered(_settings(), "qwen-zz", client=_Listing(["qwen-72b", "qwen-7b"]))  # type: ignore[arg-type]
        with pytest.raises(NotFoundError) as far:
            Target.from_registered(_settings(), "llama", client=_Listing(["qwen-72b"]))  # type: ignore[arg-type]
    finally:
        i18n.set_language("en")
    message = str(info.value)
    assert words in message and "'qwen-7b'" in message and "\n" not in message, message
    assert words not in str(far.value)  # nothing close: no guess
