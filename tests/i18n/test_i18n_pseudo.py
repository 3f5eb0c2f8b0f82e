"""Pseudo-locale: every visible text must come from the catalog.

An in-memory catalog wraps each message in 【…】 and is installed as zh_CN
through set_language's own lookup (LOCALE_DIR). Then the CLI's help and
errors, the forms and the HTML record are rendered; with the marked parts
removed, what is left must be identifiers and values only (option names,
variables, API field names, URLs, numbers): any other word is a text that
escaped the catalog.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import click
import pytest
from click.testing import CliRunner
from fakes.pseudo import pseudo, pseudo_mo, unmarked, widget_texts

from lmreg_nb.summary.performance import Performance

__all__ = ["pseudo", "pseudo_mo"]  # fixtures used below

pytest.importorskip("babel", reason="the test extra installs Babel")


def test_the_check_sees_an_unmarked_text() -> None:
    values = "LMREG_BASE_URL --help …a1b2 Asia/Shanghai app_1f text/plain"
    assert unmarked(f"【Hello {{x}}】 {values}") == []
    assert unmarked("【error: 【nested】】 plain words here") == ["here", "plain", "words"]


# -- the CLI ------------------------------------------------------------------------------


def _commands(command: click.Command, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    if isinstance(command, click.Group):
        for name, sub in sorted(command.commands.items()):
            yield from _commands(sub, (*path, name))


def _cli(*args: str) -> str:
    from lmreg_nb.cli import main

    result = CliRunner().invoke(main, list(args), prog_name="lmreg-nb", catch_exceptions=False)
    return result.output


def test_cli_help_comes_from_the_catalog(pseudo: None) -> None:
    from lmreg_nb.cli import main

    names = {name for path in _commands(main) for name in path}
    problems = {}
    for path in _commands(main):
        found = unmarked(_cli(*path, "--help"), names)
        if found:
            problems[" ".join(("lmreg-nb", *path, "--help"))] = found
    assert not problems


@pytest.mark.parametrize(
    "args",
    [
        ("models",),
        ("token",),
        ("check",),
        ("check", "--bogus"),
        ("check", "--requests", "many"),
        ("nosuchcommand",),
        ("register",),
    ],
)
def test_cli_messages_come_from_the_catalog(pseudo: None, args: tuple[str, ...]) -> None:
    # Without configuration: the one-line errors, click's usage errors.
    output = _cli(*args)
    assert output.strip()
    assert unmarked(output, {*args, "lmreg-nb check", "many"}) == [], output


# -- the forms ----------------------------------------------------------------------------


FORMS = [
    "CapacityForm",
    "ChatBox",
    "ChecksPanel",
    "ContactForm",
    "CredentialsForm",
    "ModelsTable",
    "ModifyForm",
    "RegisterForm",
]


@pytest.mark.parametrize("name", FORMS)
def test_forms_come_from_the_catalog(pseudo: None, name: str) -> None:
    pytest.importorskip("ipywidgets")
    import lmreg_nb.onboarding as ob
    from lmreg_nb import ui

    form = getattr(ui, name)(ob.Onboarding(""))
    texts = list(widget_texts(form.container))
    assert texts, "the form shows no text at all?"
    found = unmarked("\n".join(texts))
    assert not found, f"{found}\n" + "\n".join(texts)


# -- the HTML record ----------------------------------------------------------------------


def sample_summary() -> Any:
    from lmreg_nb.summary import EXPECTED_STEPS, Check, Contact, ModelRecord, Step, build_summary

    return build_summary(
        school="Schoolname",
        contact=Contact("Personname", "13800000000", "a@b.example"),
        base_url="https://ai.school.example",
        env="envvalue",
        steps=[Step(n, True, "detailtext") for n in EXPECTED_STEPS],
        models=[ModelRecord("campusllm", "m1", "http://127.0.0.1/v1/chat/completions")],
        checks=[
            Check("stream-utf8", True, "error", "detailtext"),
            Check("tls-certificate", False, "warning", "detailtext"),
        ],
        performance=Performance.from_json(
            {"requests": 10, "errors": 1, "ttft_ms": {"p50": 1, "p90": 2, "p99": 3}}
        ),
        lang="zh-CN",
        generated_at=datetime(2026, 9, 1, 4, 5, tzinfo=UTC),
    )


def test_html_record_comes_from_the_catalog(pseudo: None) -> None:
    from lmreg_nb.records.html import render_summary_html

    page = render_summary_html(sample_summary())
    text = html.unescape(re.sub(r"<style>.*?</style>", " ", page, flags=re.S))
    text = re.sub(r"<[^>]+>", " ", text)
    values = {
        "Schoolname",
        "Personname",
        "a@b.example",
        "envvalue",
        "detailtext",
        "campusllm",
        "stream-utf8",
        "tls-certificate",
        "Asia/Shanghai",
        "zh-CN",
        "m1",
    }
    found = unmarked(text, values)
    assert not found, f"{found}\n{text}"
