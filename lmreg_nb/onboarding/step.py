"""The rule of an onboarding step: its outcome recorded, its failure caught in a headless run."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from ..display import Outcome
from ..errors import LmregError
from ..i18n import _
from ..secret import Secrets, mask_text
from ..summary import Step, StepName, step_label

__all__ = ["StepHost", "failure_line", "skipped_detail", "step"]

log = logging.getLogger("lmreg_nb")


class StepHost(Protocol):
    """What a step needs of its object (the :class:`Onboarding`), named here so that
    this module need not import the facade that imports it (no import circle)."""

    headless: bool
    stopped_by: StepName | None

    def failure_text(self, exc: BaseException) -> str: ...

    def note(self, done: Step) -> None: ...


H = TypeVar("H", bound=StepHost)
P = ParamSpec("P")
R = TypeVar("R")
Method = Callable[Concatenate[H, P], R]


def step(name: StepName) -> Callable[[Method[H, P, R]], Method[H, P, R | Outcome]]:
    """Make a method of :class:`Onboarding` one step: its failure is recorded (headless, shown).

    Headless, a failure becomes a failed :class:`Outcome`, so the notebook goes
    on and records its summary; the steps after a failed one are skipped (an
    invalid contact card stops everything before anything is sent). Interactive,
    the error is raised again for the form to show. The method records its own
    success with :meth:`Onboarding.note`.
    """

    def wrap(method: Method[H, P, R]) -> Method[H, P, R | Outcome]:
        @functools.wraps(method)
        def run(self: H, /, *args: P.args, **kwargs: P.kwargs) -> R | Outcome:
            if self.headless and self.stopped_by is not None:
                if self.stopped_by != name:
                    # Recorded as skipped, with its cause: neither "not done yet" nor failed.
                    said = skipped_detail(self.stopped_by)
                    self.note(Step(name, False, said, skipped_after=self.stopped_by))
                return Outcome(
                    _("{step}: skipped, because “{failed}” failed").format(
                        step=step_label(name), failed=step_label(self.stopped_by)
                    ),
                    ok=False,
                )
            try:
                return method(self, *args, **kwargs)
            except Exception as exc:
                detail = self.failure_text(exc)
                self.note(Step(name, False, detail))
                if not self.headless:
                    raise
                log.info("onboarding step %s failed: %s", name, detail)
                return Outcome(
                    _("{step}: failed").format(step=step_label(name)),
                    [(_("error"), detail)],
                    ok=False,
                )

        return run

    return wrap


def skipped_detail(failed: StepName) -> str:
    """A skipped step's detail: why it did not run ("skipped: “token” failed")."""
    return _("skipped: “{failed}” failed").format(failed=step_label(failed))


def failure_line(exc: BaseException, secrets: Secrets) -> str:
    """One line for a failed step, with ``secrets`` masked (a toolkit error: its message)."""
    text = str(exc) if isinstance(exc, LmregError) else f"{type(exc).__name__}: {exc}"
    return " ".join(mask_text(text, secrets).split()) or type(exc).__name__
