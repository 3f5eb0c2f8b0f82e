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
import sqlite3
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ..errors import (
    AuthenticationError,
    ConfigurationError,
    LmregError,
    PermissionDeniedError,
)
from ..i18n import _
from .alerts import ModelState, SchoolState, school_step
from .config import READ_CONCURRENCY, RoundReport, WatchConfig, school_name
from .decide import call_order, decide, identities
from .delivery import deliver_outbox
from .fleet import School
from .lines import event_line, failure_line, removed_line, round_line, school_line
from .messages import (
    Message,
    blind_message,
    interrupted_message,
    mail_failing_message,
    round_messages,
    sees_again_message,
)
from .rounds import Observation, make_client, probe_all
from .slots import FairSlots
from .state import HistoryRow, StateStore
from .status_html import render_status, write_status
from .units import Read, Unit, mail_outbox, mail_problems, make_unit

if TYPE_CHECKING:
    import httpx

    from ..registry.client import RegistryClient
    from ..secret import Masker
    from ..settings import Settings
    from .metrics import WatchMetrics
    from .notify import Notifier, NotifyTarget

__all__ = ["RoundReport", "WatchConfig", "Watcher", "school_name"]

log = logging.getLogger("lmreg_nb.watch")
_T = TypeVar("_T")


@dataclass
class _Unsaved:
    """A round the state file could not take (locked): written with the next one."""

    number: int
    states: dict[str, ModelState]
    schools: dict[str, SchoolState]
    history: list[HistoryRow]
    removed: set[str]
    outbox: list[tuple[str, int, Message]]


def _state_error(path: Path, exc: sqlite3.Error) -> str:
    return _("cannot write the state file {path}: {error}").format(path=path, error=exc)


class Watcher:
    """Runs rounds; use as ``async with Watcher(...) as w: await w.run(stop)``.

    One account (``settings`` and ``registry``), or the provider's fleet: ``schools``,
    each read with its own account, its alerts mailed by ``mail`` to its contact.
    """

    def __init__(
        self,
        settings: Settings,
        registry: RegistryClient | None,
        store: StateStore,
        targets: Sequence[NotifyTarget],
        notifier: Notifier,
        config: WatchConfig,
        *,
        metrics: WatchMetrics | None = None,
        clock: Callable[[], float] = time.time,
        schools: Sequence[School] | None = None,
        mail: NotifyTarget | None = None,
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
        self.fleet = schools is not None
        self.school = (
            config.school.strip() or _("all schools")
            if self.fleet
            else school_name(config.school, settings)
        )
        self.units = (
            [make_unit(s, mail) for s in schools]
            if schools is not None
            else [Unit(School("", self.school, settings), registry)]
        )
        self._by_key = {u.school.key: u for u in self.units}
        self._mail_told = False
        # Target secrets for every line logged (apiKeys are masked per call, at the probe).
        self.mask: Masker = targets_masker([*self.targets, *([mail] if mail else [])])
        self._client: httpx.AsyncClient | None = None
        self._read_models_once = False
        self._said: dict[str, str] = {}  # school key -> the problem last logged
        self._unsaved: _Unsaved | None = None
        self._readers = ThreadPoolExecutor(1)  # replaced on entry

    async def __aenter__(self) -> Watcher:
        self._client = make_client(self.config.concurrency, self.settings.timeout)
        # The registry client blocks: its reads run on threads of their own, so that
        # notifications (the default executor) do not wait behind 1,000 schools' reads.
        self._readers = ThreadPoolExecutor(READ_CONCURRENCY, thread_name_prefix="lmreg-read")
        try:
            interrupted = self.store.interrupted()
        except sqlite3.Error as exc:
            interrupted = []
            self._log(logging.WARNING, _state_error(self.store.path, exc))
        shown = {t.id: t.shown for t in self._all_targets()}
        if interrupted and self.targets:
            message = interrupted_message(
                [(shown.get(r.target, r.target), r.message.title) for r in interrupted]
            )
            with contextlib.suppress(sqlite3.Error):  # told in the log below in any case
                self.store.enqueue([(t.id, self._now_ms(), message) for t in self.targets])
        for row in interrupted:
            # At most once: it may have arrived before the watch stopped (kill -9, power).
            self._log(
                logging.WARNING,
                _(
                    "not sent again to {target}: {title} (the watch stopped while sending it; "
                    "it may have arrived)"
                ).format(target=shown.get(row.target, row.target), title=row.message.title),
            )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        self._readers.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """Close the registry clients the watcher made (the fleet's)."""
        for unit in self.units:
            if unit.owned and unit.registry is not None:
                unit.registry.close()

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    def _log(self, level: int, text: str) -> None:
        log.log(level, "%s", self.mask(text))

    # -- one round -------------------------------------------------------------

    async def _read(self, unit: Unit, slots: asyncio.Semaphore) -> Read:
        if unit.registry is None:
            return Read(unit, None, unit.school.problem, sign_in=True)
        registry = unit.registry
        try:
            async with slots:
                models = await asyncio.get_running_loop().run_in_executor(
                    self._readers, registry.query_models
                )
        except LmregError as exc:
            refused = isinstance(
                exc, AuthenticationError | PermissionDeniedError | ConfigurationError
            )
            if refused and not self.fleet and not self._read_models_once:
                raise  # one account whose credentials never worked: a configuration error
            return Read(unit, None, self.mask(str(exc)), sign_in=refused and self.fleet)
        return Read(unit, models)

    async def _read_and_call(
        self,
        unit: Unit,
        read_slots: asyncio.Semaphore,
        slots: FairSlots,
        previous: dict[str, ModelState],
    ) -> tuple[Read, list[tuple[ModelState, Observation]]]:
        read = await self._read(unit, read_slots)
        if not read.models:
            return read, []
        assert self._client is not None
        current = identities(read.models, unit.school.key, unit.school.secrets)
        order = call_order(current, previous)
        settings = unit.school.settings or self.settings
        # The school's own round: it ends one LMREG_TIMEOUT after its last answer, so its
        # models that hang never hold up another school's, nor its own for long.
        seen = await probe_all(
            [read.models[i] for i in order],
            settings,
            self._client,
            allow_private=self.config.allow_private,
            slots=slots,
            school=unit.school.key,
        )
        return read, [(current[i], o) for i, o in zip(order, seen, strict=True)]

    def _previous(self) -> dict[str, ModelState]:
        """The models' states before this round (a round kept in memory included)."""
        previous: dict[str, ModelState] = self._stored(self.store.models, {})
        if self._unsaved is not None:
            previous |= self._unsaved.states
            previous = {k: s for k, s in previous.items() if k not in self._unsaved.removed}
        return previous

    async def round(self) -> RoundReport:
        """Read the models, call each once, decide, write the state, notify; the report."""
        started = time.perf_counter()
        number = (
            self._unsaved.number + 1
            if self._unsaved
            else self._stored(self.store.last_round, 0) + 1
        )
        now = self._now_ms()
        report = RoundReport(number)
        assert self._client is not None, "use the Watcher as an async context manager"
        previous = self._previous()
        read_slots = asyncio.Semaphore(READ_CONCURRENCY)
        readable = sum(1 for u in self.units if u.registry is not None)
        slots = FairSlots(self.config.concurrency, schools=readable)
        # Each school's models are called as soon as they are read: a round lasts about
        # as long as the longer of the two, not their sum.
        done = await asyncio.gather(
            *(self._read_and_call(u, read_slots, slots, previous) for u in self.units)
        )
        reads = [read for read, _seen in done]
        if any(r.models is not None for r in reads):
            self._read_models_once = True
        outbox = self._schools(report, reads, now) + self._mail_problems(now)
        if report.blind and not self.fleet:
            report.platform_error = report.blind[0].detail
        seen = [pair for _read, pairs in done for pair in pairs]
        read_ok = {r.unit.school.key for r in reads if r.models is not None}
        self._decide(report, previous, seen, read_ok, now, outbox)
        self._after_round(report, now)
        await self.deliver()
        report.seconds = time.perf_counter() - started
        self._log(logging.INFO, round_line(report, self.config.fail_after))
        return report

    def _schools(
        self, report: RoundReport, reads: Sequence[Read], now: int
    ) -> list[tuple[str, int, Message]]:
        """Each school's reading state; what to tell the provider about the blind ones."""
        previous: dict[str, SchoolState] = self._stored(self.store.schools, {})
        if self._unsaved is not None:
            previous |= self._unsaved.schools
        outbox: list[tuple[str, int, Message]] = []
        for read in reads:
            school = read.unit.school
            state, event = school_step(
                previous.get(school.key),
                SchoolState(school.key, school.name),
                error=read.error,
                sign_in=read.sign_in,
                now_ms=now,
                fail_after=self.config.fail_after,
            )
            report.schools.append(state)
            said = state.problem and f"{state.problem}:{state.detail}"
            if said and not self.fleet:
                said += f":{report.number}"  # one account: a line each round it cannot read
            if said != self._said.get(school.key, ""):
                self._said[school.key] = said
                self._log(
                    logging.WARNING if said else logging.INFO,
                    school_line(state, number=report.number),
                )
            if event is None:
                continue
            if event == "alert":
                message = blind_message(
                    school.name, state.since_ms, state.detail, state.problem == "sign-in"
                )
            else:
                message = sees_again_message(school.name, previous[school.key].since_ms, now)
            outbox += [(t.id, now, message) for t in self.targets]
        return outbox

    def _decide(
        self,
        report: RoundReport,
        previous: dict[str, ModelState],
        seen: Sequence[tuple[ModelState, Observation]],
        read_ok: set[str],
        now: int,
        outbox: list[tuple[str, int, Message]],
    ) -> None:
        states, events, history = decide(
            previous, seen, number=report.number, now_ms=now, fail_after=self.config.fail_after
        )
        report.states, report.events = states, events
        units = {u.school.key: u for u in self.units}
        for state in states:
            if state.status not in ("up", "new") and state.checked_ms == now and state.fails:
                name = self._school_of(state)
                self._log(logging.WARNING, failure_line(state, name, self.config.fail_after))
        for event in events:
            unit = units.get(event.state.school)
            queued = len(self.targets) + (1 if unit is not None and unit.mail else 0)
            self._log(logging.WARNING, event_line(event, self._school_of(event.state), queued))
        name_of = (lambda e: self._school_of(e.state)) if self.fleet else None
        for message in round_messages(report.events, self.school, name_of):
            outbox += [(t.id, now, message) for t in self.targets]
        outbox += mail_outbox(self.units, report.events)
        keys = {s.key for s in states}
        # A school whose models could not be read keeps them (and their state) as they were.
        kept = [s for s in previous.values() if s.key not in keys and s.school not in read_ok]
        report.states += kept
        removed = [k for k, s in previous.items() if k not in keys and s.school in read_ok]
        for key in removed:
            self._log(logging.INFO, removed_line(previous[key], self._school_of(previous[key])))
        self._save(report, history, removed, outbox)

    def _school_of(self, state: ModelState) -> str:
        """The name of the school a model belongs to."""
        unit = self._by_key.get(state.school)
        return unit.school.name if unit is not None else self.school

    def _after_round(self, report: RoundReport, now: int) -> None:
        names = {u.school.key: u.school.name for u in self.units}
        if self.metrics is not None:
            self.metrics.update(report.states, names if self.fleet else None)
            self.metrics.update_schools(report.schools, names if self.fleet else None)
        history: dict[str, list[HistoryRow]] = {}
        rows: list[HistoryRow] = self._stored(lambda: self.store.history(last=60), [])
        for row in rows:
            history.setdefault(row.key, []).append(row)
        page = render_status(
            report.states,
            history,
            school=self.school,
            generated_ms=now,
            round_number=report.number,
            fail_after=self.config.fail_after,
            schools=report.schools,
            names=names if self.fleet else None,
            refresh_s=self.config.interval,
        )
        try:
            write_status(self.config.status_path, self.mask(page))
        except OSError as exc:
            self._log(
                logging.WARNING,
                _("cannot write {path}: {error}").format(path=self.config.status_path, error=exc),
            )

    # -- the state file ----------------------------------------------------------

    def _stored(self, read: Callable[[], _T], default: _T) -> _T:
        """A read of the state file; ``default`` (and a log line) when it is locked."""
        try:
            return read()
        except sqlite3.Error as exc:
            self._log(logging.WARNING, _state_error(self.store.path, exc))
            return default

    def _save(
        self,
        report: RoundReport,
        history: list[HistoryRow],
        removed: list[str],
        outbox: list[tuple[str, int, Message]],
    ) -> None:
        """Write the round (with any round kept in memory before); keep it when locked."""
        held = self._unsaved
        if held is not None:
            history = held.history + history
            removed = sorted(held.removed | set(removed))
            outbox = held.outbox + outbox
        try:
            self.store.save_round(
                report.number, report.states, history, removed, outbox, report.schools
            )
        except sqlite3.Error as exc:
            self._log(
                logging.WARNING,
                _("{problem}; this round is kept in memory and written next round").format(
                    problem=_state_error(self.store.path, exc)
                ),
            )
            self._unsaved = _Unsaved(
                report.number,
                {s.key: s for s in report.states},
                {s.key: s for s in report.schools},
                history,
                set(removed),
                outbox,
            )
            return
        self._unsaved = None

    # -- notifications -----------------------------------------------------------

    def _all_targets(self) -> list[NotifyTarget]:
        mails = [u.mail for u in self.units if u.mail is not None]
        return list({t.id: t for t in [*self.targets, *mails]}.values())

    async def deliver(self) -> None:
        """Send what waits in the outbox, every target at once; a failure waits a round."""
        try:
            await self._deliver()
        except sqlite3.Error as exc:  # locked by another process: the outbox waits a round
            self._log(logging.WARNING, _state_error(self.store.path, exc))

    async def _deliver(self) -> None:
        failing = await deliver_outbox(
            self.store, self.notifier, self._all_targets(), self._now_ms(), self._log
        )
        # A school whose contact's mail keeps failing: the provider hears of it, once a row.
        mails = {u.mail.id: u for u in self.units if u.mail is not None}
        now = self._now_ms()
        told: list[tuple[str, int, Message]] = []
        for target_id, error in failing:
            unit = mails.get(target_id)
            if unit is None or unit.mail is None:
                continue
            message = mail_failing_message(unit.school.name, unit.mail.shown, error)
            self._log(logging.WARNING, message.title)
            told += [(t.id, now, message) for t in self.targets]
        if told:
            self.store.enqueue(told)
            await deliver_outbox(self.store, self.notifier, self.targets, now, self._log)

    def _mail_problems(self, now: int) -> list[tuple[str, int, Message]]:
        """Contacts that cannot be mailed at all: told to the provider in the first round."""
        if self._mail_told:
            return []
        self._mail_told = True
        outbox, lines = mail_problems(self.units, self.targets, now)
        for line in lines:
            self._log(logging.WARNING, line)
        return outbox

    # -- the loop ----------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> int:
        """Rounds until ``rounds`` are done or ``stop`` is set; the exit code.

        0: stopped by a signal, or every model up and every school read after the last
        round; 1: a model is down, or the models of a school could not be read.
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
        return 1 if last.down or last.blind else 0
