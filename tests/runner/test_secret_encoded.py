"""A key echoed encoded (base64 in pieces, base32, hex, escapes) or in look-alike letters.

The red-team pass of issue 44: a chat endpoint (or a platform) that sent its key back
as base64 in two halves, as base32 or with Cyrillic look-alike letters got it into the
check's output, the record, the watch's alert and the token command's error: the
masker knew only the whole base64 form and NFKD. "Readable" is judged here
independently of the masker: each disguise has its own reader (a base64, base32 or
hex decoder, an HTML or JSON unescaper, the Cyrillic table read backwards), and the
text it reads must hold no 7-character piece of the key.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
from collections.abc import Callable
from urllib.parse import unquote

import pytest
from fakes.hostile import CYRILLIC, ENCODED_DISGUISES
from record_helpers import scrubbed_stream

from lmreg_nb.probe import Target, stream_chat
from lmreg_nb.secret import assert_clean, find_leaks, mask_text

KEY = "sk-encoded-Qw3Er5Ty7Ui9Op1As"
CHAT = "/v1/chat/completions"


def _runs(pattern: str, decode: Callable[[str], bytes]) -> Callable[[str], str]:
    """A reader that decodes every run of ``pattern`` (padded as needed)."""

    def read(text: str) -> str:
        out = []
        for run in re.findall(pattern, text):
            try:
                out.append(decode(run).decode("utf-8", "replace"))
            except (binascii.Error, ValueError):
                continue
        return " ".join(out)

    return read


def _b64(run: str, alt: bytes | None = None) -> bytes:
    run = run.rstrip("=")
    return base64.b64decode(run + "=" * (-len(run) % 4), alt)


READERS: dict[str, Callable[[str], str]] = {
    "base64-halves": _runs(r"[A-Za-z0-9+/]{8,}=*", _b64),
    "base64-urlsafe-pieces": lambda t: _runs(r"[A-Za-z0-9_-]{8,}=*", lambda r: _b64(r, b"-_"))(
        t.replace(" / ", "")
    ),
    "base32": _runs(r"[A-Z2-7]{8,}=*", lambda r: base64.b32decode(r + "=" * (-len(r) % 8))),
    "hex": _runs(r"[0-9a-f]{8,}", bytes.fromhex),
    "cyrillic": lambda t: t.translate({v: k for k, v in CYRILLIC.items()}),
    "json-escapes": lambda t: re.sub(r"\\u([0-9a-f]{4})", lambda m: chr(int(m[1], 16)), t),
    "html-entities": html.unescape,
    "mixed-escapes": lambda t: unquote(html.unescape(t)),
}


def readable(text: str, name: str) -> list[str]:
    """The 7-character pieces of the key a reader of disguise ``name`` gets from ``text``."""
    plain = READERS[name](text)
    return [KEY[i : i + 7] for i in range(len(KEY) - 6) if KEY[i : i + 7] in plain]


def test_every_encoded_disguise_has_a_reader() -> None:
    assert set(READERS) == set(ENCODED_DISGUISES)


@pytest.mark.parametrize("name", list(ENCODED_DISGUISES))
def test_an_encoded_key_is_masked_and_found(name: str) -> None:
    text = f"the model said: {ENCODED_DISGUISES[name](KEY)} (end)"
    assert readable(text, name), "the disguise must still be readable before masking"
    assert find_leaks(text, {"LMREG_MODEL_API_KEY": KEY}) == ["LMREG_MODEL_API_KEY"]
    clean = mask_text(text, [KEY])
    assert readable(clean, name) == [], clean
    assert find_leaks(clean, [KEY]) == []
    assert clean.startswith("the model said: ") and clean.endswith(" (end)")


def test_ordinary_encoded_looking_text_is_left_alone() -> None:
    # Long words, hashes, base64 of other things, percent signs, Cyrillic and Chinese.
    text = (
        "registration onboarding_notebook 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b "
        "aGVsbG8gd29ybGQsIHRoaXMgaXMgbm90IGEga2V5 50% off, 100%25; &amp; &#20013;文 "
        "Привет, мир; 学校模型已登记（modelName：demo-model） sk-other-0123456789abcdef"
    )
    assert mask_text(text, [KEY]) == text
    assert find_leaks(text, [KEY]) == []


@pytest.mark.parametrize("name", list(ENCODED_DISGUISES))
def test_an_encoded_echo_is_masked_in_the_reply_and_the_record(echo_server: str, name: str) -> None:
    target = Target(f"{echo_server}/disguise/{name}{CHAT}", KEY, "m", timeout=5)
    reply = "".join(stream_chat(target, "hi"))
    assert reply.startswith("echo: ") and reply.endswith(" done")
    assert readable(reply, name) == [], reply
    raw = "echo: " + ENCODED_DISGUISES[name](KEY) + " done"
    record, text = scrubbed_stream(raw, {"LMREG_MODEL_API_KEY": KEY})
    assert readable(text, name) == []
    assert_clean(record, {"LMREG_MODEL_API_KEY": KEY}, what="the record")
