"""Charts in Chinese use a CJK font (never boxes), or stay in English with a one-line note."""

from __future__ import annotations

import io
import logging
import warnings
from collections.abc import Iterator

import pytest

from lmreg_nb import fonts, i18n

TITLE = "首字延迟 p90 与并发"
# The cached functions themselves: a test may replace the module attributes.
_CACHED = (fonts.find_cjk_font, fonts._note_no_font)


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    import matplotlib

    saved = matplotlib.rcParams.copy()
    for cached in _CACHED:
        cached.cache_clear()
    yield
    for cached in _CACHED:
        cached.cache_clear()
    matplotlib.rcParams.update(saved)
    i18n.set_language("en")


def render(title: str) -> list[str]:
    """Draw a chart with ``title``; returns the texts of the warnings matplotlib gave."""
    from matplotlib.figure import Figure

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        figure = Figure()
        axes = figure.subplots()
        axes.plot([-1, 0, 1])
        axes.set_title(title)
        figure.savefig(io.BytesIO(), format="png")
    return [str(w.message) for w in seen]


def test_english_charts_use_english() -> None:
    i18n.set_language("en")
    assert fonts.plot_gettext()("capacity") == "capacity"


def test_zh_charts_find_a_cjk_font_or_fall_back(caplog: pytest.LogCaptureFixture) -> None:
    i18n.set_language("zh-CN")
    with caplog.at_level(logging.WARNING, logger="lmreg_nb"):
        tr = fonts.plot_gettext()
    label = tr("capacity")
    if fonts.find_cjk_font() is None:
        assert label == "capacity"
        assert len(caplog.records) == 1
    else:
        assert label == i18n._("capacity") != "capacity"
        assert not caplog.records
        label = f"{label} {TITLE}"
    assert not [w for w in render(label) if "missing from font" in w]


def test_this_machine_has_a_cjk_font() -> None:
    # The dev container and CI install fonts-noto-cjk; without it the fallback test covers us.
    from matplotlib import font_manager

    installed = {f.name for f in font_manager.fontManager.ttflist}
    if not installed & set(fonts.CJK_FAMILIES):
        pytest.skip("no CJK font installed (apt-get install fonts-noto-cjk)")
    assert fonts.configure_cjk_font() in fonts.CJK_FAMILIES
    assert not [w for w in render(TITLE) if "missing from font" in w]


def test_without_a_cjk_font_labels_stay_english_with_one_note(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(fonts, "find_cjk_font", lambda: None)
    i18n.set_language("zh-CN")
    with caplog.at_level(logging.WARNING, logger="lmreg_nb"):
        first = fonts.plot_gettext()
        fonts.plot_gettext()
    assert first("capacity") == "capacity"
    assert len(caplog.records) == 1
    assert "fonts-noto-cjk" in caplog.records[0].getMessage()
    assert "\n" not in caplog.records[0].getMessage()


def test_the_fallback_check_itself_sees_boxes() -> None:
    # Without a CJK font in the list, matplotlib warns: the check above can fail.
    import matplotlib

    matplotlib.rcParams["font.family"] = ["DejaVu Sans"]
    matplotlib.rcParams["font.sans-serif"] = ["DejaVu Sans"]
    assert any("missing from font" in w for w in render(TITLE))
