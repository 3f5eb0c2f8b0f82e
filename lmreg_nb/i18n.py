"""Every sentence a person reads, in Simplified Chinese or English (gettext catalogs).

English is the source language: ``_("Token expires {when}").format(when=...)``
returns the English text when no catalog is loaded. Catalogs live in
``lmreg_nb/locale/<lang>/LC_MESSAGES/lmreg_nb.mo`` and are managed with Babel.
Call ``_()`` when the text is shown, never at import time, so a language chosen
later (a notebook parameter, ``--lang``) still applies.
"""

from __future__ import annotations

import contextlib
import gettext
import locale
import os
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = [
    "DOMAIN",
    "LANGUAGES",
    "N_",
    "_",
    "clauses",
    "current_language",
    "format_local_time",
    "listing",
    "local_time",
    "local_zone",
    "ngettext",
    "normalize_language",
    "pgettext",
    "sentences",
    "set_language",
    "speaking",
    "zone_label",
]

DOMAIN = "lmreg_nb"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
#: The languages the toolkit speaks; the first is the source language.
LANGUAGES = ("en", "zh-CN")
#: The zone of a Chinese school, unless TZ names another.
CHINA_ZONE = "Asia/Shanghai"

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
    chosen = (
        normalize_language(lang)
        or normalize_language(os.environ.get("LMREG_LANG"))
        or _from_locale()
    )
    if chosen == "en":
        translations = gettext.NullTranslations()
    else:
        code = chosen.replace("-", "_")
        # LMREG_LOCALE_DIR: try a catalog without reinstalling (translators, the pseudo-locale
        # test of a notebook run, whose kernel is another process).
        where = os.environ.get("LMREG_LOCALE_DIR") or str(LOCALE_DIR)
        translations = gettext.translation(DOMAIN, localedir=where, languages=[code], fallback=True)
    _install(translations, chosen)
    return chosen


def _install(translations: gettext.NullTranslations, lang: str) -> None:
    # The one place the active catalog changes; tests install a pseudo-locale through it.
    global _current, _translations
    _translations = translations
    _current = lang


@contextlib.contextmanager
def speaking(lang: str | None) -> Iterator[str]:
    """Within the block, speak ``lang`` (None: the current language); then as before."""
    global _current
    before, translations = _current, _translations
    chosen = set_language(lang) if lang else current_language()
    try:
        yield chosen
    finally:
        if lang:
            _install(translations, before or chosen)
            _current = before  # None again: chosen from the environment on next use


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


def pgettext(context: str, message: str) -> str:
    """``message`` in the current language, told apart by ``context``.

    For a word with two meanings, e.g. ``pgettext("column", "updated")`` (a time) next to
    ``_("updated")`` (what was done to a model).
    """
    if _current is None:
        set_language()
    return _translations.pgettext(context, message)


def listing(items: Iterable[str]) -> str:
    """Items joined as a list in the current language (``a, b`` / ``a，b``)."""
    return pgettext("list separator", ", ").join(items)


def clauses(items: Iterable[str]) -> str:
    """Clauses joined in the current language (``a; b`` / ``a；b``).

    A clause that is a whole sentence loses its full stop before the separator:
    "…请先完成。；…" and "…Run them.; …" read as two marks in a row.
    """
    parts = list(items)
    trimmed = [re.sub(r"(?<![.。])[.。]$", "", p) for p in parts[:-1]]
    return pgettext("clause separator", "; ").join([*trimmed, *parts[-1:]])


#: A sentence ending in one of these (Chinese punctuation) needs no space after it.
_FULL_WIDTH_ENDS = ("。", "！", "？", "；", "：", "）", "”")


def sentences(items: Iterable[str]) -> str:
    """Sentences joined as the language writes them: a space after ``.``, none after ``。``."""
    text = ""
    for item in items:
        if text and not text.endswith(_FULL_WIDTH_ENDS):
            text += " "
        text += item
    return text


def N_(message: str) -> str:
    """Mark a module-level text for extraction; translate it with ``_()`` where shown."""
    return message


def Nn_(singular: str, plural: str) -> tuple[str, str]:
    """Mark a text and its plural for extraction; translate them with ``ngettext()``."""
    return singular, plural


def _zone_named(name: str | None) -> tzinfo | None:
    if not name:
        return None
    try:
        return ZoneInfo(name.lstrip(":"))
    except (ZoneInfoNotFoundError, ValueError):
        return None


def _system_zone() -> tzinfo:
    # An IANA name reads better than "UTC+01:00": from TZ, else the /etc/localtime link.
    zone = _zone_named(os.environ.get("TZ"))
    if zone is None:
        link = Path("/etc/localtime")
        if link.is_symlink() and "zoneinfo/" in str(link.resolve()):
            zone = _zone_named(str(link.resolve()).split("zoneinfo/", 1)[1])
    return zone or datetime.now().astimezone().tzinfo or UTC


def local_zone(lang: str | None = None) -> tzinfo:
    """The school's zone: Asia/Shanghai for zh-CN (unless TZ names one), else the system zone."""
    lang = normalize_language(lang) or current_language()
    if lang == "zh-CN" and not os.environ.get("TZ"):
        # tzdata may be missing (Windows without the tzdata package): China has no DST.
        return _zone_named(CHINA_ZONE) or timezone(timedelta(hours=8), "CST")
    return _system_zone()


def local_time(dt: datetime, lang: str | None = None) -> datetime:
    """``dt`` in the school's zone (:func:`local_zone`); a naive ``dt`` is taken as UTC
    (records keep UTC)."""
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(local_zone(lang))


def format_local_time(dt: datetime, lang: str | None = None, *, zone: bool = True) -> str:
    """``dt`` in the school's local time, labelled with its zone.

    ``2026-09-01 14:05 Asia/Shanghai (UTC+08:00)``; without ``zone`` (a table that says
    it once) ``2026-09-01 14:05``. A naive ``dt`` is taken as UTC (records keep UTC).
    """
    local = local_time(dt, lang)
    return f"{local:%Y-%m-%d %H:%M} {zone_label(local)}" if zone else f"{local:%Y-%m-%d %H:%M}"


def zone_label(local: datetime) -> str:
    """The zone of an aware ``local`` time: ``Asia/Shanghai (UTC+08:00)``, or ``UTC``."""
    offset = local.strftime("%z")
    label = f"UTC{offset[:3]}:{offset[3:]}" if offset not in ("", "+0000") else "UTC"
    name = getattr(local.tzinfo, "key", None) or local.tzname() or label
    if name in (label, "UTC", "Etc/UTC", "Etc/GMT", "GMT"):
        return label
    return f"{name} ({label})"
