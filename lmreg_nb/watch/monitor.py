"""The monitoring notebook (06_monitor) as plain functions: targets, test alert, a round, state.

:class:`Monitor` is what its cells call, and what the widgets of
:mod:`lmreg_nb.ui.monitor` call; each step returns something a notebook shows
(an Outcome, a Table, a figure), built from the same pieces as `lmreg-nb
watch`: one round here is one round of the watch, on the same state file
(unless another watch holds it: then the state is only shown).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError
from ..i18n import _, format_local_time, local_zone
from ..models import ms_to_datetime
from ..onboarding.display import FigureView, Outcome, Table
from ..probe.blocking import run_blocking
from ..secret import split_urls
from .messages import trial_message, what_failed
from .notify import Notifier, NotifyTarget, parse_targets
from .state import HistoryRow, StateStore, default_state_path
from .status_html import status_label
from .watcher import WatchConfig, Watcher, school_name

if TYPE_CHECKING:
    from ..settings import Settings
    from .alerts import ModelState

__all__ = ["CHART_MODELS", "Monitor", "contact_mail_url"]

#: The most models drawn in the latency chart (the slowest last call first).
CHART_MODELS = 12


def contact_mail_url(email: str) -> str:
    """An Apprise e-mail URL to the contact, the SMTP account still to fill in."""
    return f"mailtos://USER:PASSWORD@SMTP.SERVER.EXAMPLE?to={email.strip()}"


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
    ) -> None:
        if settings is None:
            from ..settings import Settings

            settings = Settings.load()
        self.settings = settings
        self.school = school_name(school, settings)
        self.state_path = Path(state_path).expanduser() if state_path else default_state_path()
        if allow_private is None:  # LMREG_ALLOW_PRIVATE=1: a rehearsal on the sandbox
            allow_private = os.environ.get("LMREG_ALLOW_PRIVATE", "").strip() in ("1", "true")
        self.config = WatchConfig(
            state_path=self.state_path,
            fail_after=fail_after,
            school=school,
            allow_private=allow_private,
        )
        self._added: list[NotifyTarget] = []

    # -- targets -------------------------------------------------------------

    def _configured(self) -> list[NotifyTarget]:
        urls = split_urls(self.settings.notify.reveal()) if self.settings.notify else []
        return parse_targets(urls) if urls else []

    def targets(self) -> list[NotifyTarget]:
        """LMREG_NOTIFY's targets and those added in this session (none is fine here)."""
        configured = self._configured()
        ids = {t.id for t in configured}
        return configured + [t for t in self._added if t.id not in ids]

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
        """One round of the watch on the state file: each model called once, alerts sent."""
        from ..registry.client import RegistryClient

        targets = self.targets()
        store = StateStore(self.state_path)
        try:
            store.acquire()
        except ConfigurationError as exc:
            store.close()
            return Outcome(str(exc), [], ok=False)
        try:
            with RegistryClient(self.settings) as registry:
                watcher = Watcher(
                    self.settings, registry, store, targets, Notifier(targets), self.config
                )

                async def once() -> Any:
                    async with watcher:
                        return await watcher.round()

                report = run_blocking(once())
        finally:
            store.close()
        rows = [
            (_("models"), str(len(report.states))),
            (_("down"), ", ".join(s.model_name for s in report.down) or "-"),
            (_("seconds"), f"{report.seconds:.1f}"),
            (_("notifications"), str(len(report.events) * len(targets))),
        ]
        if report.platform_error:
            rows.append((_("platform"), report.platform_error))
        title = _("round {n}").format(n=report.number)
        if not targets:
            # A round that passes but can tell no one is not all well: say where alerts go.
            rows.append((_("alert targets"), _("none: alerts go nowhere; add one above")))
            return Outcome(_("round {n}: no alert targets").format(n=report.number), rows, ok=False)
        return Outcome(title, rows, ok=not report.down and not report.platform_error)

    def _states(self) -> list[ModelState]:
        if not self.state_path.is_file():
            return []
        with StateStore(self.state_path) as store:
            return sorted(store.models().values(), key=lambda s: s.model_name)

    def state_table(self) -> Table:
        """Each model's state: status, since when, failures in a row, latency, certificate."""
        rows = []
        for s in self._states():
            since = s.since_ms if s.status != "up" else s.last_ok_ms
            rows.append(
                [
                    s.model_name,
                    s.model_id,
                    status_label(s.status),
                    format_local_time(ms_to_datetime(since)) if since else "",
                    str(s.fails),
                    f"{s.latency_s:.2f}" if s.latency_s is not None and s.status == "up" else "",
                    "" if s.tls_days is None else str(s.tls_days),
                    what_failed(s) if s.status != "up" and s.kind else "",
                ]
            )
        columns = [
            _("model"),
            "modelId",
            _("status"),
            _("since"),
            _("failures in a row"),
            _("latency (s)"),
            _("certificate (days left)"),
            _("what failed"),
        ]
        return Table(columns, rows)

    def latency_chart(self, models: Sequence[str] = ()) -> FigureView | Outcome:
        """Each model's recent latency (failed calls marked at the bottom)."""
        from matplotlib.figure import Figure

        from ..fonts import plot_gettext

        states = self._states()
        if models:
            states = [s for s in states if s.model_name in models]
        if not states:
            return Outcome(_("no round has run yet: run one above"), [], pending=True)
        states = sorted(states, key=lambda s: -(s.latency_s or 0))[:CHART_MODELS]
        with StateStore(self.state_path) as store:
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
