"""One school's hanging models cannot hold up another's alert (issue 42, FW13, W20). In-process.

The models answer through an httpx.MockTransport: ``/hang`` never answers, so a call
ends only at its deadline. The round's bound is the same round's
work with models that answer (measured in the same test), plus a few LMREG_TIMEOUTs
(0.5 s here, with the least time a call is begun with, MIN_CALL_S, scaled to it):
before, 320 hanging models at 32 calls at once took ten timeouts.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from watch_fakes import model

from lmreg_nb.watch import rounds

TIMEOUT = 0.5


@pytest.fixture(autouse=True)
def _short_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """MIN_CALL_S a tenth of the short timeout (the default: 0.5 s of LMREG_TIMEOUT's
    10 s), so that a slow answer on a busy machine does not end the round early."""
    monkeypatch.setattr(rounds, "MIN_CALL_S", TIMEOUT / 10)


def _fleet_of_320(make_fleet: Any, how: str) -> Any:
    """School A's 320 models, each answering ``how``; School B's one model, down."""
    models = [model(f"h{i}", f"{how}-{i}", "a", how) for i in range(320)]
    return make_fleet(
        {
            "a": ("School A", models, "li@a.example"),
            "b": ("School B", [model("b1", "qwen-b", "b", "down")], "wang@b.example"),
        },
        timeout=TIMEOUT,
    )


def _timed_round(fleet: Any) -> tuple[Any, float]:
    began = time.monotonic()
    report = fleet.round()
    return report, time.monotonic() - began


def test_a_school_with_320_hanging_models_does_not_delay_another(make_fleet: Any) -> None:
    # The round's own work on this machine now: the same fleet whose models all answer.
    _, work = _timed_round(_fleet_of_320(make_fleet, "ok"))
    fleet = _fleet_of_320(make_fleet, "hang")
    report, took = _timed_round(fleet)
    # About one LMREG_TIMEOUT over the round's own work, never ten of them (the bug).
    assert took < work + 4 * TIMEOUT, (took, work)
    b = [s for s in report.states if s.school == "b"]
    assert [(s.model_name, s.kind) for s in b] == [("qwen-b", "http-5xx")]
    assert [m.title for m in fleet.notifier.to("wang@b.example")] == [
        "[School B] model qwen-b is down"
    ]
    a = [s for s in report.states if s.school == "a"]
    kinds = {s.kind for s in a}
    assert kinds <= {"timeout", "not-called"} and "timeout" in kinds


def test_models_left_uncalled_are_called_first_next_round(make_fleet: Any) -> None:
    hanging = [model(f"h{i}", f"hang-{i:03d}", "a", "hang") for i in range(96)]
    fleet = make_fleet({"a": ("School A", hanging, "li@a.example")}, timeout=TIMEOUT,
                       concurrency=32)  # fmt: skip
    first = fleet.round()
    skipped = {s.model_name for s in first.states if s.kind == "not-called"}
    called = {s.model_name for s in first.states if s.kind == "timeout"}
    assert skipped and called and not skipped & called
    fleet.calls.asked.clear()
    fleet.round()
    asked = {path.split("/")[1] for path in fleet.calls.asked}
    assert asked and asked <= skipped  # the ones the last round could not call go first


def test_the_slots_are_shared_fairly(make_fleet: Any) -> None:
    import asyncio

    from lmreg_nb.watch.slots import FairSlots

    async def go() -> list[str]:
        slots = FairSlots(2, schools=1)
        order: list[str] = []
        await slots.acquire("a")
        await slots.acquire("a")  # school a holds both

        async def wait(key: str) -> None:
            await slots.acquire(key)
            order.append(key)

        waiters = [asyncio.ensure_future(wait(k)) for k in ("a", "a", "b", "a", "c")]
        await asyncio.sleep(0)
        for _ in range(5):
            slots.release(order[-1] if order else "a")
            await asyncio.sleep(0)
        await asyncio.gather(*waiters)
        return order

    order = asyncio.run(go())
    # The first two freed slots go to the schools holding none (b, then c), not to a's queue.
    assert order[:2] == ["b", "c"], order


def test_a_school_of_many_healthy_models_is_never_cut_short(make_fleet: Any) -> None:
    # 20 models of 0.2 s each, 4 at a time: 1 s of calls, twice the 0.5 s timeout. The
    # round ends a timeout after the last answer, not a timeout after it began.
    slow = [model(f"s{i}", f"slow-{i}", "a", "slow") for i in range(20)]
    fleet = make_fleet({"a": ("School A", slow, "li@a.example")}, timeout=TIMEOUT,
                       concurrency=4)  # fmt: skip
    report = fleet.round()
    assert {s.status for s in report.states} == {"up"}, {s.kind for s in report.states}
