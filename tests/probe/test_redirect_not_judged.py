"""A registryUrl that redirects (a trailing slash: FastAPI's and vLLM's 307) judges neither
the key, the error replies nor the model name (found by the user pass of the fifth
release).

Before: `lmreg-nb check http://HOST:PORT/v1/chat/completions/` said, beside chat-answers'
right finding (register the redirect's target), "key-accepted ✔ the key was accepted" on
the 307 (the router redirects before any key is read) and "errors-are-json ✘ the HTTP 307
reply is no Content-Type, not JSON": a tick and a blame the answer cannot carry.
In-process: an httpx MockTransport school model that redirects the trailing slash.
"""

from __future__ import annotations

import httpx
import pytest

from lmreg_nb.probe import Target, check_endpoint

pytestmark = pytest.mark.timeout(120)

KEY = "sk-redirect-0123456789abcdef"
MODEL = "http://127.0.0.1:8766"


def _school_model(request: httpx.Request) -> httpx.Response:
    if request.url.path.endswith("/"):
        target = str(request.url.copy_with(path=request.url.path.rstrip("/")))
        return httpx.Response(307, headers={"location": target})
    return httpx.Response(401, json={"error": "Unauthorized"})


@pytest.fixture
def in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    def client(timeout: float) -> httpx.AsyncClient:
        return httpx.AsyncClient(timeout=timeout, transport=httpx.MockTransport(_school_model))

    monkeypatch.setattr("lmreg_nb.probe.report.make_client", client)


def test_a_redirect_is_the_finding_and_nothing_is_judged_on_it(in_process: None, lang: str) -> None:
    target = Target(f"{MODEL}/v1/chat/completions/", KEY, "served", timeout=5,
                    registered_name="registered")  # fmt: skip
    report = check_endpoint(target)
    rows = {c.name: c for c in report.checks}
    assert rows["chat-answers"].failed and f"{MODEL}/v1/chat/completions" in (
        rows["chat-answers"].detail
    )
    assert rows["key-accepted"].passed is None, rows["key-accepted"].detail
    assert rows["errors-are-json"].passed is not False, rows["errors-are-json"].detail
    name = rows.get("model-name-served")
    assert name is None or name.passed is None, name.detail
