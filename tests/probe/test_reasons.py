"""Error kinds as people read them: translated labels, the JSON keeps the kinds."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lmreg_nb import i18n
from lmreg_nb.probe.wire.reasons import kinds_text

COUNTS = {"timeout": 3, "status 500": 2, "cut stream": 1, "something new": 1}


@pytest.fixture
def lang(request: pytest.FixtureRequest) -> Iterator[None]:
    before = i18n.current_language()
    i18n.set_language(request.param)
    yield
    i18n.set_language(before)


@pytest.mark.parametrize("lang", ["en"], indirect=True)
def test_kinds_read_as_words_with_their_counts(lang: None) -> None:
    assert kinds_text(COUNTS) == "timed out ×3, HTTP 500 ×2, cut stream ×1, something new ×1"


@pytest.mark.parametrize("lang", ["zh-CN"], indirect=True)
def test_kinds_are_translated(lang: None) -> None:
    text = kinds_text(COUNTS)
    assert "HTTP 500 ×2" in text and "something new ×1" in text  # unknown kinds as they are
    assert "timed out" not in text and "cut stream" not in text
    assert any("\u4e00" <= c <= "\u9fff" for c in text)
