"""lmreg_nb.terminal: the one rule for text shown on a terminal (issue 20, items 4 and 6)."""

from __future__ import annotations

import io
import json
import sys

import pytest

from lmreg_nb.errors import APIError, LmregError
from lmreg_nb.terminal import (
    MAX_SHOWN,
    PLACEHOLDER,
    TerminalStream,
    snippet,
    terminal_json,
    terminal_streams,
    terminal_text,
)

UNSAFE = [
    "\x1b",  # ESC: every escape sequence starts here
    "\x07",  # BEL: ends an OSC sequence
    "\x00",
    "\x08",  # backspace: overwrites what was shown
    "\r",  # carriage return: overwrites the line
    "\n",
    "\x7f",  # DEL
    "\x85",  # NEL (C1)
    "\x9b",  # CSI (C1): an escape sequence without ESC
    "\x9d",  # OSC (C1)
    "\u061c",  # Arabic letter mark
    "\u200e",
    "\u200f",
    "\u202a",
    "\u202b",
    "\u202c",
    "\u202d",
    "\u202e",  # right-to-left override
    "\u2066",
    "\u2067",
    "\u2068",
    "\u2069",
    "\u200b",  # zero-width space
    "\ufeff",
    "\u2028",  # line separator
    "\u2029",
    "\U000e0041",  # a tag character
    "\ud800",  # a lone surrogate (json.loads makes these from "\\ud800")
]


@pytest.mark.parametrize("ch", UNSAFE, ids=[f"U+{ord(c):04X}" for c in UNSAFE])
def test_every_control_and_bidi_character_is_replaced(ch: str) -> None:
    assert terminal_text(f"a{ch}b") == f"a{PLACEHOLDER}b"


@pytest.mark.parametrize(
    "text",
    ["模型-school 1", "café ñ Ω", "emoji 😀 and family 👨\u200d👩\u200d👧", "a\u3000b", "tab-free"],
)
def test_readable_text_is_unchanged(text: str) -> None:
    assert terminal_text(text) == text


def test_lines_keeps_newlines_and_tabs_only() -> None:
    assert (
        terminal_text("a\tb\nc\rd\x1b[2J", lines=True) == f"a\tb\nc{PLACEHOLDER}d{PLACEHOLDER}[2J"
    )
    assert terminal_text("a\tb\nc") == f"a{PLACEHOLDER}b{PLACEHOLDER}c"


def test_length_is_bounded() -> None:
    assert len(terminal_text("x" * 100_000)) == MAX_SHOWN
    assert terminal_text("abcdef", limit=4) == "abc…"


def test_json_escapes_them_and_round_trips() -> None:
    value = {"modelName": "".join(UNSAFE) + "模型😀", "n": [1, "\x9b31m"]}
    text = terminal_json(value, indent=1)
    assert json.loads(text) == value
    assert all(ch not in text for ch in UNSAFE if ch != "\n")
    assert "模型😀" in text  # readable, not \\u-escaped
    assert "\\u202e" in text and "\\udb40\\udc41" in text  # a tag character: a surrogate pair


def test_an_error_message_is_one_safe_line() -> None:
    err = APIError("bad\x1b]0;pwned\x07 name\u202e\r\nFAKE", status=400, operation="register")
    assert "\x1b" not in str(err) and "\u202e" not in str(err) and "\n" not in str(err)
    assert "bad\ufffd]0;pwned\ufffd name\ufffd FAKE" in str(err)
    assert len(str(LmregError("y" * 100_000))) == MAX_SHOWN


def _stream(encoding: str) -> tuple[io.BytesIO, TerminalStream]:
    raw = io.BytesIO()
    inner = io.TextIOWrapper(raw, encoding=encoding, errors="strict", write_through=True)
    return raw, TerminalStream(inner)


def test_stream_replaces_and_keeps_a_progress_bars_carriage_return() -> None:
    raw, stream = _stream("utf-8")
    stream.write("\rload test: 50%|#####     |")  # tqdm redraws its line this way
    stream.write("name\x1b]52;c;eA==\x07\rFAKE\n")  # a message: always ends with a newline
    assert raw.getvalue().decode() == (
        "\rload test: 50%|#####     |"
        + f"name{PLACEHOLDER}]52;c;eA=={PLACEHOLDER}{PLACEHOLDER}FAKE\n"
    )
    with pytest.raises(TypeError):
        stream.write(b"bytes")  # type: ignore[arg-type]


def test_stream_escapes_what_a_gbk_terminal_cannot_show() -> None:
    raw, stream = _stream("gbk")
    stream.write("模型-😀 \x1b\n")
    # U+FFFD is not in GBK either: the placeholder there is "?".
    assert raw.getvalue().decode("gbk") == "模型-\\ud83d\\ude00 ?\n"
    raw, stream = _stream("gbk")
    stream.write(terminal_json({"modelName": "模型-😀"}) + "\n")
    assert json.loads(raw.getvalue().decode("gbk")) == {"modelName": "模型-😀"}


def test_terminal_streams_wraps_and_restores() -> None:
    before = sys.stdout, sys.stderr
    with terminal_streams():
        assert isinstance(sys.stdout, TerminalStream) and isinstance(sys.stderr, TerminalStream)
        with terminal_streams():  # nested: not wrapped twice
            assert not isinstance(sys.stdout._inner, TerminalStream)  # type: ignore[attr-defined]
    assert (sys.stdout, sys.stderr) == before


def test_snippet_flattens_untrusted_text_to_one_capped_line() -> None:
    shown = snippet("bad\x1b]52;c;aGk=\x07 gateway\r\n\n  error\u202e")
    assert shown == "bad ]52;c;aGk= gateway error"
    assert snippet("x" * 200, 10) == "x" * 9 + "…"
    assert snippet("short", 10) == "short"


def test_snippet_has_one_home() -> None:
    """snippet lives in terminal.py; the probe's reasons no longer offer it as theirs."""
    from lmreg_nb.probe.wire import reasons

    assert snippet.__module__ == "lmreg_nb.terminal"
    assert "snippet" not in reasons.__all__
