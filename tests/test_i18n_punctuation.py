"""Chinese punctuation in the zh-CN catalog: full-width marks between Chinese words.

No ASCII comma or semicolon next to a Chinese character ("1 个请求, 0 个错误",
"只有 role; 最后"), and no space before a full-width parenthesis ("设置 （参见").
Code, identifiers and numbers between ASCII words keep their ASCII marks.
"""

from __future__ import annotations

import re
from pathlib import Path

from babel.messages.pofile import read_po

PO = Path(__file__).resolve().parents[1] / "lmreg_nb/locale/zh_CN/LC_MESSAGES/lmreg_nb.po"
CJK = "\u3400-\u9fff\u3000-\u303f\uff00-\uffef"
ASCII_MARK_BY_CHINESE = re.compile(rf"[{CJK}][ \t]*[,;]|[,;][ \t]*[{CJK}]")
SPACE_BEFORE_PAREN = re.compile(r"[ \t]（")


def _translations() -> list[tuple[str, str]]:
    with PO.open("rb") as fh:
        catalog = read_po(fh)
    found = []
    for message in catalog:
        if not message.id or message.fuzzy:
            continue
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        msgid = message.id[0] if isinstance(message.id, tuple) else message.id
        found += [(msgid, s) for s in strings if s]
    return found


def test_no_ascii_comma_or_semicolon_between_chinese_words() -> None:
    bad = [(i, s) for i, s in _translations() if ASCII_MARK_BY_CHINESE.search(s)]
    assert not bad, "\n".join(f"{i!r}\n  -> {s}" for i, s in bad)


def test_no_space_before_a_full_width_parenthesis() -> None:
    bad = [(i, s) for i, s in _translations() if SPACE_BEFORE_PAREN.search(s)]
    assert not bad, "\n".join(f"{i!r}\n  -> {s}" for i, s in bad)


def _chinese(render: object) -> str:
    from lmreg_nb import i18n

    with i18n.speaking("zh-CN"):
        return str(render() if callable(render) else render)


def test_sentences_put_together_in_code_follow_the_same_rules() -> None:
    """Pieces joined in code (a list of causes, a hint after a message) are punctuated
    by the language too: "1 个请求, 0 个错误" and "设置 （参见" came from such joins."""
    from lmreg_nb.errors import ConfigurationError
    from lmreg_nb.probe.wire.reasons import kinds_text
    from lmreg_nb.records.text import perf_sentence
    from lmreg_nb.settings import Settings

    def missing() -> str:
        try:
            Settings.load(environ={}).require("base_url", "app_id")
        except ConfigurationError as exc:
            return str(exc)
        raise AssertionError("nothing missing")

    texts = [
        _chinese(missing),
        _chinese(lambda: kinds_text({"timeout": 3, "status 500": 2, "connect": 1})),
        _chinese(lambda: perf_sentence({"requests": 2, "errors": 1, "requests_per_s": 1.5})),
    ]
    for text in texts:
        assert not ASCII_MARK_BY_CHINESE.search(text), text
        assert not SPACE_BEFORE_PAREN.search(text), text
