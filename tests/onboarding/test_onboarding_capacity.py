"""The onboarding's capacity step: the class's search, and its progress while it runs."""

from __future__ import annotations

from typing import Any

import pytest

import lmreg_nb.probe.load.capacity
from lmreg_nb.onboarding import Onboarding
from lmreg_nb.probe.load.capacity import SLO, CapacityResult, Progress
from lmreg_nb.probe.load.levels import Level
from lmreg_nb.probe.text.capacity_text import progress_text
from lmreg_nb.settings import Settings

ENV = {
    "LMREG_MODEL_URL": "https://school.example/v1/chat/completions",
    "LMREG_MODEL_API_KEY": "k" * 20,
    "LMREG_MODEL_NAME": "school-llm",
}


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """find_capacity replaced: each call's arguments, its progress reported as a search would."""
    calls: list[dict[str, Any]] = []

    def fake(target: object, **kw: Any) -> CapacityResult:
        calls.append(kw)
        need = kw["need"]
        report = kw["on_progress"]
        report(Progress())
        report(Progress(need, 17))
        level = Level(need, requests=80, ttft_ms={"p90": 600.0}, meets_slo=True)
        report(Progress(need, 80, level, SLO()))
        return CapacityResult(SLO(), [level], need=need, max_concurrency=kw["max_concurrency"])

    monkeypatch.setattr(lmreg_nb.probe.load.capacity, "find_capacity", fake)
    return calls


def test_the_step_asks_the_class_question_with_room_for_the_margin(
    searches: list[dict[str, Any]],
) -> None:
    run = Onboarding("", settings=Settings.load(environ=ENV))
    seen: list[str] = []
    outcome = run.capacity(40, on_progress=lambda p: seen.append(progress_text(p)))
    assert outcome.ok and searches[0]["need"] == 40
    assert searches[0]["max_concurrency"] == 60  # the margin level, 1.5 times the class
    assert seen == [
        "Warming up: one request before the first level…",
        "concurrency 40: 17 requests so far…",
        "concurrency 40: 80 requests, meets the SLO (first token p90 600 ms)",
    ]
    # A class above the old cap of 64 is measured, not refused.
    run.capacity(100, on_progress=seen.append)
    assert searches[1]["need"] == 100 and searches[1]["max_concurrency"] == 150


def test_in_a_notebook_the_step_shows_its_progress_on_one_line_updated_in_place(
    searches: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    import IPython.display
    from IPython.core.interactiveshell import InteractiveShell

    updates: list[str] = []

    class Handle:
        def update(self, data: dict[str, str], raw: bool = False) -> None:
            updates.append(data["text/plain"])

    shown: list[Any] = []

    def display(*objs: Any, **kw: Any) -> Handle:
        shown.append((objs, kw))
        return Handle()

    monkeypatch.setattr(InteractiveShell, "initialized", classmethod(lambda cls: True))
    monkeypatch.setattr(IPython.display, "display", display)
    run = Onboarding("", settings=Settings.load(environ=ENV))
    run.capacity(40)
    assert len(shown) == 1 and shown[0][1]["display_id"] is True  # one output line
    # The warm-up and the level's end always show; "so far" at most a few times a second.
    assert updates[0] == "Warming up: one request before the first level…"
    assert "concurrency 40: 80 requests, meets the SLO (first token p90 600 ms)" in updates
    assert updates[-1] == ""  # emptied at the end: the verdict below says the rest
