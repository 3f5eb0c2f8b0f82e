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

import pytest
from fakes.chat_model import MODEL, school_model, use_in_checks

from lmreg_nb.probe import Target, check_endpoint

pytestmark = pytest.mark.timeout(120)

KEY = "sk-other-endpoint-0123456789abcdef"


@pytest.fixture
def in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    use_in_checks(monkeypatch, school_model(KEY))


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


@pytest.mark.parametrize("given", ["/v1/chat/completions/", "//v1/chat/completions"])
def test_a_slash_too_many_is_the_path_finding_with_the_chat_address(
    in_process: None, given: str
) -> None:
    # A red-team finding against llama.cpp (404 to either): url-path said "ends in
    # v1/chat/completions" above a vague "Nothing serves this path".
    fixed = f"{MODEL}/v1/chat/completions"
    report = check_endpoint(Target(f"{MODEL}{given}", KEY, "m", timeout=5))
    path = next(c for c in report.checks if c.name == "url-path")
    assert path.failed and path.severity == "error", path.detail
    assert path.fact("url") == fixed and f"Register {fixed}" in path.detail
