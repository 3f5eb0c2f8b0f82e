"""The context-window check reads ``usage.prompt_tokens`` through the same sanitiser as
every other count (found by the user pass of the fifth release).

Before: a server answering ``usage.prompt_tokens`` 10**400 (or 10**30 + characters) got a
``context-window`` detail quoting the 401-digit number twice, in both languages: the
number was dropped everywhere else (``usage_of``) but read raw by the context check.
Now it is left out as if not sent, as the other readers do, and the prompt is sized by
the estimate of one token per word.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fakes.hostile import hostile_server

from lmreg_nb.probe import Target, check_endpoint

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]  # the checks speak to a socket

KEY = "sk-absurd-counts-0123456789"
LONG_NUMBER = re.compile(r"\d{10,}")


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with hostile_server() as found:
        yield found


@pytest.mark.parametrize("variant", ["huge", "offset30"])
def test_an_absurd_prompt_count_is_never_quoted(base: str, variant: str, lang: str) -> None:
    target = Target(f"{base}/counts/{variant}/v1/chat/completions", KEY, "m", timeout=10)
    report = check_endpoint(target)
    row = next(c for c in report.checks if c.name == "context-window")
    assert not LONG_NUMBER.search(row.detail), row.detail[:300]
    # Left out as if not sent (usage_of's rule): the prompt is sized by the estimate.
    assert ("估算" if lang == "zh-CN" else "estimated") in row.detail, row.detail
