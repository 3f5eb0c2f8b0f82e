"""Issue 32 item 2: the cells below the forms follow the latest run, never stale.

Interactive, ``run.live(run.verdict)`` and ``run.live(run.figure)`` are shown
with a display id and redrawn after every step: after the checks panel ran,
the verdict no longer says "not checked yet" and the figure no longer says
"no load test". Headless, ``live`` returns the result itself (the record).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from lmreg_nb.onboarding import Onboarding, Outcome
from lmreg_nb.settings import Settings

if TYPE_CHECKING:
    from lmreg_nb.sandbox.process import SandboxInfo


class Handle:
    """What IPython's ``display(..., display_id=True)`` returns: records each picture."""

    def __init__(self, shown: Any) -> None:
        self.pictures = [shown]

    def update(self, shown: Any) -> None:
        self.pictures.append(shown)


@pytest.fixture
def handles(monkeypatch: pytest.MonkeyPatch) -> list[Handle]:
    made: list[Handle] = []

    def display(obj: Any, *, display_id: bool = False) -> Handle:
        assert display_id
        made.append(Handle(obj))
        return made[-1]

    monkeypatch.setattr("IPython.display.display", display)
    return made


def _words(shown: Any) -> str:
    return shown.title if isinstance(shown, Outcome) else repr(shown)


@pytest.fixture(scope="module")
def quick_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxInfo]:
    """A sandbox whose mock model answers in a few ms, not the default 0.37 s: the checks
    and the load test below run several replies, and what is shown after is the point."""
    from fakes.sandbox import local_sandbox

    from lmreg_nb.sandbox.server import SandboxOptions

    db = tmp_path_factory.mktemp("quick-sandbox") / "platform.sqlite3"
    with local_sandbox(db, SandboxOptions(db=db, ttft_ms=5, itl_ms=1)) as info:
        yield info


def test_the_verdict_and_figure_cells_follow_the_checks(
    quick_sandbox: SandboxInfo, handles: list[Handle]
) -> None:
    run = Onboarding("S", settings=Settings.load(environ=quick_sandbox.env()))
    assert not run.headless
    for render in (run.verdict, run.figure):
        run.live(render)._ipython_display_()  # the cells, run top to bottom: nothing checked
    verdict, figure = handles
    assert "not checked yet" in _words(verdict.pictures[-1])
    before = _words(figure.pictures[-1])

    run.check_endpoint(4, 2)  # what the checks panel calls, after the cells were shown
    assert "not checked yet" not in _words(verdict.pictures[-1])
    assert verdict.pictures[-1].ok
    assert _words(figure.pictures[-1]) != before  # the load test's plots now
    assert "load test" not in _words(figure.pictures[-1]).lower()


def test_headless_live_is_the_result_itself(sandbox: SandboxInfo) -> None:
    run = Onboarding("S", settings=Settings.load(environ=sandbox.env()))
    run.headless = True
    assert isinstance(run.live(run.verdict), Outcome)
