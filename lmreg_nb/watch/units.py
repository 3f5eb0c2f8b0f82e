"""The accounts a watch reads: one per school of the fleet (or the one account), and their mail.

A :class:`Unit` is a school with its registry client and the mail target of its
contact; :func:`make_unit` builds it from a plan's school (a row that cannot be
used keeps its problem); :func:`mail_outbox` turns a round's events into one
mail per contact, in the school's language; :func:`mail_problems` says, once,
which contacts cannot be mailed at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..errors import ConfigurationError, LmregError
from ..models import RegisteredModel
from .alerts import Event
from .fleet import School
from .messages import Message, mail_failing_message, round_messages

if TYPE_CHECKING:
    from ..registry.client import RegistryClient
    from .notify import NotifyTarget

__all__ = ["Read", "Unit", "mail_outbox", "mail_problems", "make_unit"]

Outbox = list[tuple[str, int, Message]]


@dataclass
class Unit:
    """One account watched: its school, its registry client, its mail target."""

    school: School
    registry: RegistryClient | None
    mail: NotifyTarget | None = None
    owned: bool = False  # the Watcher made the client: it closes it
    mail_problem: str = ""  # why its contact cannot be mailed (told to the provider once)


@dataclass
class Read:
    """What reading one account's models gave: the models, or why not."""

    unit: Unit
    models: list[RegisteredModel] | None
    error: str | None = None
    sign_in: bool = False


def make_unit(school: School, mail: NotifyTarget | None) -> Unit:
    """The school's unit: its registry client (or its problem) and its contact's target."""
    from ..registry.client import RegistryClient
    from .fleet import mail_target

    to, problem = None, ""
    if mail and school.contact_email:
        try:
            to = mail_target(mail, school.contact_email)
        except ConfigurationError as exc:
            problem = str(exc)
    if school.problem or school.settings is None:
        return Unit(school, None, to, mail_problem=problem)
    try:
        registry = RegistryClient(school.settings)
    except LmregError as exc:
        return Unit(replace(school, problem=str(exc)), None, to, mail_problem=problem)
    return Unit(school, registry, to, owned=True, mail_problem=problem)


def mail_outbox(units: Sequence[Unit], events: Sequence[Event]) -> Outbox:
    """Each school's own events, to its contact, in its language: one mail a round."""
    from ..i18n import speaking

    by_school: dict[str, list[Event]] = {}
    for event in events:
        by_school.setdefault(event.state.school, []).append(event)
    outbox: Outbox = []
    for unit in units:
        mine = by_school.get(unit.school.key)
        if not mine or unit.mail is None:
            continue
        with speaking(unit.school.lang):
            # A digest per contact: 5 alerts of one round are one mail, not five.
            messages = round_messages(mine, unit.school.name, digest_after=1)
        outbox += [(unit.mail.id, mine[0].at_ms, m) for m in messages]
    return outbox


def mail_problems(
    units: Sequence[Unit], targets: Sequence[NotifyTarget], now_ms: int
) -> tuple[Outbox, list[str]]:
    """Contacts that cannot be mailed at all: the provider's alerts and the log lines."""
    outbox: Outbox = []
    lines: list[str] = []
    for unit in units:
        if not unit.mail_problem:
            continue
        message = mail_failing_message(
            unit.school.name, unit.school.contact_email, unit.mail_problem
        )
        lines.append(message.title + ": " + unit.mail_problem)
        outbox += [(t.id, now_ms, message) for t in targets]
    return outbox, lines
