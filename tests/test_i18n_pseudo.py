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
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from test_i18n import load_script

from lmreg_nb import i18n
from lmreg_nb.summary.performance import Performance

pytest.importorskip("babel", reason="the test extra installs Babel")

# CJK brackets: CJK fonts have them, so charts draw the markers without a font warning.
OPEN, CLOSE = "【", "】"

#: Words that may appear outside the catalog: identifiers and values, never sentences.
IDENTIFIERS = {
    "lmreg-nb",
    "lmreg_nb",
    "zh-cn",
    "zh",  # what is left of the language tag zh-CN once upper-case names are taken out
    "en",
    "x",
    "apiKey",
    "modelName",
    "registryUrl",
    "modelId",
    "appId",
    "appSecret",
    "http",
    "https",
    "envelope",
    "ms",
    "env",
    "ok",
    "failed",
    "incomplete",
    "reqParams",
    "reqExample",
    "resExample",
    "createTime",
    "updateTime",
}


@pytest.fixture(scope="module")
def pseudo_mo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A locale folder whose zh_CN catalog shows every text as the English one in markers."""
    return write_pseudo_catalog(tmp_path_factory.mktemp("pseudo-locale"))


def write_pseudo_catalog(root: Path) -> Path:
    """Write ``root/zh_CN/LC_MESSAGES/lmreg_nb.mo`` of the pseudo-locale; returns ``root``."""
    script = load_script()
    from babel.messages.catalog import Catalog

    catalog = Catalog(locale="zh_CN", domain=i18n.DOMAIN)
    for message in script.extract():
        if not message.id:
            continue
        if isinstance(message.id, str):
            catalog.add(message.id, f"{OPEN}{message.id}{CLOSE}", context=message.context)
        else:
            catalog.add(message.id, (f"{OPEN}{message.id[1]}{CLOSE}",), context=message.context)
    target = root / "zh_CN" / "LC_MESSAGES" / f"{i18n.DOMAIN}.mo"
    target.parent.mkdir(parents=True)
    target.write_bytes(script.mo_bytes(catalog))
    return root


@pytest.fixture
def pseudo(pseudo_mo: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(i18n, "LOCALE_DIR", pseudo_mo)
    monkeypatch.setenv("LMREG_LANG", "zh-CN")
    i18n.set_language()
    yield
    monkeypatch.undo()
    i18n.set_language("en")
    from lmreg_nb.cli import main
    from lmreg_nb.commands._i18n import translate_help

    translate_help(main)  # English help again for the other tests


def unmarked(text: str, values: set[str] = frozenset()) -> list[str]:  # type: ignore[assignment]
    """Words of ``text`` outside 【…】 that are neither identifiers nor known values."""
    previous = None
    while previous != text:  # innermost first: a message may hold another
        previous = text
        text = re.sub(f"{OPEN}[^{OPEN}{CLOSE}]*{CLOSE}", " ", text)
    for value in sorted(values, key=len, reverse=True):
        text = re.sub(rf"(?<![\w-]){re.escape(value)}(?![\w-])", " ", text)
    text = re.sub(r"https?://\S+|\S+@\S+", " ", text)  # URLs, e-mail addresses
    text = re.sub(r"…\w+", " ", text)  # masked secrets
    text = re.sub(r"\w+(?:[./]\w+)+", " ", text)  # dotted or slashed names: usage.total_tokens
    text = re.sub(r"\b\w*[_\d]\w*\b", " ", text)  # ids and names with digits or underscores
    text = re.sub(r"\b(UTC|[A-Z][a-z]+/[A-Za-z_]+)\b", " ", text)  # time zones
    text = re.sub(r"(?<![\w-])--?[A-Za-z][\w-]*", " ", text)  # options
    text = re.sub(r"\S+\.(ipynb|html|csv|png|py|md|sqlite3|json)\b", " ", text)  # files
    text = re.sub(r"\b[A-Z][A-Z0-9_]*\b", " ", text)  # metavars, variables, JSON keys
    words = re.findall(r"[A-Za-z][A-Za-z'-]*[A-Za-z]", text)
    return sorted({w for w in words if w not in IDENTIFIERS})


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


def _widget_texts(widget: Any) -> Iterator[str]:
    import ipywidgets as widgets

    for attr in ("description", "placeholder", "tooltip"):
        value = getattr(widget, attr, None)
        if isinstance(value, str) and value:
            yield value
    if isinstance(widget, widgets.HTML | widgets.Label | widgets.HTMLMath):
        yield html.unescape(re.sub(r"<[^>]+>", " ", widget.value))
    if isinstance(widget, widgets.Button | widgets.ToggleButton):
        yield widget.description
    if isinstance(widget, widgets.Output):
        for out in widget.outputs:
            yield str(out.get("text", ""))
            data = out.get("data", {})
            yield html.unescape(re.sub(r"<[^>]+>", " ", str(data.get("text/html", ""))))
    for child in getattr(widget, "children", ()):
        yield from _widget_texts(child)


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
    texts = list(_widget_texts(form.container))
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
