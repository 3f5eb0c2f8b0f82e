"""A registryUrl copied from the server's other endpoint (``…/v1/models``) is diagnosed as
the path, with the school's own chat address, as ``…/v1`` is (found by the user pass of
the fifth release).

Before: POST ``…/v1/models`` got 405, the diagnosis asked
``…/v1/models/v1/chat/completions`` (nothing there) and gave up: ``key-accepted`` said
"the key was accepted" on the 405, and url-path, a warning, suggested that nonsense
address. In-process: an httpx MockTransport school model (vLLM's routes: the chat path
and GET /v1/models; 405 for a POST to /v1/models, 404 elsewhere).
"""

from __future__ import annotations

import json

import httpx
import pytest

from lmreg_nb.probe import Target, check_endpoint

pytestmark = pytest.mark.timeout(120)

KEY = "sk-other-endpoint-0123456789abcdef"
MODEL = "http://127.0.0.1:8766"
REPLY = {
    "id": "c", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "ok"}}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}  # fmt: skip


def _school_model(request: httpx.Request) -> httpx.Response:
    path = request.url.path
    if path == "/v1/models":
        if request.method != "GET":
            return httpx.Response(405, json={"detail": "Method Not Allowed"})
        return httpx.Response(200, json={"object": "list", "data": [{"id": "m"}]})
    if path != "/v1/chat/completions":
        return httpx.Response(404, json={"detail": "Not Found"})
    if request.headers.get("authorization") != f"Bearer {KEY}":
        return httpx.Response(401, json={"error": {"message": "bad key"}})
    if json.loads(request.content).get("stream"):
        body = b'data: {"choices":[{"index":0,"delta":{"content":"ok"}}]}\n\ndata: [DONE]\n\n'
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)
    return httpx.Response(200, json=REPLY)


@pytest.fixture
def in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    def client(timeout: float) -> httpx.AsyncClient:
        return httpx.AsyncClient(timeout=timeout, transport=httpx.MockTransport(_school_model))

    monkeypatch.setattr("lmreg_nb.probe.report.make_client", client)


def test_a_models_url_is_the_path_finding_with_the_chat_address(
    in_process: None, lang: str
) -> None:
    fixed = f"{MODEL}/v1/chat/completions"
    report = check_endpoint(Target(f"{MODEL}/v1/models", KEY, "m", timeout=5))
    rows = {c.name: c for c in report.checks}
    path = rows["url-path"]
    assert path.failed and path.severity == "error", path.detail
    assert path.fact("url") == fixed and fixed in path.detail
    assert "/v1/models/v1" not in " ".join(c.detail for c in report.checks)
    assert rows["key-accepted"].passed is None, rows["key-accepted"].detail
