"""The typed Summary: status and go_live decided in one place, old records still read."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from lmreg_nb.summary import CapacityRecord, Check, ModelRecord, Step, Summary, build_summary
from lmreg_nb.summary.performance import Performance

ALL_STEPS = ["contact card", "token", "register", "list models", "chat endpoint checks"]
PUBLIC = "https://llm.school.example/v1/chat/completions"


def _summary(steps: list[Step], checks: list[Check] | None = None, **kw: Any) -> Summary:
    kw.setdefault("models", [ModelRecord("m", "1", PUBLIC)])
    kw.setdefault("contact", None)
    return build_summary(
        school="S",
        base_url="https://p",
        env="e",
        steps=steps,
        checks=checks or [],
        **kw,
    )


def _ok_steps() -> list[Step]:
    return [Step(n, True, "done") for n in ALL_STEPS]


def test_every_step_and_required_check_passed_is_ok_and_ready() -> None:
    warn = Check("url-path", False, "warning", "path")
    steps = [*_ok_steps(), Step("capacity", True, "done")]
    cap = CapacityRecord(concurrency=48)
    s = _summary(steps, [Check("chat-answers", True, "error", "200"), warn], capacity=cap,
                 class_size=40)  # fmt: skip
    assert s.status == "ok"
    assert s.go_live.ready, s.go_live.blockers
    assert s.warnings == [warn] and s.failed_checks == [] and s.reason == ""


def test_no_capacity_measured_blocks_go_live() -> None:
    # class_size 0 skips the capacity test: the run is ok, but go-live lacks the evidence.
    for size in (0, None):
        s = _summary(_ok_steps(), [Check("chat-answers", True, "error", "200")], class_size=size)
        assert s.status == "ok" and not s.go_live.ready
        assert s.go_live.blockers == [next(b for b in s.go_live.blockers if "No capacity" in b)]
    # With a class size the missing step says it once, not twice.
    s = _summary(_ok_steps(), class_size=40)
    assert not any("No capacity" in b for b in s.go_live.blockers)
    assert any("capacity" in b and "not done" in b for b in s.go_live.blockers)


def test_no_steps_is_incomplete_never_ok() -> None:
    s = _summary([], models=[])
    assert s.status == "incomplete"
    assert not s.go_live.ready
    assert any("not done yet" in b for b in s.go_live.blockers)


def test_a_missing_step_is_incomplete() -> None:
    assert _summary(_ok_steps()[:-1]).status == "incomplete"


def test_a_failed_step_or_required_check_is_failed_with_reason() -> None:
    steps = _ok_steps()
    steps[-1] = Step("chat endpoint checks", False, "HTTP 500 from the endpoint")
    s = _summary(steps)
    assert s.status == "failed" and "HTTP 500" in s.reason
    s = _summary(_ok_steps(), [Check("chat-answers", False, "error", "HTTP 500")])
    assert s.status == "failed" and s.reason == "chat-answers: HTTP 500"
    assert any("chat-answers" in b for b in s.go_live.blockers)


def test_loopback_model_blocks_go_live_naming_the_host() -> None:
    url = "http://127.0.0.1:8766/v1/chat/completions"
    s = _summary(_ok_steps(), models=[ModelRecord("m", registry_url=url)])
    assert s.status == "ok"
    assert not s.go_live.ready
    assert any("127.0.0.1" in b and "cannot reach" in b for b in s.go_live.blockers)
    assert any("plain http" in b for b in s.go_live.blockers)


def test_bad_certificate_and_low_capacity_block_go_live() -> None:
    tls = Check("tls-certificate", False, "error", "self-signed certificate")
    steps = [*_ok_steps(), Step("capacity", True, "done")]
    cap = CapacityRecord(concurrency=4)
    s = _summary(steps, [tls], capacity=cap, class_size=40)
    assert s.status == "failed"
    assert any("certificate" in b for b in s.go_live.blockers)
    assert any("40" in b and "4" in b for b in s.go_live.blockers)
    enough = _summary(steps, capacity=CapacityRecord(concurrency=64), class_size=40)
    assert enough.go_live.ready, enough.go_live.blockers


def test_class_size_without_capacity_step_is_incomplete() -> None:
    assert _summary(_ok_steps(), class_size=30).status == "incomplete"


def test_json_round_trip_and_no_api_key() -> None:
    model = ModelRecord.from_json({"modelName": "m", "registryUrl": PUBLIC, "apiKey": "sk"})
    s = _summary(_ok_steps(), models=[model])
    data = s.to_json()
    assert "apiKey" not in data["models"][0]
    back = Summary.from_json(data)
    assert back.to_json() == data


def test_older_record_without_new_keys_still_reads() -> None:
    old = {
        "school": "Old School",
        "status": "ok",
        "steps": [{"name": n, "passed": True, "detail": "done"} for n in ALL_STEPS],
        "checks": [{"name": "chat-answers", "passed": True, "severity": "error", "detail": ""}],
        "models": [{"modelName": "m", "registryUrl": "http://127.0.0.1:1/v1/chat/completions"}],
        "generated_at": "2025-01-01T00:00:00+00:00",
    }
    s = Summary.from_json(old)
    assert s.status == "ok" and s.lang is None and s.capacity is None
    assert not s.go_live.ready  # decided from the models' URLs
    assert s.generated_at is not None and s.generated_at.year == 2025


def test_a_public_name_the_check_finds_unreachable_blocks_go_live() -> None:
    # url_warnings sees a public-looking name; the go-live check resolved it to 10.0.0.5.
    check = Check("url-public-host", False, "warning", "llm.school.example resolves to 10.0.0.5")
    steps = [*_ok_steps(), Step("capacity", True, "done")]
    s = _summary(steps, [check], capacity=CapacityRecord(concurrency=40), class_size=40)
    assert s.status == "ok"  # a warning does not fail the onboarding
    assert s.go_live.blockers == [
        "The platform cannot reach the model's host: llm.school.example resolves to 10.0.0.5"
    ]


def test_an_unreachable_host_comes_before_plain_http() -> None:
    url = "http://192.168.1.20:8000/v1/chat/completions"
    s = _summary(_ok_steps(), models=[ModelRecord("m", registry_url=url)])
    assert "cannot reach 192.168.1.20" in s.go_live.blockers[0]
    assert "plain http" in s.go_live.blockers[1]


# -- the typed summary: one type per value, JSON at the edges ----------------------------------


def test_step_names_are_an_enum_that_keeps_the_json_strings() -> None:
    import json

    from lmreg_nb.summary import EXPECTED_STEPS, StepName

    assert [str(n) for n in EXPECTED_STEPS] == ALL_STEPS
    step = Step(StepName.CHECKS, True, "ok")
    assert json.dumps(step.to_json()) == (
        '{"name": "chat endpoint checks", "passed": true, "detail": "ok"}'
    )
    assert Step("chat endpoint checks", True, "ok") == step  # a plain string is taken
    with pytest.raises(ValueError, match="chat endpoint check"):
        Step("chat endpoint check", True, "a typo")  # type: ignore[arg-type]


def test_the_probe_and_the_summary_share_one_check_type() -> None:
    from lmreg_nb.probe import CheckResult

    assert CheckResult is Check


def test_a_recorded_summary_is_read_without_deciding_it_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import lmreg_nb.summary.summary as module

    recorded = _summary(_ok_steps()).to_json()  # decided once, when it was made
    calls: list[object] = []
    real = module.decide
    monkeypatch.setattr(module, "decide", lambda *a, **kw: calls.append(a) or real(*a, **kw))
    again = Summary.from_json(recorded)
    assert calls == [] and again.to_json() == recorded
    older = {k: v for k, v in recorded.items() if k not in ("status", "go_live")}
    assert Summary.from_json(older).status == "ok" and len(calls) == 1


def test_rules_import_the_parts_and_no_part_imports_the_rules() -> None:
    import ast
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "lmreg_nb" / "summary"
    for part in ("model", "capacity", "fields"):
        tree = ast.parse((folder / f"{part}.py").read_text(encoding="utf-8"))
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not imported & {"rules", "summary"}, (part, imported)
    rules = ast.parse((folder / "rules.py").read_text(encoding="utf-8"))
    assert "model" in {n.module for n in ast.walk(rules) if isinstance(n, ast.ImportFrom)}


def test_odd_records_still_read_as_typed_values() -> None:
    s = Summary.from_json(
        {
            "steps": [{"name": "watch", "passed": True}, {"name": "token", "passed": True}],
            "checks": [{"name": "x", "passed": False, "severity": "critical"}, {"passed": True}],
            "models": [{"modelName": "m", "createTime": 1_700_000_000_000, "apiKey": "sk-1"}],
            "contact": {"name": "Li Hua"},
            "capacity": {"capacity": {"concurrency": "8"}, "levels": [{"concurrency": 8}, 3]},
        }
    )
    assert [st.name for st in s.steps] == ["token"]  # a step this version does not know
    assert [c.severity for c in s.checks] == ["error", "error"]  # unknown: the safe side
    assert s.models[0].create_time is not None and s.models[0].create_time.year == 2023
    assert "apiKey" not in s.models[0].to_json()
    assert s.contact is not None and (s.contact.name, s.contact.mobile) == ("Li Hua", "")
    assert s.capacity is not None and s.capacity.concurrency == 8
    assert [lv.concurrency for lv in s.capacity.levels] == [8]


def test_a_full_record_round_trips_through_its_json() -> None:
    from lmreg_nb.summary import CapacityLevel, Contact, Percentiles

    level = CapacityLevel(4, 8, 0, Percentiles(10.5, 20.0, 30.0), Percentiles(), Percentiles(1.0))
    capacity = CapacityRecord(4, 2.5, 80.0, "need-met", levels=[level], need=4, verdict="ok")
    s = _summary(
        [*_ok_steps(), Step("capacity", True, "done")],
        [Check("chat-answers", True, "error", "200")],
        capacity=capacity,
        class_size=4,
        contact=Contact("Li Hua", "13812345678", "a@school.example"),
        performance=Performance.from_json({"requests": 3, "ttft_ms": {"p50": 1.0}}),
        generated_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
    )
    data = s.to_json()
    assert data["capacity"]["capacity"] == {
        "concurrency": 4, "requests_per_s": 2.5, "output_tokens_per_s": 80.0,
        "limited_by": "need-met",
    }  # fmt: skip
    assert data["contact"] == {
        "name": "Li Hua",
        "mobile": "13812345678",
        "email": "a@school.example",
    }
    back = Summary.from_json(data)
    assert back == s and back.to_json() == data


def test_a_registered_name_the_server_does_not_answer_to_blocks_go_live() -> None:
    # Red-team pass (issue 44): the school configured the served name (the required chat
    # checks passed with it) but registered another; the platform sends the registered
    # one and gets 404 for every student. model-name-served is a warning (DESIGN's
    # table), so the run is ok, but go-live is not.
    from lmreg_nb.records.principal import obstacles

    steps = [*_ok_steps(), Step("capacity", True, "done")]
    detail = 'the platform will send model "school-assistant": a chat request with it got HTTP 404'
    for unanswered, ready in ((True, False), (False, True)):
        name = Check("model-name-served", False, "warning", detail, cause="not-served",
                     facts={"unanswered": unanswered})  # fmt: skip
        s = _summary(steps, [Check("chat-answers", True, "error", "200"), name],
                     capacity=CapacityRecord(concurrency=48), class_size=40)  # fmt: skip
        assert s.status == "ok" and s.go_live.ready is ready, s.go_live.blockers
    assert s.go_live.blockers == []  # served, though not listed: a warning only
    assert len(_summary(steps, [name], class_size=0).go_live.blockers) == 1  # capacity only
    name = Check("model-name-served", False, "warning", detail, cause="not-served",
                 facts={"unanswered": True})  # fmt: skip
    s = _summary(steps, [name], capacity=CapacityRecord(concurrency=48), class_size=40)
    (blocker,) = s.go_live.blockers
    assert "every student's chat would fail" in blocker and "school-assistant" in blocker
    (said,) = obstacles(s)
    assert "registered name" in said.text
