"""The last gate before a record is written: no secret in what a person can read.

A notebook is read as its values (sources, outputs, metadata a run wrote); a
page as its text and the attributes a person reads (a link, a title). There,
a secret counts whole, in any encoding, or as any 7-character piece. The rest
is structure: the notebook's keys and format fields, the page's CSS, class
names and element ids. A piece of a secret found there is a word the format
uses ("display", "padding"), not a leak; a whole secret there still stops the
write. Both raise :class:`~lmreg_nb.errors.SecretLeakError` in one line.
"""

from __future__ import annotations

from html.parser import HTMLParser
from typing import TYPE_CHECKING

from ..secret import Masker, Secrets, raise_leaks
from .scrub import Kind, map_strings

if TYPE_CHECKING:
    import nbformat

__all__ = ["assert_notebook_clean", "assert_page_clean"]

#: Attributes that lay a page out; every other attribute's value is read as text.
_LAYOUT_ATTRIBUTES = frozenset(
    {"class", "id", "style", "type", "charset", "lang", "tabindex", "rel", "role", "name"}
)


def _leaks(masker: Masker, text: list[str], structure: list[str]) -> list[str]:
    found = masker.leaks("".join(text))
    return found + [n for n in masker.leaks("\n".join(structure), whole=True) if n not in found]


def assert_notebook_clean(nb: nbformat.NotebookNode, secrets: Secrets, *, what: str) -> None:
    """Raise SecretLeakError if a value of ``nb`` holds a secret, or its structure a whole one."""
    masker = Masker(secrets)
    if not masker:
        return
    text: list[str] = []
    structure: list[str] = []

    def read(value: str, kind: Kind) -> str:
        if kind == "html":  # an output's HTML: its text as a person reads it, its CSS apart
            reader = _PageReader()
            reader.feed(value)
            reader.close()
            text.extend([*reader.text, "\n"])
            structure.extend(reader.structure)
            return value
        (text if kind == "text" else structure).append(value)
        if kind == "text":
            text.append("\n")  # values apart: a piece across two of them is nobody's
        return value

    map_strings(nb, read)
    raise_leaks(_leaks(masker, text, structure), what=what)


class _PageReader(HTMLParser):
    """Splits a page into what a person reads and what lays it out."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.structure: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_style = tag == "style"
        for name, value in attrs:
            if value is None:
                continue
            layout = name in _LAYOUT_ATTRIBUTES or name.startswith("data-")
            # An image's base64 is binary: a piece of it is noise, a whole secret is not.
            binary = value.startswith("data:") and ";base64," in value[:100]
            if layout or binary:
                self.structure.append(value)
            else:
                self.text += [value, "\n"]

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        # Text nodes joined as a person reads them: "sk-disp<b>lay…</b>" is one word.
        (self.structure if self._in_style else self.text).append(data)

    def handle_comment(self, data: str) -> None:
        self.text.append(data)


def assert_page_clean(page: str, secrets: Secrets, *, what: str) -> None:
    """Raise SecretLeakError if the text of ``page`` holds a secret, or its CSS a whole one."""
    masker = Masker(secrets)
    if not masker:
        return
    reader = _PageReader()
    reader.feed(page)
    reader.close()
    raise_leaks(_leaks(masker, reader.text, reader.structure), what=what)
