"""The watch's log lines: each names the school first (names repeat across schools).

Counts read as a person says them: "failed 2 rounds in a row (down after 3)",
never "(4/3)"; an alert's line counts the targets it is queued for, and the
delivery's own lines say what was sent.
"""

from __future__ import annotations

from ..i18n import _, ngettext
from .alerts import Event, ModelState, SchoolState
from .config import RoundReport

__all__ = ["event_line", "failure_line", "removed_line", "round_line", "school_line"]


def school_line(state: SchoolState, *, number: int) -> str:
    """A school whose models cannot be read (or are read again)."""
    if state.problem == "sign-in":
        return _("round {n}: school {school}: cannot sign in: {error}").format(
            n=number, school=state.name, error=state.detail
        )
    if state.problem:
        return _(
            "round {n}: school {school}: cannot read the models from the platform: {error}; "
            "trying again next round"
        ).format(n=number, school=state.name, error=state.detail)
    return _("round {n}: school {school}: the models are read again").format(
        n=number, school=state.name
    )


def failure_line(state: ModelState, school: str, fail_after: int) -> str:
    """A model that failed this round: how many rounds in a row, and what failed."""
    from .messages import what_failed

    if state.down:
        return ngettext(
            "school {school}: model {name} is down ({n} failed round in a row): {what}",
            "school {school}: model {name} is down ({n} failed rounds in a row): {what}",
            state.fails,
        ).format(school=school, name=state.model_name, n=state.fails, what=what_failed(state))
    return ngettext(
        "school {school}: model {name} failed {n} round in a row (down after {fail_after}): {what}",
        "school {school}: model {name} failed {n} rounds in a row (down after {fail_after}): "
        "{what}",
        state.fails,
    ).format(
        school=school,
        name=state.model_name,
        n=state.fails,
        fail_after=fail_after,
        what=what_failed(state),
    )


def event_line(event: Event, school: str, targets: int) -> str:
    """An alert, recovery or certificate warning, and how many targets it is queued for."""
    name = event.state.model_name
    if event.type == "alert":
        text = ngettext(
            "school {school}: model {name} is down: alert queued for {n} target",
            "school {school}: model {name} is down: alert queued for {n} targets",
            targets,
        )
    elif event.type == "recovery":
        text = ngettext(
            "school {school}: model {name} works again: recovery queued for {n} target",
            "school {school}: model {name} works again: recovery queued for {n} targets",
            targets,
        )
    else:
        text = ngettext(
            "school {school}: the certificate of model {name} expires soon: warning queued "
            "for {n} target",
            "school {school}: the certificate of model {name} expires soon: warning queued "
            "for {n} targets",
            targets,
        )
    return text.format(school=school, name=name, n=targets)


def removed_line(state: ModelState, school: str) -> str:
    """A model the platform no longer lists."""
    return _(
        "school {school}: model {name} is no longer registered; dropped from the watch"
    ).format(school=school, name=state.model_name)


def round_line(report: RoundReport, fail_after: int) -> str:
    """The round's log line: how many models are up, down and failing (they add up)."""
    up = sum(1 for s in report.states if s.status == "up")
    # The counts add up: a model failing fewer rounds than fail_after is neither.
    failing = len(report.states) - up - len(report.down)
    if failing:
        text = ngettext(
            "round {n}: {models} model, {up} up, {down} down, {failing} failing (down after "
            "{fail_after} failed rounds in a row) ({seconds} s)",
            "round {n}: {models} models, {up} up, {down} down, {failing} failing (down after "
            "{fail_after} failed rounds in a row) ({seconds} s)",
            len(report.states),
        )
    else:
        text = ngettext(
            "round {n}: {models} model, {up} up, {down} down ({seconds} s)",
            "round {n}: {models} models, {up} up, {down} down ({seconds} s)",
            len(report.states),
        )
    line = text.format(
        n=report.number, models=len(report.states), up=up, down=len(report.down),
        failing=failing, fail_after=fail_after, seconds=f"{report.seconds:.1f}",
    )  # fmt: skip
    if len(report.schools) > 1:
        blind = len(report.blind)
        line = ngettext(
            "{line}; {n} school, {blind} of them cannot be read",
            "{line}; {n} schools, {blind} of them cannot be read",
            len(report.schools),
        ).format(line=line, n=len(report.schools), blind=blind)
    return line
