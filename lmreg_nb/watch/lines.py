"""The watch's log lines and a listed model's identity (names neutralised as terminal.py does)."""

from __future__ import annotations

from ..i18n import _, ngettext
from ..models import RegisteredModel
from ..terminal import terminal_text
from .alerts import Event, ModelState, SchoolState
from .config import RoundReport
from .rounds import model_host
from .status_html import status_label

__all__ = ["current_state", "event_line", "failure_line", "round_line", "school_line"]


def current_state(model: RegisteredModel, school: str = "") -> ModelState:
    """The identity of a listed model: its modelId (its name when the platform sent none).

    Names and ids come from the platform: controls, bidi and zero-width marks are made
    visible here (terminal.py's rule), before they reach a log, a page or a metric.
    """
    host, _port, _https = model_host(model.registry_url)
    model_id = terminal_text(model.model_id.strip() or f"name:{model.model_name.strip()}")
    name = terminal_text(model.model_name.strip())
    return ModelState(model_id, name, host=terminal_text(host), school=school)


def school_line(state: SchoolState, *, number: int) -> str:
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


def failure_line(state: ModelState, fail_after: int) -> str:
    from .messages import what_failed

    return _("model {name}: {status} ({fails} of {fail_after}): {what}").format(
        name=state.model_name,
        status=status_label(state.status),
        fails=state.fails,
        fail_after=fail_after,
        what=what_failed(state),
    )


def event_line(event: Event, targets: int) -> str:
    name = event.state.model_name
    if event.type == "alert":
        text = ngettext(
            "model {name} is down: alert to {n} target",
            "model {name} is down: alert to {n} targets",
            targets,
        )
    elif event.type == "recovery":
        text = ngettext(
            "model {name} works again: recovery to {n} target",
            "model {name} works again: recovery to {n} targets",
            targets,
        )
    else:
        text = ngettext(
            "certificate of model {name} expires soon: warning to {n} target",
            "certificate of model {name} expires soon: warning to {n} targets",
            targets,
        )
    return text.format(name=name, n=targets)


def round_line(report: RoundReport, fail_after: int) -> str:
    """The round's log line: how many models are up, down and failing (they add up)."""
    up = sum(1 for s in report.states if s.status == "up")
    # The counts add up: a model failing fewer rounds than fail_after is neither.
    failing = len(report.states) - up - len(report.down)
    if failing:
        return ngettext(
            "round {n}: {models} model, {up} up, {down} down, {failing} failing (down after "
            "{fail_after} failed rounds in a row) ({seconds} s)",
            "round {n}: {models} models, {up} up, {down} down, {failing} failing (down after "
            "{fail_after} failed rounds in a row) ({seconds} s)",
            len(report.states),
        ).format(
            n=report.number, models=len(report.states), up=up, down=len(report.down),
            failing=failing, fail_after=fail_after,
            seconds=f"{report.seconds:.1f}",
        )  # fmt: skip
    return ngettext(
        "round {n}: {models} model, {up} up, {down} down ({seconds} s)",
        "round {n}: {models} models, {up} up, {down} down ({seconds} s)",
        len(report.states),
    ).format(
        n=report.number,
        models=len(report.states),
        up=up,
        down=len(report.down),
        seconds=f"{report.seconds:.1f}",
    )
