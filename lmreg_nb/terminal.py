"""Untrusted text made safe to show on a terminal: one rule, wherever text is shown.

A platform, a chat endpoint or an error page may send text holding escape
sequences (clear the screen, set the window title, write the clipboard with
OSC 52), C1 controls, or bidi overrides that show a name reversed. Printed
raw, they steer the reader's terminal. The rule: every control character
(C0, DEL, C1), format character (bidi controls U+202A-202E, U+2066-2069,
U+200E/F, U+061C, zero-width and tag characters; the joiners U+200C/D excepted:
they only shape text), lone surrogate and line or paragraph separator is
replaced by a visible U+FFFD.

- :func:`terminal_text` applies it to one value (one line unless asked, bounded);
- :func:`shown_name` shows a name (a school, a model, a contact) by a stricter
  rule in every view: one line, capped, and also every character that shows as
  nothing or as a blank (default-ignorable code points, fillers, the blank
  Braille pattern) made visible; a joiner stays only where it shapes a script;
- :func:`snippet` flattens a short piece of untrusted text (an error body, a
  reason) to one line for a sentence: non-printable characters become spaces;
- :func:`terminal_json` escapes the same characters in JSON (``\\u001b``), so a
  program reading the output still gets the exact data;
- :class:`TerminalStream` applies it to everything a command writes, and
  writes what the stream's encoding lacks as JSON's ``\\u`` escapes (a GBK
  console gets ``\\ud83d\\ude00``, not a UnicodeEncodeError).
"""

from __future__ import annotations

import codecs
import contextlib
import io
import json
import re
import sys
import unicodedata
from collections.abc import Callable, Iterator
from typing import Any, TextIO

__all__ = [
    "MAX_NAME",
    "MAX_SHOWN",
    "PLACEHOLDER",
    "TerminalStream",
    "is_ignorable",
    "shown_name",
    "snippet",
    "terminal_json",
    "terminal_streams",
    "terminal_text",
]

#: What a replaced character looks like.
PLACEHOLDER = "\ufffd"
#: The most characters :func:`terminal_text` shows of one value (then "…").
MAX_SHOWN = 4096

_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
#: Format characters that only join or separate glyphs (emoji, Persian, Indic text).
_JOINERS = frozenset({"\u200c", "\u200d"})


def _unsafe(ch: str) -> bool:
    return unicodedata.category(ch) in _UNSAFE_CATEGORIES and ch not in _JOINERS


def _replace(text: str, keep: str, replacement: Callable[[str], str]) -> str:
    # str.isprintable() is False for every unsafe character: most text takes this path.
    if text.isprintable():
        return text
    return "".join(replacement(ch) if ch not in keep and _unsafe(ch) else ch for ch in text)


def terminal_text(value: object, *, lines: bool = False, limit: int | None = MAX_SHOWN) -> str:
    """``value`` as text safe to print: unsafe characters replaced, at most ``limit`` shown.

    One line by default (a newline is replaced too); ``lines`` keeps newlines and tabs.
    """
    text = value if isinstance(value, str) else str(value)
    if limit is not None and len(text) > limit:
        text = text[: max(0, limit - 1)] + "…"
    return _replace(text, "\n\t" if lines else "", lambda _ch: PLACEHOLDER)


#: Unicode's Default_Ignorable_Code_Point ranges (DerivedCoreProperties.txt): code
#: points a renderer shows as nothing at all (joiners, variation selectors, the
#: combining grapheme joiner, tags, fillers, bidi marks), so "qwen\u034f-72b" looks
#: exactly like "qwen-72b".
_IGNORABLE_RANGES = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160),
    (0x17B4, 0x17B5), (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E),
    (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)  # fmt: skip


def is_ignorable(ch: str) -> bool:
    """Whether the character is a default-ignorable code point (shown as nothing)."""
    code = ord(ch)
    return any(low <= code <= high for low, high in _IGNORABLE_RANGES)


#: The most characters :func:`shown_name` shows of a name (then "…"): a page, a log line,
#: a mail's subject; a school's real name is far shorter.
MAX_NAME = 100
#: Characters that show nothing although Unicode does not call them format characters:
#: fillers, the blank Braille pattern (U+2800 looked like the space of another name).
_BLANKS = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def _hides(name: str, at: int) -> bool:
    """Whether ``name[at]`` hides, reverses or blanks part of a name."""
    ch = name[at]
    if ch in _JOINERS:
        # A joiner shapes Persian or Indic text (RFC 5892's CONTEXTJ rules); elsewhere
        # it hides between two letters ("Demo\u200cSchool" looks like "DemoSchool").
        import idna.core  # only for a name holding a joiner: its tables take a moment

        try:
            return not idna.core.valid_contextj(name, at)
        except ValueError:  # a neighbour without a Unicode name
            return True
    return _unsafe(ch) or ch in _BLANKS or is_ignorable(ch)


def shown_name(value: object, *, limit: int | None = MAX_NAME) -> str:
    """A name (a school, a model, a contact) as every view shows it.

    One line (line breaks and tabs become a space: a CR LF cannot forge a log line
    or a mail header), at most ``limit`` characters, and every character that
    hides, reverses or blanks part of it replaced by a visible U+FFFD: what
    :func:`terminal_text` replaces, and also the default-ignorable code points
    (variation selectors, the combining grapheme joiner, Hangul fillers), the
    blank Braille pattern, and a joiner outside the scripts it shapes.
    """
    text = value if isinstance(value, str) else str(value)
    if limit is not None and len(text) > limit:
        text = text[: max(0, limit - 1)] + "…"
    text = _LINE_BREAKS.sub(" ", text)
    if text.isascii() and text.isprintable():
        return text
    return "".join(PLACEHOLDER if _hides(text, i) else ch for i, ch in enumerate(text))


#: Line breaks and tabs in a name: each run becomes one space.
_LINE_BREAKS = re.compile(r"[\t\n\v\f\r\x1c-\x1e\x85\u2028\u2029]+")


def snippet(text: str, limit: int = 120) -> str:
    """Untrusted text made safe to show in one line: control characters out, capped."""
    flat = "".join(ch if ch.isprintable() else " " for ch in text[: limit * 4])
    flat = " ".join(flat.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # a surrogate pair, as JSON writes a character beyond the BMP
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def terminal_json(value: Any, **kwargs: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)`` with the unsafe characters ``\\u``-escaped.

    Readable (Chinese stays Chinese) and lossless: ``json.loads`` gives back ``value``.
    """
    text = json.dumps(value, ensure_ascii=False, **kwargs)
    # json.dumps already escapes C0 inside strings; newlines outside them are indentation.
    return _replace(text, "\n", _json_escape)


class TerminalStream(io.TextIOBase):
    """A text stream that writes through another with :func:`terminal_text`'s rule.

    Newlines and tabs pass; a carriage return passes only in a write without a
    newline (a progress bar redrawing its line); a message always ends with a
    newline, so one inside a message is replaced. Characters the stream's
    encoding cannot write go as ``\\uXXXX`` escapes (valid in JSON output too).
    """

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner
        encoding = getattr(inner, "encoding", None) or "utf-8"
        try:
            utf = codecs.lookup(encoding).name.startswith("utf")
        except LookupError:
            utf, encoding = False, "ascii"
        self._narrow = None if utf else encoding
        self._placeholder = PLACEHOLDER if utf or _encodes(PLACEHOLDER, encoding) else "?"

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._inner, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str:  # type: ignore[override]
        return getattr(self._inner, "errors", None) or "strict"

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        keep = "\n\t" if "\n" in text else "\n\t\r"
        shown = _replace(text, keep, lambda _ch: self._placeholder)
        if self._narrow is not None and not _encodes(shown, self._narrow):
            # \uXXXX, as JSON writes it: readable in text, and JSON output stays valid.
            shown = "".join(ch if _encodes(ch, self._narrow) else _json_escape(ch) for ch in shown)
        self._inner.write(shown)
        return len(text)

    def flush(self) -> None:
        self._inner.flush()

    def isatty(self) -> bool:
        return bool(getattr(self._inner, "isatty", lambda: False)())

    def fileno(self) -> int:
        return int(self._inner.fileno())

    def writable(self) -> bool:
        return True


def _encodes(text: str, encoding: str) -> bool:
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return False
    return True


@contextlib.contextmanager
def terminal_streams() -> Iterator[None]:
    """While inside, ``sys.stdout`` and ``sys.stderr`` are :class:`TerminalStream` s."""
    saved = sys.stdout, sys.stderr
    if sys.stdout is not None and not isinstance(sys.stdout, TerminalStream):
        sys.stdout = TerminalStream(sys.stdout)
    if sys.stderr is not None and not isinstance(sys.stderr, TerminalStream):
        sys.stderr = TerminalStream(sys.stderr)
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                with contextlib.suppress(Exception):
                    stream.flush()
        sys.stdout, sys.stderr = saved
