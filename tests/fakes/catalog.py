"""The zh-CN catalog's translations, as the wording and punctuation tests read them."""

from __future__ import annotations

from pathlib import Path

from babel.messages.pofile import read_po

__all__ = ["PO", "translations"]

PO = Path(__file__).resolve().parents[2] / "lmreg_nb/locale/zh_CN/LC_MESSAGES/lmreg_nb.po"


def translations() -> list[tuple[str, str]]:
    """(msgid, translation) for every translated, reviewed message (each plural form)."""
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
