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
from ..wire.stream_client import ChatConnection
from .level_run import TICK_S, Connection

__all__ = ["drain", "warm_up"]


async def warm_up(
    target: Target,
    payload: bytes,
    bound_s: float,
    connect: Callable[[Target, bytes], Connection] = ChatConnection,
) -> bool:
    """Send one request; True once the server answers (first token or an error) within ``bound_s``.

    False: no answer within ``bound_s`` (the request is then cancelled).
    """
    conn = connect(target, payload)
    task = asyncio.ensure_future(conn.send())
    end = time.perf_counter() + bound_s
    try:
        while not task.done():
            current = conn.current
            if current is not None and current.times:
                return True  # the first token came: the server is warm
            left = end - time.perf_counter()
            if left <= 0:
                return False
            await asyncio.wait([task], timeout=min(TICK_S, left))
        return True
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        conn.close()


async def drain(
    target: Target,
    payload: bytes,
    bound_s: float,
    connect: Callable[[Target, bytes], Connection] = ChatConnection,
) -> bool:
    """Wait until the server answers a request with a first token again, at most ``bound_s``.

    After a level cut its requests in flight, a server may still work through
    them (a prefill queue that keeps a request's turn when its client went
    away): the next level would be measured behind that backlog. One request
    at a time, until one gets a first token (True) or the time is up (False).
    """
    end = time.perf_counter() + bound_s
    while (left := end - time.perf_counter()) > 0:
        conn = connect(target, payload)
        task = asyncio.ensure_future(conn.send())
        try:
            while not task.done():
                current = conn.current
                if current is not None and current.times:
                    return True
                left = end - time.perf_counter()
                if left <= 0:
                    return False
                await asyncio.wait([task], timeout=min(TICK_S, left))
            if task.result().times:
                return True
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            conn.close()
        await asyncio.sleep(min(TICK_S, max(0.0, end - time.perf_counter())))
    return False
