"""A CJK font for matplotlib, so that charts in Chinese show glyphs, never boxes.

``plot_gettext()`` is what plotting code calls for its titles, axes and legends:
it returns the catalog's ``_`` when the language is zh-CN and an installed CJK
font was found and configured (matplotlib ``rcParams``); otherwise it returns
an identity, so labels stay in English, and logs a one-line note once. On
Debian and Ubuntu the package ``fonts-noto-cjk`` provides a suitable font.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

from lmreg_nb.i18n import _, current_language

__all__ = ["CJK_FAMILIES", "configure_cjk_font", "find_cjk_font", "plot_gettext"]

log = logging.getLogger("lmreg_nb")

#: Font families that cover Simplified Chinese, most suitable first
#: (Linux packages, then Windows and macOS system fonts).
CJK_FAMILIES = (
    "Noto Sans CJK SC",
    "Noto Sans SC",
    "Source Han Sans SC",
    "Source Han Sans CN",
    "WenQuanYi Micro Hei",
    "WenQuanYi Zen Hei",
    "Microsoft YaHei",
    "PingFang SC",
    "Hiragino Sans GB",
    "SimHei",
    "Noto Sans CJK TC",
    "Noto Sans CJK JP",
    "Source Han Sans",
    "Noto Serif CJK SC",
)


@functools.lru_cache(maxsize=1)
def find_cjk_font() -> str | None:
    """The first installed family of :data:`CJK_FAMILIES` that matplotlib knows, or None."""
    from matplotlib import font_manager

    installed = {entry.name for entry in font_manager.fontManager.ttflist}
    return next((name for name in CJK_FAMILIES if name in installed), None)


def configure_cjk_font() -> str | None:
    """Put the CJK font first in matplotlib's sans-serif list; returns its name, or None."""
    name = find_cjk_font()
    if name is None:
        return None
    import matplotlib

    sans = [f for f in matplotlib.rcParams["font.sans-serif"] if f != name]
    matplotlib.rcParams["font.sans-serif"] = [name, *sans]
    matplotlib.rcParams["font.family"] = ["sans-serif"]
    # CJK fonts often lack U+2212 (the minus sign matplotlib uses on axes): a box otherwise.
    matplotlib.rcParams["axes.unicode_minus"] = False
    return name


def _english(message: str) -> str:
    return message


@functools.lru_cache(maxsize=1)
def _note_no_font() -> None:
    # Once per process: a note, not a warning on every chart.
    log.warning(
        _(
            "No Chinese font found for the charts (install fonts-noto-cjk); "
            "chart labels stay in English."
        )
    )


def plot_gettext() -> Callable[[str], str]:
    """The translation function for chart texts: ``_`` in zh-CN with a CJK font, else English."""
    if current_language() != "zh-CN":
        return _english
    if configure_cjk_font() is None:
        _note_no_font()
        return _english
    return _
