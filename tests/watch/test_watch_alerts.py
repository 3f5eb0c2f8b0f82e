"""When to alert, decided without a network: alert once after N, one recovery, TLS once a day."""

from __future__ import annotations

import pytest

from lmreg_nb.watch.alerts import DAY_MS, ModelState, TlsSeen, step
from lmreg_nb.watch.call import ProbeResult

OK = ProbeResult(True, latency_s=0.2)
FAIL = ProbeResult(False, "http-5xx", "answered HTTP 500", status=500)
MODEL = ModelState("m-1", "qwen-7b", host="llm.school.example")
MIN = 60_000


def _run(results: list[ProbeResult], fail_after: int = 3, start: ModelState | None = None):
    state, sent = start, []
    for i, result in enumerate(results):
        state, events = step(state, MODEL, result, now_ms=i * MIN, fail_after=fail_after)
        sent += [(i, e.type) for e in events]
    return state, sent


def test_the_first_round_only_sets_the_baseline() -> None:
    state, sent = _run([OK])
    assert sent == [] and state is not None and state.status == "up"


def test_one_alert_after_n_failures_and_one_recovery() -> None:
    state, sent = _run([OK, FAIL, FAIL, FAIL, FAIL, FAIL, OK, OK])
    assert sent == [(3, "alert"), (6, "recovery")]
    assert state is not None and state.status == "up" and state.fails == 0


def test_the_alert_says_since_the_first_failure_and_the_recovery_how_long() -> None:
    state = None
    events = []
    for i, result in enumerate([OK, FAIL, FAIL, FAIL, OK]):
        state, got = step(state, MODEL, result, now_ms=i * MIN, fail_after=3)
        events += got
    alert, recovery = events
    assert alert.since_ms == 1 * MIN and alert.at_ms == 3 * MIN and alert.notify_type == "failure"
    assert alert.state.kind == "http-5xx" and alert.state.fails == 3
    assert recovery.down_for_ms == 3 * MIN and recovery.notify_type == "success"
    assert recovery.previous is not None and recovery.previous.kind == "http-5xx"


def test_a_blip_shorter_than_n_sends_nothing() -> None:
    _state, sent = _run([OK, FAIL, FAIL, OK, OK, OK, OK, OK, OK, FAIL, FAIL, OK])
    assert sent == []


def test_a_model_failing_every_other_call_alerts_once_and_recovers_once() -> None:
    # Red-team pass 3: at --fail-after 3 it never alerted (never 3 in a row).
    flapping = [FAIL, OK] * 10
    _state, sent = _run([OK, *flapping, *[OK] * 10])
    assert [kind for _i, kind in sent] == ["alert", "recovery"]
    alert_at, recovery_at = (i for i, _kind in sent)
    assert alert_at <= 6 and recovery_at > len(flapping)  # recovered once steady


def test_flapping_at_fail_after_one_alerts_once_not_once_a_call() -> None:
    # Red-team pass 3: 19 notifications in 20 rounds.
    _state, sent = _run([OK, *[FAIL, OK] * 10, *[OK] * 6], fail_after=1)
    assert [kind for _i, kind in sent] == ["alert", "recovery"]
    assert sent[-1][0] > 20


def test_after_a_recovery_old_failures_do_not_count() -> None:
    _state, sent = _run([OK, FAIL, FAIL, FAIL, OK, FAIL, OK, OK, OK])
    assert sent == [(3, "alert"), (4, "recovery")]


def test_a_restart_during_an_outage_keeps_since_and_does_not_alert_again() -> None:
    down, sent = _run([OK, FAIL, FAIL, FAIL])
    assert sent == [(3, "alert")] and down is not None
    # A new process reads the stored state and goes on from it.
    state, events = step(down, MODEL, FAIL, now_ms=10 * MIN, fail_after=3)
    assert events == [] and state.since_ms == 1 * MIN and state.fails == 4
    state, events = step(state, MODEL, OK, now_ms=12 * MIN, fail_after=3)
    assert [e.type for e in events] == ["recovery"] and events[0].down_for_ms == 11 * MIN


def test_fail_after_one_alerts_at_the_first_failure_even_in_the_first_round() -> None:
    _state, sent = _run([FAIL, FAIL, OK], fail_after=1)
    assert sent == [(0, "alert"), (2, "recovery")]


def test_a_renamed_model_keeps_its_state() -> None:
    down, _ = _run([FAIL, FAIL, FAIL])
    renamed = ModelState("m-1", "qwen-7b-v2", host="llm.school.example")
    state, events = step(down, renamed, FAIL, now_ms=5 * MIN, fail_after=3)
    assert state.model_name == "qwen-7b-v2" and state.down and events == []


def test_tls_warning_once_a_day_within_fourteen_days() -> None:
    soon = TlsSeen(days_left=5, expires_ms=6 * DAY_MS, issuer="Test CA")
    state, events = step(None, MODEL, OK, now_ms=0, fail_after=3, tls=soon)
    assert [e.type for e in events] == ["tls-warning"] and events[0].notify_type == "warning"
    state, events = step(state, MODEL, OK, now_ms=DAY_MS - 1, fail_after=3, tls=soon)
    assert events == []
    state, events = step(state, MODEL, OK, now_ms=DAY_MS, fail_after=3, tls=soon)
    assert [e.type for e in events] == ["tls-warning"]
    far = TlsSeen(days_left=15)
    _state, events = step(state, MODEL, OK, now_ms=3 * DAY_MS, fail_after=3, tls=far)
    assert events == []


def test_a_certificate_that_does_not_verify_is_an_alert_not_a_warning() -> None:
    expired = TlsSeen(days_left=-2, verified=False)
    tls_fail = ProbeResult(False, "tls", "expired")
    state, events = step(None, MODEL, tls_fail, now_ms=0, fail_after=1, tls=expired)
    assert [e.type for e in events] == ["alert"] and state.tls_days == -2


def test_fail_after_must_be_positive() -> None:
    with pytest.raises(ValueError):
        step(None, MODEL, OK, now_ms=0, fail_after=0)
