"""The capacity search's warm-up: one request before the first level, bounded in time.

A cold server (a model still loading, caches empty) and our first connection
are slower than they will be for students, and one slow sample weighs a lot
in a small level. The warm-up is done once, for all levels. It ends as soon
as the server answers (its first token, or an error), because that is all it
is for; it never waits longer than it is given (the request timeout, within
what is left of the search's budget): a server that sends its headers and
then nothing must not hold the search for the client's whole-reply limit.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from ..target import Target
from ..wire.exchange import Exchange
from ..wire.stream_client import ChatConnection
from .level_run import TICK_S, Connection

__all__ = ["BUSY", "drain", "first_token", "warm_up"]

#: Statuses of a server that answers while its queue is full: the drain asks again.
BUSY = (429, 503)


async def first_token(
    conn: Connection, bound_s: float, *, thinking: bool = True
) -> tuple[bool, float | None]:
    """Send ``conn``'s request and wait, at most ``bound_s``, for its first token.

    Returns (answered, seconds from sending to the first token): (True, s) once a token
    came, (True, None) when the request ended without one (an error), (False, None) at
    the bound. ``thinking``: a thinking token counts (else only the answer's). The
    request is cancelled and the connection closed in every case.
    """

    def token_at(ex: Exchange | None) -> float | None:
        if ex is None:
            return None
        return ex.first_token_at if thinking else (ex.times[0] if ex.times else None)

    task = asyncio.ensure_future(conn.send())
    end = time.perf_counter() + bound_s
    try:
        while not task.done():
            current = conn.current
            if (at := token_at(current)) is not None and current is not None:
                return True, at - current.t_start
            left = end - time.perf_counter()
            if left <= 0:
                return False, None
            await asyncio.wait([task], timeout=min(TICK_S, left))
        ex = task.result()  # done between two looks, or before any token (an error)
        at = token_at(ex)
        if at is None and ex.silent_answer:  # cut by max_tokens before any text: a token came
            at = ex.silent_token_at
        return True, (at - ex.t_start if at is not None else None)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        conn.close()


async def warm_up(
    target: Target,
    payload: bytes,
    bound_s: float,
    connect: Callable[[Target, bytes], Connection] = ChatConnection,
) -> bool:
    """Send one request; True once the server answers (first token or an error) within ``bound_s``.

    False: no answer within ``bound_s`` (the request is then cancelled).
    """
    answered, _first = await first_token(connect(target, payload), bound_s, thinking=False)
    return answered


async def drain(
    target: Target,
    payload: bytes,
    bound_s: float,
    connect: Callable[[Target, bytes], Connection] = ChatConnection,
) -> bool:
    """Wait until the server answers a request again, at most ``bound_s``.

    After a level cut its requests in flight, a server may still work through
    them (a prefill queue that keeps a request's turn when its client went
    away): the next level would be measured behind that backlog. One request
    at a time, until one gets a first token or an answer that is not "busy"
    (True: an error such as a 500 comes at once, no queue holds it), or the
    time is up (False). A busy answer (:data:`BUSY`) is asked again.
    """
    end = time.perf_counter() + bound_s
    while (left := end - time.perf_counter()) > 0:
        conn = connect(target, payload)
        answered, first = await first_token(conn, left, thinking=False)
        if first is not None:
            return True
        if not answered:
            return False
        if conn.current is None or conn.current.status not in BUSY:
            return True
        await asyncio.sleep(min(TICK_S, max(0.0, end - time.perf_counter())))
    return False
