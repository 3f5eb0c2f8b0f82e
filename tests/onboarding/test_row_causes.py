"""A failed run names each distinct cause once, and every mistake of a contact card at once
(a batch row is then fixed in one go, not one run per mistake)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lmreg_nb import i18n
from lmreg_nb.onboarding import Onboarding
from lmreg_nb.summary import Check, Step, build_summary

CAUSE = "could not connect: nothing listens on 127.0.0.1:9"


@pytest.fixture(autouse=True)
def _english_after() -> Iterator[None]:
    yield
    i18n.set_language("en")


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_checks_failing_for_one_reason_name_it_once(lang: str) -> None:
    i18n.set_language(lang)
    checks = [Check(n, False, "error", CAUSE) for n in ("reachable", "stream", "non-stream")]
    checks.append(Check("usage-present", False, "warning", CAUSE))
    steps = [
        Step("contact card", True, ""),
        Step("token", True, ""),
        Step("register", True, ""),
        Step("list models", True, ""),
        Step("chat endpoint checks", False, f"required checks failed: reachable ({CAUSE})"),
        Step("chat", False, CAUSE),  # the chat prompt failed for the same reason
    ]
    summary = build_summary(
        school="S", contact=None, base_url=None, env=None, steps=steps, models=[],
        checks=checks, target_urls=[],
    )  # fmt: skip
    said = " | ".join(summary.go_live.blockers)
    assert said.count("127.0.0.1:9") == 1, summary.go_live.blockers
    assert all(name in said for name in ("reachable", "stream", "non-stream"))


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_a_card_with_a_bad_mobile_and_a_bad_email_reports_both(lang: str) -> None:
    run = Onboarding.begin("School", "Li Hua", "12345", "not-an-email", lang=lang)
    step = next(s for s in run.steps if s.name == "contact card")
    assert not step.passed
    assert "contact_mobile" in step.detail and "contact_email" in step.detail
    if lang == "zh-CN":
        assert "；" in step.detail and "; " not in step.detail


def test_a_missing_school_is_reported_with_the_card() -> None:
    run = Onboarding.begin("", "Li Hua", "12345", "ai@school.edu.cn", lang="en")
    step = next(s for s in run.steps if s.name == "contact card")
    assert "school" in step.detail and "contact_mobile" in step.detail
