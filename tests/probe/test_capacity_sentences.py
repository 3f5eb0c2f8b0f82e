"""The capacity verdict's sentences join as each language writes them (no space after 。)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lmreg_nb import i18n
from lmreg_nb.probe.load.capacity import SLO, CapacityResult
from lmreg_nb.probe.load.levels import Level
from lmreg_nb.probe.text.capacity_text import verdict


@pytest.fixture(autouse=True)
def _english_after() -> Iterator[None]:
    yield
    i18n.set_language("en")


def _served_with_margin() -> CapacityResult:
    levels = [
        Level(4, requests=80, ttft_ms={"p90": 414.0}, meets_slo=True),
        Level(6, requests=120, ttft_ms={"p90": 775.0}, meets_slo=True),
    ]
    return CapacityResult(SLO(), levels, need=4, max_concurrency=6)


def test_chinese_sentences_have_no_space_between_them() -> None:
    i18n.set_language("zh-CN")
    said = verdict(_served_with_margin(), 4)
    assert said.count("。") >= 2, said  # several sentences, as the demo prints
    assert "。 " not in said, said


def test_english_sentences_keep_their_space() -> None:
    said = verdict(_served_with_margin(), 4)
    assert ". " in said and ".." not in said, said


def test_sentences_join_by_their_punctuation() -> None:
    assert i18n.sentences(["One.", "Two."]) == "One. Two."
    assert i18n.sentences(["一。", "二。"]) == "一。二。"
    assert i18n.sentences([]) == ""
