"""The outbox to the targets: every target at once within a bound, each in order, or one digest.

Targets are served concurrently, :data:`~lmreg_nb.watch.notify.SEND_CONCURRENCY`
at a time (a mass outage across 500 schools mails every contact within seconds,
not one after another); one target's notifications go in order. Each is marked
as being sent before it is (a watch killed mid-send never sends it again, see
:meth:`~lmreg_nb.watch.state.StateStore.interrupted`). A target that fails keeps
its notifications for the next round (the rest waits behind the one that
failed, so the order holds); one that comes back with more than
:data:`~lmreg_nb.watch.messages.DIGEST_AFTER` waiting gets them as one digest.
Notifications older than a day are dropped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from ..i18n import _, ngettext
from .messages import DIGEST_AFTER, backlog
from .notify import SEND_CONCURRENCY, Notifier, NotifyTarget
from .state import OUTBOX_MAX_AGE_MS, StateStore

__all__ = ["FAILS_BEFORE_TOLD", "deliver_outbox"]

Log = Callable[[int, str], None]
#: A notification that failed this many times in a row: its target is reported (a school
#: whose contact's mail keeps failing hears of no outage; the provider must know).
FAILS_BEFORE_TOLD = 3


async def deliver_outbox(
    store: StateStore,
    notifier: Notifier,
    targets: Sequence[NotifyTarget],
    now_ms: int,
    log: Log,
) -> list[tuple[str, str]]:
    """Send what waits in the outbox, every target at once within a bound.

    Returns the targets whose notification has now failed :data:`FAILS_BEFORE_TOLD`
    times, with the reason: (target id, error).
    """
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
    bound = asyncio.Semaphore(SEND_CONCURRENCY)
    results = await asyncio.gather(
        *(_deliver_to(store, notifier, t, now_ms, log, bound) for t in targets if t.id in waiting)
    )
    sent = sum(n for n, _failed in results)
    failing = [f for _n, f in results if f is not None]
    if failing:
        log(
            logging.WARNING,
            ngettext(
                "sent {n} notification; {failed} of the targets failed (tried again next round)",
                "sent {n} notifications; {failed} of the targets failed (tried again next round)",
                sent,
            ).format(n=sent, failed=len(failing)),
        )
    elif sent:
        log(
            logging.INFO,
            ngettext("sent {n} notification", "sent {n} notifications", sent).format(n=sent),
        )
    return [(t, e) for t, e, told in failing if told]


async def _deliver_to(
    store: StateStore,
    notifier: Notifier,
    target: NotifyTarget,
    now_ms: int,
    log: Log,
    bound: asyncio.Semaphore,
) -> tuple[int, tuple[str, str, bool] | None]:
    """(notifications sent, (target, error, whether to tell the provider) when one failed)."""
    async with bound:
        rows = store.pending(target.id)
        if len(rows) > DIGEST_AFTER:
            # A backlog (a target that comes back, many schools at once): one notification.
            batches = [(rows, backlog([r.message for r in rows]))]
        else:
            batches = [([r], r.message) for r in rows]
        sent = 0
        for batch, message in batches:
            ids = [r.id for r in batch]
            store.sending(ids, now_ms)
            error = await notifier.asend(target, message)
            if error is None:
                store.delivered_many(ids)
                sent += len(batch)
                log(
                    logging.INFO,
                    _("sent to {target}: {title}").format(target=target.shown, title=message.title),
                )
                continue
            first = batch[0]
            store.failed(first.id, error, [r.id for r in batch[1:]])
            log(logging.WARNING, _failed(target, message.title, error))
            return sent, (target.id, error, first.attempts + 1 == FAILS_BEFORE_TOLD)
        return sent, None


def _failed(target: NotifyTarget, title: str, error: str) -> str:
    # The title names the school ("[School A] model qwen is down"): every line does.
    return _("could not send to {target} ({title}): {error}; trying again next round").format(
        target=target.shown, title=title, error=error
    )
