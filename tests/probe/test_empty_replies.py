"""An HTTP 200 with no reply in it passes none of the function checks (issue 33, partial).

Before: an empty body, ``{}`` or an event stream without a single event passed
system-role, context-window and streams-not-cut. Now each row fails and says
what was seen.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fakes.hostile import Base, hostile_server

from lmreg_nb.probe import Target, check_endpoint

ROWS = ("system-role", "context-window", "streams-not-cut")
SEEN = {
    "body": "an empty body",
    "json": "an empty JSON object",
    "stream": "an event stream of 0 events",
}


@pytest.fixture(scope="module")
def server() -> Iterator[Base]:
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


def test_no_load_test_on_a_stream_that_carried_no_token(server: Base) -> None:
    # Red-team pass (issue 44): an event stream of keep-alive comments (or of nothing)
    # answered 200, so the prefix probe and the load test ran against it; each request
    # waited out its timeout and `check -n 8 --duration 5` took 25 s more to say
    # "deadline ×4". The streamed check request already showed there is no reply.
    target = Target(
        f"{server}/empty200/stream/v1/chat/completions", "sk-empty-0123456789", "m", timeout=3
    )
    sent = len(server.requests)
    report = check_endpoint(target, context_need=2000, requests=8, concurrency=4)
    (load,) = [c for c in report.checks if c.name == "load-test"]
    assert not load.passed and "not run: the streamed check request failed" in load.detail
    assert report.workload is None  # no load test ran
    checks_only = len(server.requests) - sent
    report = check_endpoint(target, context_need=2000)
    assert len(server.requests) - sent == 2 * checks_only  # no request beyond the checks'
