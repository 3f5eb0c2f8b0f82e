"""The monitoring notebook (06_monitor) as plain functions: targets, test alert, a round, state.

:class:`Monitor` is what its cells call, and what the widgets of
:mod:`lmreg_nb.ui.monitor` call; each step returns something a notebook shows
(an Outcome, a Table, a figure), built from the same pieces as `lmreg-nb
watch`, with the same settings (LMREG_* from the environment or a ``.env``).

It rehearses by default: alerts go only to the targets given here (the form,
LMREG_NOTIFY), never to the school's contact, and the rounds are kept in a
state file of their own (``watch-rehearsal.sqlite3``), so a Run All counts as
no round of the real watch. With rehearsal off, a round is a round of the
watch on its state file, and the contact (``contact_email``, by the sender of
LMREG_NOTIFY_MAIL) is a target too. The state shown can be a fleet's: each
model with its school, and the schools that cannot sign in.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..display import FigureView, Outcome, Table
from ..errors import ConfigurationError
from ..i18n import _, format_local_time, local_zone, zone_label
from ..models import ms_to_datetime
from ..probe.blocking import run_blocking
from ..secret import split_urls
from .messages import trial_message, what_failed
from .notify import Notifier, NotifyTarget, parse_targets
from .state import HistoryRow, StateStore, default_state_path
from .status_html import status_label
from .watcher import WatchConfig, Watcher, school_name

if TYPE_CHECKING:
    from ..settings import Settings
    from .alerts import ModelState, SchoolState

__all__ = ["CHART_MODELS", "Monitor", "contact_mail_url", "rehearsal_path"]

#: The most models drawn in the latency chart (the slowest last call first).
CHART_MODELS = 12


def contact_mail_url(email: str) -> str:
    """An Apprise e-mail URL to the contact, the SMTP account still to fill in."""
    return f"mailtos://USER:PASSWORD@SMTP.SERVER.EXAMPLE?to={email.strip()}"


def rehearsal_path(state_path: Path) -> Path:
    """The rehearsal's own state file, beside the watch's: ``NAME-rehearsal.sqlite3``."""
    return state_path.with_name(f"{state_path.stem}-rehearsal{state_path.suffix}")


class Monitor:
    """The notebook's monitoring steps over one state file and the targets chosen."""

    def __init__(
        self,
        school: str = "",
        *,
        state_path: str | Path = "",
        fail_after: int = 3,
        settings: Settings | None = None,
        allow_private: bool | None = None,
        rehearsal: bool = True,
        contact_email: str = "",
    ) -> None:
        if settings is None:
            from ..settings import Settings

            settings = Settings.load()  # LMREG_* as everywhere: environment, then .env
        self.settings = settings
        self.school = school_name(school, settings)
        self.watch_state_path = (
            Path(state_path).expanduser() if state_path else default_state_path()
        )
        self.allow_private = settings.allow_private if allow_private is None else allow_private
        self.fail_after = fail_after
        self.given_school = school
        self.rehearsal = rehearsal
        self.contact_email = contact_email.strip()
        self.config  # noqa: B018 - checks fail_after now, as the notebook's parameters cell runs
        self._added: list[NotifyTarget] = []

    @property
    def state_path(self) -> Path:
        """The state file rounds here use: the rehearsal's own, or the watch's."""
        return rehearsal_path(self.watch_state_path) if self.rehearsal else self.watch_state_path

    @property
    def config(self) -> WatchConfig:
        """The watch's configuration for a round here."""
        return WatchConfig(
            state_path=self.state_path,
            fail_after=self.fail_after,
            school=self.given_school,
            allow_private=self.allow_private,
        )

    def set_rehearsal(self, on: bool) -> Outcome:
        """Rehearse (alerts to the targets given here only) or run as the real watch."""
        self.rehearsal = on
        if on:
            return Outcome(
                _("rehearsal: alerts go only to the targets given here"),
                [(_("state"), str(self.state_path))],
            )
        return Outcome(
            _("rehearsal off: rounds here are rounds of the watch, and the contact is mailed"),
            [(_("state"), str(self.state_path))],
        )

    # -- targets -------------------------------------------------------------

    def _configured(self) -> list[NotifyTarget]:
        urls = split_urls(self.settings.notify.reveal()) if self.settings.notify else []
        return parse_targets(urls) if urls else []

    def _contact(self) -> NotifyTarget | None:
        """The school's contact by LMREG_NOTIFY_MAIL's sender (never while rehearsing)."""
        if self.rehearsal or not self.contact_email or not self.settings.notify_mail:
            return None
        from ..validate import check_email
        from .fleet import mail_target, parse_mail

        sender = parse_mail(self.settings.notify_mail.reveal())
        return mail_target(sender, check_email(self.contact_email))

    def targets(self) -> list[NotifyTarget]:
        """LMREG_NOTIFY's targets, those added here and, out of rehearsal, the contact."""
        configured = self._configured()
        contact = self._contact()
        found = configured + ([contact] if contact is not None else [])
        ids = {t.id for t in found}
        return found + [t for t in self._added if t.id not in ids]

    def add_target(self, url: str) -> Outcome:
        """Check an Apprise URL and use it in this session (it is not saved anywhere)."""
        (target,) = parse_targets([url])
        if target.id not in {t.id for t in self._added}:
            self._added.append(target)
        return Outcome(_("alert target added"), [(_("target"), target.shown)])

    def remove_target(self, number: int | None = None) -> Outcome:
        """Stop using a target added here: the ``number``-th added (1 is the first), else the last.

        LMREG_NOTIFY's targets are not removed here: change the variable.
        """
        if not self._added:
            return Outcome(_("no target was added here"), [], ok=False)
        index = len(self._added) if number is None else number
        if not 1 <= index <= len(self._added):
            return Outcome(
                _("there is no added target {n}: give 1 to {count}").format(
                    n=index, count=len(self._added)
                ),
                [],
                ok=False,
            )
        target = self._added.pop(index - 1)
        return Outcome(_("alert target removed"), [(_("target"), target.shown)])

    def targets_table(self) -> Table:
        """The targets, masked, and where each comes from."""
        try:
            rows = [[t.shown, "LMREG_NOTIFY"] for t in self._configured()]
        except ConfigurationError as exc:
            rows = [[str(exc), "LMREG_NOTIFY"]]
        rows += [[t.shown, _("added here")] for t in self._added]
        if self.contact_email:
            try:
                contact = self._contact()
            except ConfigurationError as exc:
                rows.append([str(exc), "LMREG_NOTIFY_MAIL"])
            else:
                if contact is not None:
                    rows.append([contact.shown, _("the contact (LMREG_NOTIFY_MAIL)")])
                elif self.rehearsal:
                    rows.append([self.contact_email, _("not mailed: rehearsal")])
                else:
                    rows.append([self.contact_email, _("not mailed: LMREG_NOTIFY_MAIL is not set")])
        return Table([_("target"), _("from")], rows)

    def send_test_alert(self) -> Outcome:
        """Send a test notification to every target; one row per target: sent, or why not."""
        targets = self.targets()
        if not targets:
            return Outcome(
                _("no alert targets: set LMREG_NOTIFY or add a target above"), [], ok=False
            )
        notifier = Notifier(targets)
        message = trial_message(self.school)
        rows = []
        for target in targets:
            error = notifier.send(target, message)
            rows.append((target.shown, _("sent") if error is None else error))
        ok = all(value == _("sent") for _t, value in rows)
        return Outcome(_("test alert") if ok else _("test alert: a target failed"), rows, ok=ok)

    # -- a round and the state -------------------------------------------------

    def run_round(self) -> Outcome:
        """One round on the state file: each model called once, alerts sent, its log shown."""
        from ..registry.client import RegistryClient

        targets = self.targets()
        store = StateStore(self.state_path, setting="state_path")
        try:
            store.acquire()
        except ConfigurationError as exc:
            store.close()
            return Outcome(str(exc), [], ok=False)
        notifier = Notifier(targets)
        try:
            with RegistryClient(self.settings) as registry, _captured() as lines:
                watcher = Watcher(self.settings, registry, store, targets, notifier, self.config)

                async def once() -> Any:
                    async with watcher:
                        return await watcher.round()

                report = run_blocking(once())
        finally:
            notifier.close()
            store.close()
        rows = [
            (_("models"), str(len(report.states))),
            (_("down"), ", ".join(s.model_name for s in report.down) or "-"),
            (_("seconds"), f"{report.seconds:.1f}"),
            (_("mode"), _("rehearsal") if self.rehearsal else _("the watch")),
        ]
        if report.platform_error:
            rows.append((_("platform"), report.platform_error))
        rows += [(_("log"), line) for line in lines]
        title = _("round {n}").format(n=report.number)
        if not targets:
            # A round that passes but can tell no one is not all well: say where alerts go.
            rows.append((_("alert targets"), _("none: alerts go nowhere; add one above")))
            return Outcome(_("round {n}: no alert targets").format(n=report.number), rows, ok=False)
        return Outcome(title, rows, ok=not report.down and not report.platform_error)

    def _states(self) -> tuple[list[ModelState], list[SchoolState]]:
        if not self.state_path.is_file():
            return [], []
        with StateStore(self.state_path, setting="state_path") as store:
            models = sorted(store.models().values(), key=lambda s: (s.school, s.model_name))
            return models, list(store.schools().values())

    def state_table(self) -> Table:
        """Each model's state, the school first when the state is a fleet's; the cause last
        (its column wraps, the others stay short: times without their zone, said once)."""
        models, schools = self._states()
        names = {school.key: school.name for school in schools}
        fleet = any(m.school for m in models) or any(school.key for school in schools)
        zone = zone_label(datetime.now(local_zone()))
        rows = []
        for s in schools:
            if s.problem and fleet:  # a school that cannot sign in has no model to list
                label = (
                    _("cannot sign in") if s.problem == "sign-in" else _("cannot read the models")
                )
                rows.append(
                    [s.name, "-", label, _short_time(s.since_ms), str(s.fails), "", s.detail]
                )
        for m in models:
            since = m.since_ms if m.status != "up" else m.last_ok_ms
            latency = f"{m.latency_s:.2f}" if m.latency_s is not None and m.status == "up" else ""
            rows.append(
                [
                    names.get(m.school, m.school),
                    m.model_name,
                    status_label(m.status),
                    _short_time(since),
                    str(m.fails),
                    latency,
                    what_failed(m) if m.status != "up" and m.kind else "",
                ]
            )
        columns = [
            _("school"),
            _("model"),
            _("status"),
            _("since ({zone})").format(zone=zone),
            _("failures in a row"),
            _("latency (s)"),
            _("what failed"),
        ]
        if not fleet:
            columns, rows = columns[1:], [r[1:] for r in rows]
        return Table(columns, rows)

    def latency_chart(self, models: Sequence[str] = ()) -> FigureView | Outcome:
        """Each model's recent latency (failed calls marked at the bottom)."""
        from matplotlib.figure import Figure

        from ..fonts import plot_gettext

        states, _schools = self._states()
        if models:
            states = [s for s in states if s.model_name in models]
        if not states:
            return Outcome(_("no round has run yet: run one above"), [], pending=True)
        states = sorted(states, key=lambda s: -(s.latency_s or 0))[:CHART_MODELS]
        with StateStore(self.state_path, setting="state_path") as store:
            history = {s.key: store.history(s.key) for s in states}
        t = plot_gettext()
        zone = local_zone()
        fig = Figure(figsize=(8, 3.2))
        ax = fig.add_subplot()
        for state in states:
            rows = history[state.key]
            good = [r for r in rows if r.ok and r.latency_s is not None]
            bad = [r for r in rows if not r.ok]
            latency = [r.latency_s or 0.0 for r in good]
            ax.plot(_times(good), latency, marker=".", label=state.model_name)
            ax.plot(_times(bad), [0.0] * len(bad), "x", color="#c00", clip_on=False)
        _time_axis(ax, [r.at_ms for rows in history.values() for r in rows], zone)
        ax.set_title(t("Latency of each call"))
        ax.set_xlabel(format_local_time(ms_to_datetime(history_end(history))).split(" ", 2)[-1])
        ax.set_ylabel(t("seconds"))
        ax.set_ylim(bottom=0)
        ax.legend(fontsize="small")
        return FigureView(fig)

    def status_page(self) -> Path:
        """Where the page of the last round is (open it in a browser)."""
        return self.config.status_path


#: The chart's time axis spans at least this long (one round alone would give a span of
#: zero: matplotlib then labels every tick with the same minute, the point on the border).
MIN_SPAN_MS = 10 * 60 * 1000


def _time_axis(ax: Any, times_ms: Sequence[int], zone: Any) -> None:
    """Minutes on the x axis, padded so no point sits on the border and ticks differ."""
    from matplotlib import dates as mdates

    if not times_ms:
        return
    first, last = min(times_ms), max(times_ms)
    pad = max((MIN_SPAN_MS - (last - first)) / 2, (last - first) * 0.05, 30_000)
    ax.set_xlim(
        mdates.date2num(ms_to_datetime(int(first - pad))),
        mdates.date2num(ms_to_datetime(int(last + pad))),
    )
    locator = mdates.AutoDateLocator(tz=zone, minticks=3, maxticks=7)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M", tz=zone))


def _times(rows: Sequence[HistoryRow]) -> Any:
    """The calls' times as matplotlib date numbers."""
    from matplotlib import dates as mdates

    return mdates.date2num([ms_to_datetime(r.at_ms) for r in rows])


def history_end(history: Mapping[str, Sequence[HistoryRow]]) -> int:
    """The time of the last call in ``history`` (ms)."""
    return max((r.at_ms for rows in history.values() for r in rows), default=0)


def _short_time(ms: int | None) -> str:
    """``11-28 14:05`` in the school's zone (the table's header names the zone)."""
    if not ms:
        return ""
    return f"{ms_to_datetime(ms).astimezone(local_zone()):%m-%d %H:%M}"


@contextmanager
def _captured() -> Iterator[list[str]]:
    """The watch's log lines of a round, for the notebook's normal output (not stderr)."""
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    logger = logging.getLogger("lmreg_nb.watch")
    handler = Keep(logging.INFO)
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False  # shown in the round's outcome, not again in red on stderr
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate
