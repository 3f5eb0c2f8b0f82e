"""The principal's page and the record say, in plain words, what the capacity was measured with."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fakes.summaries import CAPACITY, demo_summary

from lmreg_nb import i18n
from lmreg_nb.records.html import render_summary_html
from lmreg_nb.records.principal import render_principal_html

LESSON = {"name": "lesson", "prompt_tokens": 1756, "shared_prefix_tokens": 1693, "turns": 3,
          "max_tokens": 300}  # fmt: skip
PREFIX = {"reused": False, "first_ms": 600.0, "next_ms": 590.0}


@pytest.fixture(autouse=True)
def _english_after() -> Iterator[None]:
    yield
    i18n.set_language("en")


def _text(page: str) -> str:
    return re.sub(r"<[^>]+>", " ", re.sub(r"<style>.*?</style>", "", page, flags=re.S))


@pytest.mark.parametrize(
    ("lang", "words"),
    [("en", "measured as a class in a lesson"), ("zh-CN", "模拟了一个班级上课")],
)
def test_the_principals_page_says_the_class_was_measured_in_a_lesson(lang: str, words: str) -> None:
    i18n.set_language(lang)
    summary = demo_summary(lang, capacity={**CAPACITY, "workload": LESSON})
    assert words in _text(render_principal_html(summary))
    without = demo_summary(lang)  # an older record: no workload, no sentence
    assert words not in _text(render_principal_html(without))


def test_the_record_shows_the_workload_and_the_prefix_cache_finding() -> None:
    capacity = {**CAPACITY, "workload": LESSON, "prefix_cache": PREFIX}
    summary = demo_summary("en", capacity=capacity)
    text = _text(render_summary_html(summary))
    assert "1,693-token lesson" in text and "3 turns per conversation" in text
    assert "--enable-prefix-caching" in text
    assert summary.to_json()["capacity"]["workload"] == LESSON
