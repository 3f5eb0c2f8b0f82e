"""When a capacity level may end: its verdict is settled, so more requests would not change it.

The rule, for one level of C chats in a closed loop. The SLO holds several
figures, each a p90 over the level's requests: the first token (TTFT), and when
the SLO judges the replies' pace, the time between tokens (ITL) and the longest
pause in a reply. For each figure, each request is classified as soon as that
is known:

- *fast*: within the limit. For the pace and the pause only a whole reply is
  ever fast: a class is served only on replies seen to the end;
- *slow*: over the limit. *Certain* when nothing later can change it: a first
  token past the SLO (or none yet and already past it), a finished reply's pace
  or pause over the limit, a pause already longer than the limit in a reply still
  running (a pause only grows). A running reply whose pace so far, after
  ``PACE_SEEN_S`` of streaming, is over the limit is slow but not certain: that
  is how it is judged if the level ends now (:mod:`lmreg_nb.probe.load.samples`);
- *unknown*: not known yet (a running reply younger than ``PACE_SEEN_S`` is not
  counted in the pace and the pause at all: cut then, it is judged on its first
  token only);
- an *error* (failed, cut, stalled): judged apart, by its share against
  ``max_error_rate``.

A figure is within the SLO when its p90 is, i.e. when fewer than 10 % of its
requests are slow. With ``m`` requests, the number of them faster than the
true p90 is Binomial(m, 0.9); so, whatever the distribution of the times, the
k-th fastest request is an upper bound of the true p90 with probability
``P(B <= k - 1)``, and the j-th fastest a lower bound with probability
``P(B >= j)`` (distribution-free order-statistic bounds, as for a median's
confidence interval). With ``confidence`` = 0.9:

- **clearly inside**: for every figure, the upper bound is fast even when every
  unknown request is counted as slow (at least k fast requests). With no slow
  request at all that takes 22 requests; it never happens by luck of a few;
- **clearly outside**: for one figure, the lower bound is slow even when every
  unknown request is counted as fast (fewer than j fast-or-unknown), or the
  errors so far already exceed ``max_error_rate`` of the most requests the level
  can count;
- **certainly outside**, before the floor too: for one figure, more requests
  certainly slow or failed than the most requests the level can count could ever
  outweigh, ``(10 % + max_error_rate) x most + 2`` (the 2 for the interpolated
  p90). A lesson's first burst on a queue-bound server settles there seconds
  after the SLO instead of after two requests per chat;
- never before the **floor** (``requests_per_worker`` finished per chat: each
  chat's second request was due when its first ended, so the level is seen
  past its first burst); except that the pace and the pause may be judged
  clearly outside once every chat has *shown* its pace (a reply finished, or
  streaming for ``PACE_SEEN_S``, or already paused too long): a server that
  decodes too slowly for reading shows it long before its first replies end.
  The level always ends at the **ceiling** of finished requests or its **time
  cap**, where the data decide as they are.

A level that is settled "inside" cannot be judged outside by the requests that
are then cut (they were counted as slow), nor one settled "outside" be judged
inside. Between the two (a p90 near the SLO) the level runs to its ceiling:
that is where more requests are worth their time.

Counting every running reply as slow means that C chats always hold C unknowns,
and a level within the SLO could never be clearly inside before its ceiling (at
4 chats, 74 whole replies; the ceiling is 40). So a level that would be clearly
inside were its running replies fast (:func:`hopeful`) **holds**: it sends no
new request, lets the running ones end whole, and is judged again with none
unknown; clearly inside then, it ends; if not, it sends again
(:mod:`lmreg_nb.probe.load.level_run`). A reply that began less than
``PACE_SEEN_S`` ago is, as before, no unknown of the pace: cut at the end, it
counts by its first token only.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

from .samples import PACE_SEEN_S

__all__ = [
    "CONFIDENCE",
    "PACE_SEEN_S",
    "QUANTILE",
    "Measure",
    "Tally",
    "hopeful",
    "rank_bounds",
    "settled",
]

#: The percentile the SLO is about (p90) and the confidence of the bounds on it.
QUANTILE = 0.9
CONFIDENCE = 0.9
#: Above this many requests the binomial is replaced by its normal approximation.
_EXACT_UP_TO = 1000


@dataclass(frozen=True)
class Measure:
    """The requests of one figure (the pace, the pause), classified."""

    fast: int = 0
    slow: int = 0
    unknown: int = 0
    certain: int = 0  # of the slow, those nothing later can make fast

    @property
    def counted(self) -> int:
        """Requests whose outcome will count in this figure's p90."""
        return self.fast + self.slow + self.unknown


@dataclass(frozen=True)
class Tally:
    """A level's requests so far, classified (see the module docstring).

    ``fast``, ``slow``, ``unknown`` and ``late`` (the certain slow) are the first
    token's; ``pace`` and ``pause`` the replies' (None: the SLO does not judge them).
    """

    fast: int = 0
    slow: int = 0
    unknown: int = 0
    errors: int = 0
    finished: int = 0  # requests that ended (fast, slow or failed), for the floor and ceiling
    #: Of the slow, those whose first token came past the SLO or that waited past it without
    #: one (slow by their time between tokens alone they are not).
    late: int = 0
    pace: Measure | None = None
    pause: Measure | None = None
    shown: int = 0  # chats that have shown their pace (see the module docstring)

    @property
    def counted(self) -> int:
        """Requests whose first token will count (all but the errors are in the p90)."""
        return self.fast + self.slow + self.unknown

    @property
    def ttft(self) -> Measure:
        """The first token's classification as a :class:`Measure`."""
        return Measure(self.fast, self.slow, self.unknown, self.late)

    def measures(self) -> list[tuple[str, Measure]]:
        """Each figure the SLO judges, by name."""
        found = [("ttft", self.ttft)]
        found += [(name, m) for name, m in (("pace", self.pace), ("pause", self.pause)) if m]
        return found


@functools.lru_cache(maxsize=2048)
def rank_bounds(m: int, q: float = QUANTILE, confidence: float = CONFIDENCE) -> tuple[int, int]:
    """``(j, k)``: the j-th and k-th fastest of ``m`` requests bound the true q-quantile.

    ``P(X_(j) <= p_q) >= confidence`` and ``P(X_(k) >= p_q) >= confidence``
    (ranks from 1). ``j`` is 0 and ``k`` is ``m + 1`` where ``m`` requests are
    too few for that bound.
    """
    if m <= 0:
        return 0, 1
    if m > _EXACT_UP_TO:
        return _normal_bounds(m, q, confidence)
    logs = [
        math.lgamma(m + 1)
        - math.lgamma(i + 1)
        - math.lgamma(m - i + 1)
        + i * math.log(q)
        + (m - i) * math.log1p(-q)
        for i in range(m + 1)
    ]
    j, k, cdf = 0, m + 1, 0.0  # cdf = P(B <= i - 1) before adding i
    for i in range(m + 1):
        if i >= 1 and 1.0 - cdf >= confidence:  # P(B >= i) = 1 - P(B <= i - 1)
            j = i
        cdf += math.exp(logs[i])
        if k == m + 1 and cdf >= confidence:  # P(B <= i) >= confidence: X_(i+1) bounds above
            k = i + 1
    return j, k


def _normal_bounds(m: int, q: float, confidence: float) -> tuple[int, int]:
    z = _z(confidence)
    mean, sd = m * q, math.sqrt(m * q * (1 - q))
    k = math.ceil(mean + z * sd + 0.5) + 1
    j = math.floor(mean - z * sd - 0.5)
    return max(j, 0), min(k, m + 1)


def _z(confidence: float) -> float:
    """The standard normal quantile (bisection on erf: no scipy needed)."""
    low, high = 0.0, 10.0
    for _ in range(60):
        mid = (low + high) / 2
        if 0.5 * (1 + math.erf(mid / math.sqrt(2))) < confidence:
            low = mid
        else:
            high = mid
    return high


def settled(
    tally: Tally,
    *,
    floor: int,
    most: int,
    max_error_rate: float,
    confidence: float = CONFIDENCE,
    chats: int | None = None,
) -> bool | None:
    """True: clearly inside the SLO; False: clearly outside; None: not settled yet.

    ``floor``: finished requests before any verdict; ``most``: the most
    requests the level can count (its ceiling and the chats in flight), which
    bounds how far more requests could dilute the errors so far; ``chats``: the
    level's concurrency, for the pace shown by every chat.
    """
    if tally.errors > max_error_rate * most:
        return False  # even a level run to its ceiling without another error stays over
    measures = tally.measures()
    for _name, m in measures:
        if m.certain + tally.errors >= (1 - QUANTILE + max_error_rate) * most + 2:
            # Certainly slow or failed beyond what the most requests the level can count
            # could outweigh (a slow request may still fail: either share is then over).
            return False
    floor_met = tally.finished >= floor
    shown = chats is not None and tally.shown >= chats
    for name, m in measures:
        if not (floor_met or (shown and name != "ttft")) or m.counted == 0:
            continue
        j, _k = rank_bounds(m.counted, QUANTILE, confidence)
        if j >= 1 and m.fast + m.unknown < j:
            return False
    if not floor_met or tally.counted == 0:
        return None
    errors_within = tally.errors <= max_error_rate * (tally.errors + tally.counted)
    for _name, m in measures:
        k = rank_bounds(m.counted, QUANTILE, confidence)[1] if m.counted else 1
        if not (k <= m.counted and m.fast >= k):
            return None
    return True if errors_within else None


def hopeful(tally: Tally) -> Tally:
    """``tally`` with every unknown request counted as fast: what the level would be if
    the replies still running all ended within the SLO (the hold's question)."""

    def fast(m: Measure | None) -> Measure | None:
        return None if m is None else replace(m, fast=m.fast + m.unknown, unknown=0)

    return replace(
        tally,
        fast=tally.fast + tally.unknown,
        unknown=0,
        pace=fast(tally.pace),
        pause=fast(tally.pause),
    )
