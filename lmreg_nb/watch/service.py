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
from typing import TYPE_CHECKING

from ..errors import ConfigurationError
from ..i18n import _, ngettext
from ..secret import Masker

if TYPE_CHECKING:
    from ..settings import Settings
    from .fleet import School
    from .watcher import WatchConfig, Watcher

__all__ = ["MaskingFilter", "run_watch"]

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


def run_watch(
    config: WatchConfig,
    *,
    notify: Sequence[str] = (),
    metrics_port: int | None = None,
    settings: Settings | None = None,
    handler: logging.Handler | None = None,
    schools: Sequence[School] | None = None,
    mail: str | None = None,
) -> int:
    """Run `lmreg-nb watch`; the exit code (0, 1) or a one-line LmregError (exit 2 for usage).

    ``handler`` receives the log lines (masked); the CLI passes one writing to stderr.
    ``schools`` (the fleet: a batch plan's rows) are watched each with its own account;
    ``mail`` is the sender of their contacts' alerts.
    """
    from ..registry.client import RegistryClient
    from ..settings import Settings
    from .fleet import parse_mail
    from .metrics import WatchMetrics
    from .notify import Notifier, configured_urls, parse_targets, targets_masker
    from .state import StateStore
    from .watcher import Watcher

    settings = settings if settings is not None else Settings.load()
    targets = parse_targets(configured_urls(settings, notify))
    sender = parse_mail(mail) if mail else None
    if handler is not None:
        handler.addFilter(MaskingFilter(targets_masker([*targets, *([sender] if sender else [])])))
    with contextlib.ExitStack() as stack:
        registry = None if schools is not None else stack.enter_context(RegistryClient(settings))
        store = stack.enter_context(StateStore(config.state_path))
        store.acquire()
        metrics = None
        if metrics_port is not None:
            metrics = WatchMetrics()
            try:
                port = metrics.serve(metrics_port)
            except OSError as exc:
                raise ConfigurationError(
                    _("--metrics-port {port}: cannot serve there ({error})").format(
                        port=metrics_port, error=exc.strerror or exc
                    )
                ) from None
            stack.callback(metrics.close)
            log.info(_("metrics at http://127.0.0.1:{port}/metrics").format(port=port))
        watcher = Watcher(
            settings,
            registry,
            store,
            targets,
            Notifier(targets),
            config,
            metrics=metrics,
            schools=schools,
            mail=sender,
        )
        stack.callback(watcher.close)
        log.info(
            ngettext(
                "watching the models of {platform} every {interval} s; alert after {n} failed "
                "round in a row to {targets}; state in {state}",
                "watching the models of {platform} every {interval} s; alert after {n} failed "
                "rounds in a row to {targets}; state in {state}",
                config.fail_after,
            ).format(
                platform=settings.base_url
                if schools is None
                else ngettext("{n} school", "{n} schools", len(schools)).format(n=len(schools)),
                interval=f"{config.interval:g}",
                n=config.fail_after,
                targets=", ".join(t.shown for t in targets),
                state=config.state_path,
            )
        )
        return asyncio.run(_main(watcher))


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
