"""`lmreg-nb watch` as one call: build the pieces, run the rounds, stop cleanly on a signal.

:func:`run_watch` checks everything that can be wrong before the first round
(targets, the state file, the metrics port, the credentials' variables) and
raises a one-line error for it; then it runs the rounds until they are done
or SIGINT / SIGTERM arrives: the round in progress finishes and is written,
and the exit code is 0. A second signal stops at once (the state keeps the
last whole round).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigurationError
from ..i18n import _, ngettext
from ..secret import Masker

if TYPE_CHECKING:
    from ..settings import Settings
    from .fleet import School
    from .watcher import WatchConfig, Watcher

__all__ = ["MaskingFilter", "WatchRequest", "recipients", "run_watch", "start_line"]

log = logging.getLogger("lmreg_nb.watch")


class MaskingFilter(logging.Filter):
    """Masks the notification URLs' secrets in every record a handler writes."""

    def __init__(self, mask: Masker) -> None:
        super().__init__()
        self.mask = mask

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = self.mask(record.getMessage())
        record.args = ()
        return True


@dataclass(frozen=True)
class WatchRequest:
    """What the command line adds to the configuration: targets, the fleet, the metrics.

    ``None`` means "as the settings say" (LMREG_NOTIFY_MAIL, LMREG_ALLOW_PRIVATE, read
    from the environment or a ``.env`` as every setting is).
    """

    notify: Sequence[str] = ()
    mail: str | None = None
    plan: Path | None = None
    school_mail: bool = True
    allow_private: bool | None = None
    metrics_port: int | None = None


def run_watch(
    config: WatchConfig,
    request: WatchRequest | None = None,
    *,
    settings: Settings | None = None,
    handler: logging.Handler | None = None,
    schools: Sequence[School] | None = None,
) -> int:
    """Run `lmreg-nb watch`; the exit code (0, 1) or a one-line LmregError (exit 2 for usage).

    ``handler`` receives the log lines (masked); the CLI passes one writing to stderr.
    The fleet (``request.plan``, or ``schools`` already read) is watched each school with
    its own account; its contacts are mailed by the sender (``request.mail`` or
    LMREG_NOTIFY_MAIL), which a plan needs unless ``request.school_mail`` is False.
    """
    from ..registry.client import RegistryClient
    from ..settings import Settings
    from .fleet import parse_mail, read_fleet
    from .metrics import WatchMetrics
    from .notify import Notifier, configured_urls, parse_targets, targets_masker
    from .state import StateStore
    from .watcher import Watcher

    request = request if request is not None else WatchRequest()
    settings = settings if settings is not None else Settings.load()
    allow = settings.allow_private if request.allow_private is None else request.allow_private
    config = replace(config, allow_private=bool(allow))
    fleet = request.plan is not None or schools is not None
    mail_url = request.mail or (settings.notify_mail.reveal() if settings.notify_mail else "")
    if request.mail and not fleet:
        raise ConfigurationError(_("--mail needs --plan: it sends each school's alerts"))
    if fleet and request.school_mail and not mail_url:
        raise ConfigurationError(
            _(
                "--plan needs a mail sender for the schools' contacts: give --mail URL or set "
                "LMREG_NOTIFY_MAIL (an Apprise mailtos:// URL), or --no-school-mail to alert "
                "your own targets only"
            ),
            variable="LMREG_NOTIFY_MAIL",
        )
    if fleet and not request.school_mail and request.mail:
        raise ConfigurationError(_("--mail and --no-school-mail: give one of them"))
    sender = parse_mail(mail_url) if fleet and request.school_mail else None
    if schools is None and request.plan is not None:
        schools = read_fleet(request.plan)
    urls = configured_urls(settings, request.notify)
    # With a sender the schools' contacts are targets: the provider's own are optional.
    targets = parse_targets(urls) if urls or sender is None else []
    if handler is not None:
        handler.addFilter(MaskingFilter(targets_masker([*targets, *([sender] if sender else [])])))
    with contextlib.ExitStack() as stack:
        registry = None if schools is not None else stack.enter_context(RegistryClient(settings))
        store = stack.enter_context(StateStore(config.state_path))
        store.acquire()
        metrics = None
        if request.metrics_port is not None:
            metrics = WatchMetrics()
            try:
                port = metrics.serve(request.metrics_port)
            except OSError as exc:
                raise ConfigurationError(
                    _("--metrics-port {port}: cannot serve there ({error})").format(
                        port=request.metrics_port, error=exc.strerror or exc
                    )
                ) from None
            stack.callback(metrics.close)
            log.info(_("metrics at http://127.0.0.1:{port}/metrics").format(port=port))
        notifier = Notifier(targets)
        stack.callback(notifier.close)
        watcher = Watcher(
            settings,
            registry,
            store,
            targets,
            notifier,
            config,
            metrics=metrics,
            schools=schools,
            mail=sender,
        )
        stack.callback(watcher.close)
        log.info(start_line(watcher))
        return asyncio.run(_main(watcher))


def start_line(watcher: Watcher) -> str:
    """What the watch does and who gets its mail, in one line."""
    config = watcher.config
    interval, n = f"{config.interval:g}", config.fail_after
    if watcher.fleet:
        # A sentence of its own: "4 所学校" is Chinese words, with no space after them.
        schools = len(watcher.units)
        head = ngettext(
            "watching the models of {schools} every {interval} s; alert after {n} failed round "
            "in a row",
            "watching the models of {schools} every {interval} s; alert after {n} failed rounds "
            "in a row",
            n,
        ).format(
            schools=ngettext("{n} school", "{n} schools", schools).format(n=schools),
            interval=interval,
            n=n,
        )
    else:
        head = ngettext(
            "watching the models of {platform} every {interval} s; alert after {n} failed round "
            "in a row",
            "watching the models of {platform} every {interval} s; alert after {n} failed rounds "
            "in a row",
            n,
        ).format(platform=watcher.settings.base_url or "", interval=interval, n=n)
    return _("{head}; {who}; state in {state}").format(
        head=head, who=recipients(watcher), state=config.state_path
    )


def recipients(watcher: Watcher) -> str:
    """Who gets the alerts: "the contacts of 4 schools and 1 provider target"."""
    mailed = sum(1 for u in watcher.units if u.mail is not None)
    provider = len(watcher.targets)
    shown = ", ".join(t.shown for t in watcher.targets)
    targets = ngettext(
        "{n} provider target ({shown})", "{n} provider targets ({shown})", provider
    ).format(n=provider, shown=shown)
    if not watcher.fleet:
        return ngettext(
            "alerts go to {n} target ({shown})", "alerts go to {n} targets ({shown})", provider
        ).format(n=provider, shown=shown)
    if not mailed:
        return _("alerts go to {targets} only: no school's contact is mailed").format(
            targets=targets
        )
    contacts = ngettext("the contacts of {n} school", "the contacts of {n} schools", mailed).format(
        n=mailed
    )
    if not provider:
        return _("alerts go to {contacts}; no provider target").format(contacts=contacts)
    return _("alerts go to {contacts} and {targets}").format(contacts=contacts, targets=targets)


async def _main(watcher: Watcher) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()

    def on_signal(signum: int) -> None:
        if stop.is_set() and task is not None:  # the second signal: stop now
            task.cancel()
            return
        stop.set()
        log.info(
            _("{signal}: finishing this round, then stopping").format(
                signal=signal.Signals(signum).name
            )
        )

    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # Windows, or a thread
            loop.add_signal_handler(signum, on_signal, signum)
    try:
        async with watcher:
            return await watcher.run(stop)
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signum)
