"""An HTTP 200 with no reply in it passes none of the function checks (issue 33, partial).

Before: an empty body, ``{}`` or an event stream without a single event passed
system-role, context-window and streams-not-cut. Now each row fails and says
what was seen.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fakes.hostile import hostile_server

from lmreg_nb.probe import Target, check_endpoint

ROWS = ("system-role", "context-window", "streams-not-cut")
SEEN = {
    "body": "an empty body",
    "json": "an empty JSON object",
    "stream": "an event stream of 0 events",
}


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with hostile_server() as base:
        yield base


@pytest.mark.parametrize("variant", sorted(SEEN))
def test_an_empty_200_fails_the_function_checks_and_says_what_was_seen(
    server: str, variant: str
) -> None:
    target = Target(
        f"{server}/empty200/{variant}/v1/chat/completions", "sk-empty-0123456789", "m", timeout=3
    )
    report = check_endpoint(target, context_need=2000)
    rows = {c.name: c for c in report.checks if c.name in ROWS}
    assert set(rows) == set(ROWS)
    for name, row in rows.items():
        assert not row.passed and row.severity == "error", (name, row.detail)
        assert "no reply" in row.detail and SEEN[variant] in row.detail, (name, row.detail)
