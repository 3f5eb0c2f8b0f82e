"""The toolkit's own fixed text: check names and every catalog message, in each language.

A piece of a secret that is also a piece of this text is not a leak: an apiKey
such as ``sk-unreachable-0000000000`` shares "reachab" with the check name
``reachable``, and masking that piece garbled our own words ("…le") in check
names, records and error texts. :func:`is_own_piece` tells the masker which
pieces to leave alone; the secret itself, whole and in every encoding, is
still masked.
"""

from __future__ import annotations

import gettext
from functools import cache

from .i18n import DOMAIN, LOCALE_DIR

__all__ = ["CHECK_NAMES", "is_own_piece", "own_text"]

#: Every check name (stable identifiers, never translated); tests/core/test_own_words.py
#: finds each name the code builds a check with in this list.
CHECK_NAMES: tuple[str, ...] = (
    "url-https", "url-path", "url-public-host", "reachable", "key-accepted",
    "chat-answers", "chat-reply-shape", "chat-usage", "wrong-key-rejected",
    "stream-answers", "stream-is-streamed", "stream-content-type", "stream-events-json",
    "stream-no-error-object", "stream-content", "stream-done", "stream-not-buffered",
    "stream-usage", "stream-framing", "completion-form", "errors-are-json",
    "stream-utf8", "max-tokens-honoured", "model-name-served", "tls-certificate",
    "system-role", "context-window", "streams-not-cut", "reasoning-separated", "load-test",
    "prefix-cache",
)  # fmt: skip


def _catalog_texts() -> list[str]:
    """Every msgid and msgstr of every shipped catalog (plural forms included)."""
    texts: list[str] = []
    for mo in sorted(LOCALE_DIR.glob(f"*/LC_MESSAGES/{DOMAIN}.mo")):
        with mo.open("rb") as handle:
            catalog = gettext.GNUTranslations(handle)._catalog  # type: ignore[attr-defined]
        for key, value in catalog.items():
            if not key:
                continue  # the header: project metadata, not a message
            texts.append(key[0] if isinstance(key, tuple) else key)
            texts.append(value)
    return texts


@cache
def own_text() -> str:
    """The toolkit's fixed text, one piece a line: check names, then the catalogs."""
    return "\n".join([*CHECK_NAMES, *_catalog_texts()])


@cache
def is_own_piece(piece: str) -> bool:
    """Whether ``piece`` occurs in the toolkit's own fixed text (so it is no secret's)."""
    return piece in own_text()
