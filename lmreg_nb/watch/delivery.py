"""The outbox to the targets: each target's waiting notifications, in order, or one digest.

A target that fails keeps its notifications for the next round (the rest waits
behind the one that failed, so the order holds); one that comes back with more
than :data:`~lmreg_nb.watch.messages.DIGEST_AFTER` waiting gets them as one
digest, not 60 messages in one round. Notifications older than a day are dropped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from ..i18n import _, ngettext
from .messages import DIGEST_AFTER, backlog
from .notify import Notifier, NotifyTarget
from .state import OUTBOX_MAX_AGE_MS, OutboxRow, StateStore

__all__ = ["deliver_outbox"]

Log = Callable[[int, str], None]


async def deliver_outbox(
    store: StateStore,
    notifier: Notifier,
    targets: Sequence[NotifyTarget],
    now_ms: int,
    log: Log,
) -> None:
    """Send what waits in the outbox, every target at once; a failure waits a round."""
    dropped = store.expire(now_ms, OUTBOX_MAX_AGE_MS)
    if dropped:
        log(
            logging.WARNING,
            ngettext(
                "dropped {n} notification no target took within a day",
                "dropped {n} notifications no target took within a day",
                dropped,
            ).format(n=dropped),
        )
    waiting = store.waiting_targets()
    await asyncio.gather(
        *(_deliver_to(store, notifier, t, log) for t in targets if t.id in waiting)
    )


async def _deliver_to(
    store: StateStore, notifier: Notifier, target: NotifyTarget, log: Log
) -> None:
    rows = store.pending(target.id)
    if len(rows) > DIGEST_AFTER:
        # A backlog (a target that comes back, many schools at once): one notification.
        await _deliver_backlog(store, notifier, target, rows, log)
        return
    for row in rows:
        error = await asyncio.to_thread(notifier.send, target, row.message)
        if error is None:
            store.delivered(row.id)
            log(
                logging.INFO,
                _("sent to {target}: {title}").format(target=target.shown, title=row.message.title),
            )
            continue
        store.failed(row.id, error)
        log(logging.WARNING, _failed(target, error))
        return  # keep the order: the rest waits for this one


async def _deliver_backlog(
    store: StateStore, notifier: Notifier, target: NotifyTarget, rows: Sequence[OutboxRow], log: Log
) -> None:
    message = backlog([r.message for r in rows])
    error = await asyncio.to_thread(notifier.send, target, message)
    if error is None:
        store.delivered_many([r.id for r in rows])
        log(
            logging.INFO,
            _("sent to {target}: {title}").format(target=target.shown, title=message.title),
        )
        return
    store.failed(rows[0].id, error)
    log(logging.WARNING, _failed(target, error))


def _failed(target: NotifyTarget, error: str) -> str:
    return _("could not send to {target}: {error}; trying again next round").format(
        target=target.shown, error=error
    )
