"""The watch: rounds of query-models, calls, decisions, state, notifications, metrics, page.

:class:`Watcher` holds what lives across rounds (the registry client, the
connection pool, the state file, the targets, the metrics) and runs one
:meth:`~Watcher.round` at a time; :meth:`~Watcher.run` repeats them every
``interval`` seconds until ``rounds`` are done or ``stop`` is set (a signal:
the round in progress finishes and is written first). The platform being down
never stops the watch: the round is skipped and logged. Wrong credentials in
the first round do (one line): a watch that can never read the models is a
configuration error. Notifications go through the state's outbox, so a
target that fails is retried next round, after a restart too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import (
    AuthenticationError,
    ConfigurationError,
    LmregError,
    PermissionDeniedError,
    ValidationError,
)
from ..i18n import _, ngettext
from .alerts import Event, ModelState, step
from .messages import Message, round_messages
from .rounds import DEFAULT_CONCURRENCY, Observation, make_client, model_host, probe_all
from .state import OUTBOX_MAX_AGE_MS, HistoryRow, StateStore
from .status_html import render_status, status_label, write_status

if TYPE_CHECKING:
    import httpx

    from ..client import RegistryClient
    from ..models import RegisteredModel
    from ..secret import Masker
    from ..settings import Settings
    from .metrics import WatchMetrics
    from .notify import Notifier, NotifyTarget

__all__ = ["RoundReport", "WatchConfig", "Watcher", "school_name"]

log = logging.getLogger("lmreg_nb.watch")


@dataclass(frozen=True)
class WatchConfig:
    """What `lmreg-nb watch` was asked for."""

    state_path: Path
    interval: float = 60.0
    fail_after: int = 3
    rounds: int | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    school: str = ""

    def __post_init__(self) -> None:
        # One line each, naming the option (the CLI exits 2 on a ValidationError).
        if not self.interval > 0:
            raise ValidationError("--interval", _("must be more than 0 seconds, e.g. 60"))
        if self.fail_after < 1:
            raise ValidationError(
                "--fail-after", _("must be 1 or more: the failed rounds in a row before an alert")
            )
        if self.rounds is not None and self.rounds < 1:
            raise ValidationError("--rounds", _("must be 1 or more (leave it out to run on)"))
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

    @property
    def down(self) -> list[ModelState]:
        """The models down after this round."""
        return [s for s in self.states if s.down]


def school_name(given: str, settings: Settings) -> str:
    """The school's name for alerts: as given, else the platform's host name."""
    if given.strip():
        return given.strip()
    host, _port, _https = model_host(settings.base_url or "")
    return host or _("(school not named)")


class Watcher:
    """Runs rounds; use as ``async with Watcher(...) as w: await w.run(stop)``."""

    def __init__(
        self,
        settings: Settings,
        registry: RegistryClient,
        store: StateStore,
        targets: Sequence[NotifyTarget],
        notifier: Notifier,
        config: WatchConfig,
        *,
        metrics: WatchMetrics | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        from .notify import targets_masker

        self.settings = settings
        self.registry = registry
        self.store = store
        self.targets = list(targets)
        self.notifier = notifier
        self.config = config
        self.metrics = metrics
        self.clock = clock
        self.school = school_name(config.school, settings)
        # Target secrets for every line logged (apiKeys are masked per call, at the probe).
        self.mask: Masker = targets_masker(self.targets)
        self._client: httpx.AsyncClient | None = None
        self._read_models_once = False

    async def __aenter__(self) -> Watcher:
        self._client = make_client(self.config.concurrency, self.settings.timeout)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    def _log(self, level: int, text: str) -> None:
        log.log(level, "%s", self.mask(text))

    # -- one round -------------------------------------------------------------

    async def round(self) -> RoundReport:
        """Read the models, call each once, decide, write the state, notify; the report."""
        started = time.perf_counter()
        number = self.store.last_round() + 1
        now = self._now_ms()
        report = RoundReport(number)
        try:
            models = await asyncio.to_thread(self.registry.query_models)
        except LmregError as exc:
            if not self._read_models_once and isinstance(
                exc, AuthenticationError | PermissionDeniedError | ConfigurationError
            ):
                raise
            report.platform_error = self.mask(str(exc))
            self._log(
                logging.WARNING,
                _(
                    "round {n}: cannot read the models from the platform: {error}; trying again "
                    "next round"
                ).format(n=number, error=exc),
            )
            report.states = list(self.store.models().values())
            await self.deliver()
            report.seconds = time.perf_counter() - started
            return report
        self._read_models_once = True
        assert self._client is not None, "use the Watcher as an async context manager"
        observed = await probe_all(
            models, self.settings, self._client, concurrency=self.config.concurrency
        )
        self._decide(report, observed, now)
        self._after_round(report, now)
        await self.deliver()
        report.seconds = time.perf_counter() - started
        self._log(logging.INFO, self._summary(report))
        return report

    def _decide(self, report: RoundReport, observed: Sequence[Observation], now: int) -> None:
        previous = self.store.models()
        history: list[HistoryRow] = []
        outbox: list[tuple[str, int, Message]] = []
        for seen in observed:
            current = _current(seen.model)
            state, events = step(
                previous.get(current.model_id),
                current,
                seen.result,
                now_ms=now,
                fail_after=self.config.fail_after,
                tls=seen.tls,
            )
            report.states.append(state)
            report.events += events
            result = seen.result
            history.append(
                HistoryRow(
                    report.number, state.model_id, now, result.ok, result.latency_s, result.kind
                )
            )
            if not result.ok:
                self._log(logging.WARNING, _failure_line(state, self.config.fail_after))
            for event in events:
                self._log(logging.WARNING, _event_line(event, len(self.targets)))
        for message in round_messages(report.events, self.school):
            outbox += [(t.id, now, message) for t in self.targets]
        ids = {s.model_id for s in report.states}
        removed = [m for m in previous if m not in ids]
        for model_id in removed:
            self._log(
                logging.INFO,
                _("model {name} is no longer registered; dropped from the watch").format(
                    name=previous[model_id].model_name
                ),
            )
        self.store.save_round(report.number, report.states, history, removed, outbox)

    def _after_round(self, report: RoundReport, now: int) -> None:
        if self.metrics is not None:
            self.metrics.update(report.states)
        history: dict[str, list[HistoryRow]] = {}
        for row in self.store.history(last=60):
            history.setdefault(row.model_id, []).append(row)
        page = render_status(
            report.states,
            history,
            school=self.school,
            generated_ms=now,
            round_number=report.number,
            fail_after=self.config.fail_after,
        )
        try:
            write_status(self.config.status_path, self.mask(page))
        except OSError as exc:
            self._log(
                logging.WARNING,
                _("cannot write {path}: {error}").format(path=self.config.status_path, error=exc),
            )

    def _summary(self, report: RoundReport) -> str:
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
                failing=failing, fail_after=self.config.fail_after,
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

    # -- notifications -----------------------------------------------------------

    async def deliver(self) -> None:
        """Send what waits in the outbox, every target at once; a failure waits a round."""
        dropped = self.store.expire(self._now_ms(), OUTBOX_MAX_AGE_MS)
        if dropped:
            self._log(
                logging.WARNING,
                ngettext(
                    "dropped {n} notification no target took within a day",
                    "dropped {n} notifications no target took within a day",
                    dropped,
                ).format(n=dropped),
            )
        await asyncio.gather(*(self._deliver_to(t) for t in self.targets))

    async def _deliver_to(self, target: NotifyTarget) -> None:
        for row in self.store.pending(target.id):
            error = await asyncio.to_thread(self.notifier.send, target, row.message)
            if error is None:
                self.store.delivered(row.id)
                self._log(
                    logging.INFO,
                    _("sent to {target}: {title}").format(
                        target=target.shown, title=row.message.title
                    ),
                )
                continue
            self.store.failed(row.id, error)
            self._log(
                logging.WARNING,
                _("could not send to {target}: {error}; trying again next round").format(
                    target=target.shown, error=error
                ),
            )
            return  # keep the order: the rest waits for this one

    # -- the loop ----------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> int:
        """Rounds until ``rounds`` are done or ``stop`` is set; the exit code.

        0: stopped by a signal, or every model up after the last round; 1: a model
        is down after the last round, or the platform never answered.
        """
        done = 0
        last: RoundReport | None = None
        while not stop.is_set():
            began = time.monotonic()
            last = await self.round()
            done += 1
            if self.config.rounds is not None and done >= self.config.rounds:
                break
            wait = max(0.0, began + self.config.interval - time.monotonic())
            with contextlib.suppress(TimeoutError):  # the interval is over: next round
                await asyncio.wait_for(stop.wait(), wait)
        if self.config.rounds is None or stop.is_set():
            return 0
        if last is None or not self._read_models_once:
            return 1
        return 1 if last.down else 0


def _current(model: RegisteredModel) -> ModelState:
    """The identity of a listed model: its modelId (its name when the platform sent none)."""
    host, _port, _https = model_host(model.registry_url)
    model_id = model.model_id.strip() or f"name:{model.model_name.strip()}"
    return ModelState(model_id, model.model_name.strip(), host=host)


def _failure_line(state: ModelState, fail_after: int) -> str:
    from .messages import what_failed

    return _("model {name}: {status} ({fails} of {fail_after}): {what}").format(
        name=state.model_name,
        status=status_label(state.status),
        fails=state.fails,
        fail_after=fail_after,
        what=what_failed(state),
    )


def _event_line(event: Event, targets: int) -> str:
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
