"""Whether the server reuses the lesson the class shares (a prefix cache), judged on samples.

One request at a time: a short question (the warm-up, and what a prompt costs
without the lesson), three students' first questions on the lesson, then the
short question again. The first student pays for the lesson cold; with a prefix
cache the next ones do not. One pair of times is not enough on a server whose
times wander (a CPU model on a busy machine: 16 to 620 ms for the same prompt),
so the noise is taken from the samples themselves (the spread of the later
students' times and of the two short ones) and a finding is said only when the
difference stands well clear of it; otherwise "could not tell".
"""

from __future__ import annotations

import statistics

from ...summary.workload import PrefixCache
from ..target import Target
from ..wire.stream_client import ChatConnection
from .warmup import first_token
from .workload import ClassWorkload

__all__ = ["judge_prefix", "prefix_probe"]

#: The later students whose first questions follow the first one's.
LATER = 3
#: A difference smaller than this (ms) is never a finding, however quiet the server.
_LEAST_MS = 100.0
#: A difference must stand this many times clear of the noise seen.
_CLEAR = 2.0
#: The least noise assumed (ms): timer and scheduling jitter of a quiet machine.
_NOISE_FLOOR_MS = 20.0


def judge_prefix(short_ms: list[float], first_ms: float, later_ms: list[float]) -> PrefixCache:
    """The finding from the times to the first token (ms) of the short questions, the first
    student's and the later students' (see the module docstring)."""
    base = min(short_ms)
    noise = max(max(later_ms) - min(later_ms), max(short_ms) - base, _NOISE_FLOOR_MS)
    clear = max(_LEAST_MS, _CLEAR * noise)
    cost = first_ms - base  # what the lesson cost the first student
    reused: bool | None = None
    if cost < clear:
        reused = None  # the lesson costs this server too little to tell
    elif first_ms - max(later_ms) >= clear and max(later_ms) - base <= cost / 2:
        reused = True  # every later student started clearly sooner: the lesson was kept
    elif min(later_ms) - base >= 0.7 * cost:
        reused = False  # every later student paid most of the lesson again
    return PrefixCache(
        reused, round(first_ms, 1), round(statistics.median(later_ms), 1), round(noise, 1)
    )


async def prefix_probe(
    work: ClassWorkload, target: Target, bound_s: float
) -> tuple[bool, PrefixCache | None]:
    """The samples of the module docstring, one request at a time (also the warm-up).

    Returns whether the server answered the first request within ``bound_s``, and the
    finding (None when a request went unanswered).
    """
    short = work.short_payload(1)
    answered, first = await first_token(ChatConnection(target, short), bound_s)
    if first is None:
        return answered, None
    shorts = [first]
    lesson: list[float] = []
    for _i in range(1 + LATER):
        _answered, waited = await first_token(work.connect(target), bound_s)
        if waited is None:
            return True, None
        lesson.append(waited)
    _answered, again = await first_token(ChatConnection(target, short), bound_s)
    if again is not None:
        shorts.append(again)
    first_ms, *later_ms = (t * 1000 for t in lesson)
    return True, judge_prefix([t * 1000 for t in shorts], first_ms, later_ms)
