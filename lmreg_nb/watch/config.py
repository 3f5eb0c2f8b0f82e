"""What `lmreg-nb watch` was asked for (:class:`WatchConfig`) and what a round did."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ValidationError
from ..i18n import _
from .alerts import Event, ModelState, SchoolState
from .rounds import DEFAULT_CONCURRENCY, model_host

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = [
    "MAX_FAIL_AFTER",
    "MAX_INTERVAL_S",
    "MAX_ROUNDS",
    "MIN_INTERVAL_S",
    "READ_CONCURRENCY",
    "RoundReport",
    "WatchConfig",
    "school_name",
]


#: The shortest --interval: a round reads every school's models and calls every model.
MIN_INTERVAL_S = 1.0
#: The longest --interval: a week.
MAX_INTERVAL_S = 7 * 24 * 3600.0
#: Schools whose models are read at once (each read is a thread: the client is blocking).
READ_CONCURRENCY = 8
#: The most failed rounds before an alert (a day of one-minute rounds, and then some).
MAX_FAIL_AFTER = 10_000
#: The most rounds --rounds counts (the state file counts up to 10**12).
MAX_ROUNDS = 10**9


@dataclass(frozen=True)
class WatchConfig:
    """What `lmreg-nb watch` was asked for."""

    state_path: Path
    interval: float = 60.0
    fail_after: int = 3
    rounds: int | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    school: str = ""
    allow_private: bool = False

    def __post_init__(self) -> None:
        # One line each, naming the option (the CLI exits 2 on a ValidationError).
        if not MIN_INTERVAL_S <= self.interval <= MAX_INTERVAL_S:
            raise ValidationError(
                "--interval",
                _("must be {floor} s or more (at most {ceiling} s), e.g. 60").format(
                    floor=f"{MIN_INTERVAL_S:g}", ceiling=f"{MAX_INTERVAL_S:g}"
                ),
            )
        if not 1 <= self.fail_after <= MAX_FAIL_AFTER:
            raise ValidationError(
                "--fail-after",
                _(
                    "must be 1 or more (at most {max}): the failed rounds in a row before an alert"
                ).format(max=MAX_FAIL_AFTER),
            )
        if self.rounds is not None and not 1 <= self.rounds <= MAX_ROUNDS:
            raise ValidationError(
                "--rounds",
                _("must be 1 or more, at most {max} (leave it out to run on)").format(
                    max=MAX_ROUNDS
                ),
            )
        if not 1 <= self.concurrency <= 1024:
            raise ValidationError("--concurrency", _("must be from 1 to 1024"))

    @property
    def status_path(self) -> Path:
        """The page written after each round: beside the state file, ``<stem>-status.html``."""
        return self.state_path.with_name(self.state_path.stem + "-status.html")


@dataclass
class RoundReport:
    """What one round did."""

    number: int
    states: list[ModelState] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    seconds: float = 0.0
    platform_error: str | None = None
    schools: list[SchoolState] = field(default_factory=list)

    @property
    def down(self) -> list[ModelState]:
        """The models down after this round."""
        return [s for s in self.states if s.down]

    @property
    def blind(self) -> list[SchoolState]:
        """The schools whose models could not be read in this round."""
        return [s for s in self.schools if s.blind]


def school_name(given: str, settings: Settings) -> str:
    """The school's name for alerts: as given, else the platform's host name."""
    from .names import shown_name

    if given.strip():
        return shown_name(given)
    host, _port, _https = model_host(settings.base_url or "")
    return shown_name(host) or _("(school not named)")
