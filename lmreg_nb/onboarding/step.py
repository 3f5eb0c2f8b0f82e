"""One onboarding step: its outcome recorded, its failure caught in a headless run."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Concatenate, ParamSpec, Protocol, TypeVar

from ..i18n import _
from ..summary import Step, step_label
from .display import Outcome

if TYPE_CHECKING:
    from ..client import RegistryClient
    from ..models import RegisteredModel
    from ..settings import Settings

__all__ = ["Run", "StepsHost", "step"]

log = logging.getLogger("lmreg_nb")


class Run(Protocol):
    """What :func:`step` needs of the run it records into."""

    headless: bool
    stopped_by: str | None

    def note(self, done: Step) -> None: ...

    def failure_text(self, exc: BaseException) -> str: ...


class StepsHost:
    """What the steps mixins use of the :class:`~lmreg_nb.onboarding.Onboarding` they make up.

    Declarations for type checkers only; the Onboarding class defines them.
    """

    model: RegisteredModel | None
    headless: bool
    stopped_by: str | None

    if TYPE_CHECKING:

        @property
        def settings(self) -> Settings: ...

        @property
        def client(self) -> RegistryClient: ...

        def note(self, done: Step) -> None: ...

        def failure_text(self, exc: BaseException) -> str: ...


S = TypeVar("S", bound=Run)
P = ParamSpec("P")
R = TypeVar("R")


def step(
    name: str,
) -> Callable[[Callable[Concatenate[S, P], R]], Callable[Concatenate[S, P], R | Outcome]]:
    """Make a method one onboarding step: its failure is recorded (and, headless, shown).

    Headless, a failure becomes a failed :class:`Outcome`, so the notebook goes
    on and records its summary; the steps after a failed one are skipped (an
    invalid contact card stops everything before anything is sent). Interactive,
    the error is raised again for the form to show. The method records its own
    success with ``self.note(Step(name, True, detail))``.
    """

    def wrap(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R | Outcome]:
        @functools.wraps(method)
        def run(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R | Outcome:
            if self.headless and self.stopped_by is not None:
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
