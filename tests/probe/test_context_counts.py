"""The context-window check does not believe a token count no tokenizer gives (issue 33, item 2).

Before: a proxy whose usage.prompt_tokens counted characters made a prompt of
~1,800 words look like 8,000 tokens, and the check passed a model that refuses
2,048 words; a server saying 1 prompt token for everything made the checker
build a prompt of 78 MB. Now the counts must give a sane number of tokens per
word, the prompt has a byte cap, and an unbelievable count never passes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fakes.hostile import COUNTS_WINDOW, hostile_server

from lmreg_nb.probe import CheckResult, Target, check_endpoint
from lmreg_nb.probe.checks.context_window import (
    MAX_CONTEXT_NEED,
    MAX_PROMPT_BYTES,
    ContextFinding,
    filler_prompt,
)

KEY = "sk-counts-0123456789abcdef"
CHINESE = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with hostile_server() as base:
        yield base


def _context_row(base: str, variant: str, need: int = 8000) -> CheckResult:
    target = Target(f"{base}/counts/{variant}/v1/chat/completions", KEY, "m", timeout=5)
    report = check_endpoint(target, context_need=need)
    return next(c for c in report.checks if c.name == "context-window")


def _largest_body(base: str, variant: str) -> int:
    sizes = [
        int(m.group(1))
        for path, head in list(base.requests)  # type: ignore[attr-defined]
        if path.startswith(f"/counts/{variant}/")
        for m in [re.search(rb"(?i)content-length: *(\d+)", head)]
        if m
    ]
    return max(sizes)


def test_a_proxy_counting_characters_does_not_pass_a_small_window(server: str, lang: str) -> None:
    row = _context_row(server, "chars")
    assert not row.passed and row.severity == "error", row.detail
    assert str(COUNTS_WINDOW) in row.detail  # the server's own words are quoted
    assert bool(CHINESE.search(row.detail)) is (lang == "zh-CN")
    # The prompt was sized at one token per word: 8,000 words, not 8,000 characters.
    assert _largest_body(server, "chars") > 8000 * 3


def test_a_count_of_one_for_everything_is_a_warning_and_a_bounded_prompt(
    server: str, lang: str
) -> None:
    row = _context_row(server, "one")
    assert not row.passed and row.severity == "warning", row.detail
    assert "usage.prompt_tokens" in row.detail
    assert bool(CHINESE.search(row.detail)) is (lang == "zh-CN")
    assert _largest_body(server, "one") < 200_000  # 8,000 words, not 78 MB


def test_the_prompt_never_exceeds_its_byte_cap_whatever_the_counts() -> None:
    for counts in ({8: 1, 140: 1}, {8: 1, 140: 2}, {140: 1}, {8: 60, 140: 700}):
        found = ContextFinding(MAX_CONTEXT_NEED, counts=dict(counts))
        assert found.implausible, counts
        words = found.words(MAX_CONTEXT_NEED)
        assert len(filler_prompt(words).encode()) <= MAX_PROMPT_BYTES
        assert words <= MAX_CONTEXT_NEED * 2


def test_believable_counts_are_still_used() -> None:
    # A template overhead of 20 and 1.3 tokens per word (a tokenizer splitting some words).
    found = ContextFinding(8000, counts={8: 30, 140: 202})
    assert not found.implausible and not found.estimate
    assert abs(found.words(8000) - (8000 - 20) / 1.3) < 20


def test_token_bounds_for_chinese_and_english() -> None:
    from lmreg_nb.probe.checks.token_counts import plausible_prompt_tokens

    lesson = "学校模型已登记，检查全部通过。" * 100  # 1,300 Chinese characters
    assert plausible_prompt_tokens(900, lesson)  # Qwen-like, 0.7 per character
    assert plausible_prompt_tokens(2600, lesson)  # Llama-like, 2 per character
    assert not plausible_prompt_tokens(len(lesson.encode()), lesson)  # UTF-8 bytes counted
    assert not plausible_prompt_tokens(2, lesson)  # a constant
    english = filler_prompt(2000)
    assert plausible_prompt_tokens(2010, english)
    assert not plausible_prompt_tokens(len(english), english)  # characters counted


def test_a_row_that_fails_never_says_it_was_not_judged(lang: str) -> None:
    """A failing context-window row in words of its own: "not judged" is what a row with
    passed null says ('[FAIL] ... not judged: ...' read as two verdicts at once)."""
    from lmreg_nb.probe.checks.context_window import CONTEXT_WINDOW
    from lmreg_nb.probe.text.checks import worded

    assert all("not judged" not in words.text for words in CONTEXT_WINDOW.says.values())
    row = worded(CONTEXT_WINDOW.failed_as("warning", "implausible", low_count=1, high_count=1,
                                          low=8, high=140, sent=8000, ms="12"))  # fmt: skip
    short = worded(CONTEXT_WINDOW.failed("short-failed", seen="HTTP 500"))
    for said in (row.detail, short.detail):
        assert "not judged" not in said and "未判定" not in said and "无法判断" not in said
    assert "usage.prompt_tokens" in row.detail and "HTTP 500" in short.detail
