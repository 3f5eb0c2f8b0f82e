"""The record of a registryUrl that serves no chat, or of a model that is down, follows the
shipped summary schema (found by the user pass of the fifth release).

Before: `lmreg-nb onboard -p registry_url http://HOST:PORT/v1` wrote a record whose checks
carry the causes ``not-judged:wrong-path`` and ``not-run:wrong-path`` (a model that is
down: ``not-run:unreached``), which the schema's identifier pattern refused: the two
onboardings the release is about broke the contract a provider reads records with.
In-process: an httpx MockTransport school model (the chat path only; 404 elsewhere), and
127.0.0.1:9 refused.
"""

from __future__ import annotations

import pytest
from contract_schemas import assert_valid
from fakes.chat_model import MODEL, school_model, use_in_checks

from lmreg_nb.probe import Target, check_endpoint
from lmreg_nb.summary import Step, build_summary

pytestmark = pytest.mark.timeout(120)

KEY = "sk-not-judged-0123456789abcdef"


@pytest.fixture
def in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    use_in_checks(monkeypatch, school_model(KEY))


@pytest.mark.parametrize("url", [f"{MODEL}/v1", "http://127.0.0.1:9/v1/chat/completions"])
def test_the_record_of_an_address_that_serves_no_chat_follows_the_schema(
    in_process: None, url: str, lang: str
) -> None:
    report = check_endpoint(Target(url, KEY, "m", timeout=5), requests=4)
    assert any(c.passed is None for c in report.checks)  # something was not judged or run
    summary = build_summary(
        school="S", contact=None, base_url=None, env=None,
        steps=[Step("chat endpoint checks", False, "x")], models=[],
        checks=report.checks, class_size=0, lang=lang, target_urls=[url],
    )  # fmt: skip
    assert_valid("summary", summary.to_json())
