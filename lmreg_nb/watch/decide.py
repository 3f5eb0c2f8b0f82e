"""A round's models: who they are (school, modelId), in which order to call them, their states.

Pure functions between the calls and the store: :func:`identities` names each
listed model by its key (:func:`~lmreg_nb.watch.alerts.model_key`), its name
made safe for every view (the school's secrets masked in it); :func:`call_order`
puts first the models the last round could not call, then those that worked,
then those failing (oldest checked first), so a school whose models hang cannot
starve the rest round after round; :func:`decide` turns what was seen into
states, events and history rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..models import RegisteredModel
from ..secret import Masker, Secret
from ..terminal import terminal_text
from .alerts import Event, ModelState, model_key, step
from .names import shown_name
from .rounds import Observation, model_host
from .state import HistoryRow

__all__ = ["call_order", "decide", "identities"]


def identities(
    models: Sequence[RegisteredModel], school: str, secrets: Sequence[str | Secret] = ()
) -> list[ModelState]:
    """Each listed model's identity: key, modelId, shown name, host, school.

    Names and ids come from the platform: known secrets (its apiKey, the school's
    appSecret) are masked in them and control, bidi and zero-width marks made
    visible (:func:`~lmreg_nb.watch.names.shown_name`), before they reach a log,
    a page, a metric, a mail or the state file.
    """
    seen: dict[str, int] = {}
    found = []
    for model in models:
        own = Masker([*secrets, *([model.api_key] if model.api_key else [])])
        host, _port, _https = model_host(model.registry_url)
        model_id = shown_name(model.model_id.strip() or f"name:{model.model_name.strip()}", own)
        seen[model_id] = seen.get(model_id, 0) + 1
        found.append(
            ModelState(
                model_id,
                shown_name(model.model_name.strip(), own),
                host=terminal_text(host),
                school=school,
                key=model_key(school, model_id, seen[model_id]),
            )
        )
    return found


def call_order(current: Sequence[ModelState], previous: Mapping[str, ModelState]) -> list[int]:
    """The order to call the models in (indices of ``current``)."""

    def rank(i: int) -> tuple[int, int]:
        before = previous.get(current[i].key)
        if before is None:
            return (1, 0)
        if before.kind == "not-called":
            return (0, before.checked_ms or 0)
        if before.status in ("up", "new"):
            return (1, before.checked_ms or 0)
        return (2, before.checked_ms or 0)

    return sorted(range(len(current)), key=rank)


def decide(
    previous: Mapping[str, ModelState],
    seen: Sequence[tuple[ModelState, Observation]],
    *,
    number: int,
    now_ms: int,
    fail_after: int,
) -> tuple[list[ModelState], list[Event], list[HistoryRow]]:
    """Each model's state after the round, the events to send, the calls to keep."""
    states: list[ModelState] = []
    events: list[Event] = []
    history: list[HistoryRow] = []
    for current, observed in seen:
        state, more = step(
            previous.get(current.key),
            current,
            observed.result,
            now_ms=now_ms,
            fail_after=fail_after,
            tls=observed.tls,
        )
        states.append(state)
        events += more
        result = observed.result
        history.append(
            HistoryRow(number, state.key, now_ms, result.ok, result.latency_s, result.kind)
        )
    return states, events, history
