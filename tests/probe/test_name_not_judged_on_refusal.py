"""A refused key leaves the model name not judged (found by the user pass of the fifth
release).

Before: `lmreg-nb onboard` with a wrong LMREG_MODEL_API_KEY said, beside the key's own
finding, "model-name-served: the platform will send model "wk-model": a chat request
with it got HTTP 401 ... Register the modelName the server serves, or serve an alias
(vLLM: --served-model-name ...)": the school was told to rename a model the server never
got to judge, the advice the contract rules out ("passed": null, counts as neither).
In-process: an httpx MockTransport school model that refuses every request without its
key (vLLM's 401, /v1/models included).
"""

from __future__ import annotations

import httpx
import pytest

from lmreg_nb.probe import Target, check_endpoint

pytestmark = pytest.mark.timeout(120)

KEY = "sk-the-right-key-0123456789abcdef"
MODEL = "http://127.0.0.1:8766/v1/chat/completions"


def _school_model(request: httpx.Request) -> httpx.Response:
    if request.headers.get("authorization") != f"Bearer {KEY}":
        return httpx.Response(401, json={"error": "Unauthorized"})
    return httpx.Response(500, json={"error": {"message": "not reached in this test"}})


@pytest.fixture
def in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    def client(timeout: float) -> httpx.AsyncClient:
        return httpx.AsyncClient(timeout=timeout, transport=httpx.MockTransport(_school_model))

    monkeypatch.setattr("lmreg_nb.probe.report.make_client", client)


def test_a_refused_key_is_no_reason_to_rename_the_model(in_process: None, lang: str) -> None:
    target = Target(MODEL, "sk-wrong-key-000000000000", "served", timeout=5,
                    registered_name="registered")  # fmt: skip
    report = check_endpoint(target)
    rows = {c.name: c for c in report.checks}
    assert rows["key-accepted"].failed, rows["key-accepted"].detail
    name = rows.get("model-name-served")
    assert name is not None and name.passed is None, name
    said = " ".join(c.detail for c in report.checks)
    assert "--served-model-name" not in said and "ollama cp" not in said, said
    json_row = next(c for c in report.to_json()["checks"] if c["name"] == "model-name-served")
    assert json_row["passed"] is None
