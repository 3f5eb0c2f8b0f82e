"""The pseudo-locale: an in-memory catalog that wraps each message in 【…】, installed as
zh_CN, and the check that finds words outside the markers (texts that escaped the catalog).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_i18n import load_script

from lmreg_nb import i18n

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
    """The pseudo-locale for one test; English again after it."""
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


def widget_texts(widget: Any) -> Iterator[str]:
    """Every text a person reads in ``widget`` and its children."""
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
        yield from widget_texts(child)


def record_values(summary: dict[str, Any]) -> set[str]:
    """A summary record's data (school, contact, URLs, models, check names...): shown as it
    is, never translated, so taken out before looking for words outside the catalog."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, str) and value:
            found.add(value)

    for key in ("school", "contact", "base_url", "env", "models"):
        walk(summary.get(key))
    for check in summary.get("checks", []):
        # Names and severities are the contract's identifiers (the notebooks cite `error`).
        found.update((str(check.get("name")), str(check.get("severity"))))
    found.add("sandbox-model")  # the model name the sandbox's mock serves
    return {v for v in found if len(v) > 1}


def html_text(page: str) -> str:
    """The text a person reads in an HTML page (no style, script or tags)."""
    page = re.sub(r"<(style|script)\b.*?</\1>", " ", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def notebook_texts(nb: Any) -> list[str]:
    """What an executed notebook's code cells show: streams, HTML as text, plain text
    (not the plain-text twin of a JSON output)."""
    texts = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                texts.append(out.get("text", ""))
            data = out.get("data", {})
            if "text/html" in data:
                texts.append(html_text(str(data["text/html"])))
            elif "text/plain" in data and not any(k.endswith("+json") for k in data):
                texts.append(str(data["text/plain"]))
    return texts


def without_chat(text: str) -> str:
    """``text`` up to the chat's prompt or reply: the caller's and the model's words are
    data, not the toolkit's texts."""
    prompt, reply = "【prompt】", "【reply】"
    if reply in text:
        head, _, _ = text.partition(reply)
        if prompt in head:
            head = head.partition(prompt)[0]
        return head
    return text
