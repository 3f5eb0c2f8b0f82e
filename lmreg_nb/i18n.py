"""Every sentence a person reads, in Simplified Chinese or English (gettext catalogs).

English is the source language: ``_("Token expires {when}").format(when=...)``
returns the English text when no catalog is loaded. Catalogs live in
``lmreg_nb/locale/<lang>/LC_MESSAGES/lmreg_nb.mo`` and are managed with Babel.
Call ``_()`` when the text is shown, never at import time, so a language chosen
later (a notebook parameter, ``--lang``) still applies.
"""

from __future__ import annotations

import gettext
import locale
import os
from pathlib import Path

__all__ = [
    "DOMAIN",
    "LANGUAGES",
    "N_",
    "_",
    "current_language",
    "ngettext",
    "normalize_language",
    "set_language",
]

DOMAIN = "lmreg_nb"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
#: The languages the toolkit speaks; the first is the source language.
LANGUAGES = ("en", "zh-CN")

_current: str | None = None
_translations: gettext.NullTranslations = gettext.NullTranslations()


def normalize_language(value: str | None) -> str | None:
    """``zh``, ``zh_CN.UTF-8``, ``zh-Hans`` -> ``zh-CN``; ``en_US`` -> ``en``; else None."""
    if not value:
        return None
    tag = value.strip().split(".")[0].replace("_", "-").lower()
    if tag.startswith("zh"):
        return "zh-CN"
    if tag.startswith("en") or tag in ("c", "posix"):
        return "en"
    return None


def _from_locale() -> str:
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        found = normalize_language(os.environ.get(var))
        if found:
            return found
    try:
        found = normalize_language(locale.getlocale()[0])
    except ValueError:
        found = None
    return found or "en"


def set_language(lang: str | None = None) -> str:
    """Choose the language: ``lang``, else LMREG_LANG, else the locale; returns it."""
    global _current, _translations
    chosen = (
        normalize_language(lang) or normalize_language(os.environ.get("LMREG_LANG")) or _from_locale()
    )
    if chosen == "en":
        _translations = gettext.NullTranslations()
    else:
        code = chosen.replace("-", "_")
        _translations = gettext.translation(
            DOMAIN, localedir=str(LOCALE_DIR), languages=[code], fallback=True
        )
    _current = chosen
    return chosen


def current_language() -> str:
    """The language in use (chosen from the environment on first use)."""
    return _current if _current is not None else set_language()


def _(message: str) -> str:
    """``message`` in the current language."""
    if _current is None:
        set_language()
    return _translations.gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """The singular or plural form for ``n``, in the current language."""
    if _current is None:
        set_language()
    return _translations.ngettext(singular, plural, n)


def N_(message: str) -> str:
    """Mark a module-level text for extraction; translate it with ``_()`` where shown."""
    return message
