"""The one masker sees through disguises: zero-width marks, fullwidth letters, 7-character pieces.

Issue 20 (6): an echoed key split by zero-width spaces, written in fullwidth
letters or cut into 7-character pieces stayed readable in a record. A hostile
chat endpoint on loopback echoes the key it is sent in each disguise; the
streamed reply, the masked text and the scrubbed notebook must not let a person
read it back. "Readable" is judged here independently of the masker: the text
with invisible marks removed and compatibility forms folded (NFKD, marks off)
holds no 7-character piece of the key.
"""

from __future__ import annotations

import unicodedata

import pytest
from fakes.hostile import DISGUISES
from record_helpers import scrubbed_stream

from lmreg_nb.probe import Target, stream_chat
from lmreg_nb.secret import WINDOW, Masker, assert_clean, find_leaks, mask, mask_text

KEY = "sk-disguise-Qw3Er5Ty7Ui9Op1As"
CHAT = "/v1/chat/completions"


def _folded(text: str) -> str:
    """What a person reads: invisible marks gone, fullwidth and accented letters plain."""
    out = []
    for ch in unicodedata.normalize("NFKD", text):
        if unicodedata.category(ch) in ("Mn", "Me", "Cf") or ch in "\u034f\u115f\u1160\u3164":
            continue
        if 0xFE00 <= ord(ch) <= 0xFE0F:
            continue
        out.append(ch)
    return "".join(out)


def readable(text: str, key: str = KEY) -> list[str]:
    """The 7-character pieces of ``key`` a person can still read in ``text``."""
    plain = _folded(text)
    return [key[i : i + 7] for i in range(len(key) - 6) if key[i : i + 7] in plain]


@pytest.mark.parametrize("name", list(DISGUISES))
def test_a_disguised_key_is_masked_and_found(name: str) -> None:
    disguised = DISGUISES[name](KEY)
    text = f"the model said: {disguised} (end)"
    assert readable(text), "the disguise must still be readable before masking"
    assert find_leaks(text, {"LMREG_MODEL_API_KEY": KEY}) == ["LMREG_MODEL_API_KEY"]
    clean = mask_text(text, [KEY])
    assert readable(clean) == [], clean
    assert find_leaks(clean, [KEY]) == []
    assert clean.startswith("the model said: ") and clean.endswith(" (end)")


def test_short_texts_and_short_secrets_are_read_folded_too() -> None:
    # Ligatures read as several letters: a 5-character text can spell a 7-character piece.
    key = "sk-ffiffl-0123456789"
    assert find_leaks("x\ufb00i\ufb00l-0", [key]) == ["secret #1"]
    assert readable(mask_text("x\ufb00i\ufb00l-0", [key]), key) == []
    assert mask_text("token: \uff54\uff10\uff4b", ["t0k"]) == "token: " + mask("t0k")


def test_a_whole_disguised_key_shows_its_masked_form() -> None:
    clean = mask_text(f"key {DISGUISES['fullwidth'](KEY)}.", [KEY])
    assert clean == f"key …{KEY[-4:]}."


def test_pieces_of_seven_are_the_smallest_masked() -> None:
    assert WINDOW == 7
    # From the key's random part: a piece that is also our own word ("disguis") is left alone.
    assert mask_text(f"[{KEY[12:19]}]", [KEY]) == "[…]"
    six = KEY[12:18]
    assert mask_text(f"[{six}]", [KEY]) == f"[{six}]"  # 6 characters: not a piece


def test_ordinary_text_is_left_alone() -> None:
    # Chinese punctuation folds to ASCII, CJK text stays: nothing here is the key.
    text = (
        "学校模型已登记（modelName：demo-model），检查全部通过；"
        "ＡＢＣ full-width, ｄｅｍｏ, café, naïve, sk-other-0123456789abcdef."
    )
    assert mask_text(text, [KEY]) == text
    assert find_leaks(text, [KEY]) == []
    assert_clean(text, [KEY], what="the record")


def test_a_short_key_still_masks_only_itself() -> None:
    short = "k3Y-9zQ!"  # 8 characters: two 7-character pieces
    text = "a k3Y-9zQ and k3Y-9z and a word: keys, quiz"
    clean = mask_text(text, [short])
    assert "k3Y-9zQ" not in clean and "k3Y-9z " in clean and "keys, quiz" in clean


def test_the_stream_masker_holds_back_invisible_marks_between_pieces() -> None:
    from lmreg_nb.probe.wire.chat import StreamMasker

    disguised = DISGUISES["zero-width-space"](KEY)
    mask = StreamMasker([KEY])
    out = "".join(mask.push(disguised[i : i + 3]) for i in range(0, len(disguised), 3))
    out += mask.flush()
    assert readable(out) == [], out


@pytest.mark.parametrize("name", list(DISGUISES))
def test_a_disguised_echo_is_not_readable_in_the_reply_or_the_record(
    echo_server: str, name: str
) -> None:
    target = Target(f"{echo_server}/disguise/{name}{CHAT}", KEY, "m", timeout=5)
    pieces = list(stream_chat(target, "hi"))
    reply = "".join(pieces)
    assert reply.startswith("echo: ") and reply.endswith(" done")
    assert readable(reply) == [], reply
    # The same text unmasked, as a notebook output: the scrubber makes the record clean.
    raw = "echo: " + DISGUISES[name](KEY) + " done"
    record, text = scrubbed_stream(raw, {"LMREG_MODEL_API_KEY": KEY})
    assert readable(text) == []
    assert_clean(record, {"LMREG_MODEL_API_KEY": KEY}, what="the record")


def test_masker_is_reusable_and_fast_on_a_large_chinese_record() -> None:
    import time

    masker = Masker({"a": KEY, "b": "APPSECRET-" + "x9" * 20})
    text = ("学校模型已登记，检查全部通过；" * 4000) + DISGUISES["fullwidth"](KEY)
    started = time.perf_counter()
    clean = masker(text)
    elapsed = time.perf_counter() - started
    assert readable(clean) == [] and clean.startswith("学校模型")
    assert elapsed < 2.0, f"{elapsed:.2f} s for {len(text)} characters"
