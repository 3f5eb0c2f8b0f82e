"""`capacity` stops at the first level where every request got the same refusal (401, 404)
and points to `check` (found by the user pass of the fifth release).

Before: `lmreg-nb capacity http://HOST:PORT/v1` (the most common mistake) or a wrong key
sent 120 requests over three levels, drew a table of "✘" levels and ended on the raw
"status 404: Not Found" / "status 401: ...": a connection refused stopped at once
(issue 40 item 7), an answer that refuses every request alike did not.
The refusing server is served in this process (tests/fakes/hosts.py): the load client
still speaks HTTP/1.1 to it over a real socket, and no port is bound.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fakes import hosts

from lmreg_nb.probe.load.capacity import SLO, find_capacity
from lmreg_nb.probe.target import Target
from lmreg_nb.probe.text.capacity_text import verdict

pytestmark = pytest.mark.timeout(120)


async def _refuses(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """401 under ``/key/``, 404 anywhere else, to every request alike."""
    if scope["type"] != "http":
        return
    more = True
    while more:  # the request's body, read and dropped
        message = await receive()
        more = message.get("more_body", False)
    status = 401 if scope["path"].startswith("/key/") else 404
    body = {"error": "Unauthorized"} if status == 401 else {"detail": "Not Found"}
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with hosts.served(_refuses) as url:
        yield url


@pytest.mark.parametrize("path", ["/v1", "/key/v1/chat/completions"])
def test_one_level_then_the_pointer_to_check(base: str, path: str, lang: str) -> None:
    target = Target(base + path, "sk-refused-0123456789", "m", timeout=5)
    result = find_capacity(target, slo=SLO(), need=4, budget_s=60)
    assert len(result.levels) == 1, [lv.concurrency for lv in result.levels]
    assert result.capacity.concurrency == 0
    said = verdict(result, 4)
    assert "lmreg-nb check" in said, said
