"""Figures of one request and of many: latency, time to first token, inter-token latency.

Definitions (all in milliseconds, from the client's side):

- latency: from sending the request to the end of the reply;
- TTFT: from sending to the first chunk with a non-empty token of any kind, a
  reasoning model's thinking (``reasoning_content``) included (a role-only
  first chunk does not count);
- first answer: from sending to the first non-empty content, thinking
  excluded: what students wait for before the answer starts. For a model that
  does not reason it equals TTFT;
- ITL: a request's decode time over its tokens, (last content - first
  content) / (tokens - 1), from that request's own arrival times; exact even
  when several chunks arrive in one network read (their gaps read as 0 ms,
  which made a pooled median of gaps fall to ~0 on a busy machine). A load
  test's ITL percentiles are over these per-request values;
- longest pause: a reply's longest gap between two content tokens (what a
  student waits in the middle of an answer); for a reply still running, the wait
  since its last token counts as a gap too;
- output tokens: ``usage.completion_tokens`` when the server reports a believable
  one (at most four tokens per chunk received), otherwise the number of content
  chunks (``tokens_source`` says which). SSE comments (``: ping``) are no tokens;
- tokens/s: output tokens divided by the latency.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..wire.exchange import Exchange

__all__ = [
    "RequestRow",
    "decode_itl_ms",
    "failed_row",
    "longest_pause_ms",
    "percentile",
    "percentiles",
    "request_metrics",
]


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) by linear interpolation; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def percentiles(
    values: Sequence[float], qs: Sequence[int] = (50, 90, 99)
) -> dict[str, float | None]:
    """``{"p50": ..., "p90": ..., "p99": ...}`` rounded to 0.001 (None when empty)."""
    out: dict[str, float | None] = {}
    ordered = sorted(values)
    for q in qs:
        value = percentile(ordered, q)
        out[f"p{q}"] = None if value is None else round(value, 3)
    return out


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 3)


@dataclass(slots=True)
class RequestRow:
    """The figures of one request: a row of the load test's table (ms, tokens, seconds).

    ``cut`` is how a reply ended early (``"closed"``, ``"done"``: see
    :func:`~lmreg_nb.probe.load.samples.cut_kind`); ``resent``: sent again after a kept-alive
    connection closed under it; ``start_s``/``end_s``: from the load test's start;
    ``client_stall_ms``: how long our own event loop stalled before the first token
    (None: not measured).
    """

    status: int | None
    ok: bool
    error: str | None
    latency_ms: float | None
    ttft_ms: float | None
    first_answer_ms: float | None
    itl_mean_ms: float | None
    itl_p50_ms: float | None
    itl_p90_ms: float | None
    longest_pause_ms: float | None
    output_tokens: int
    tokens_source: str
    chunks: int
    tokens_per_s: float | None
    cut: str | None = None
    finish: bool = False
    resent: bool = False
    usage_disbelieved: bool = False
    request: int = 0
    start_s: float = 0.0
    end_s: float = 0.0
    client_stall_ms: float | None = None
    client_stalled: bool | None = None

    def to_json(self) -> dict[str, Any]:
        """The row as a table's columns (a DataFrame row)."""
        return asdict(self)


def failed_row(
    error: str, *, request: int = 0, start_s: float = 0.0, end_s: float = 0.0
) -> RequestRow:
    """The row of a request that failed before it measured anything (``error`` says why)."""
    return RequestRow(
        status=None,
        ok=False,
        error=error,
        latency_ms=None,
        ttft_ms=None,
        first_answer_ms=None,
        itl_mean_ms=None,
        itl_p50_ms=None,
        itl_p90_ms=None,
        longest_pause_ms=None,
        output_tokens=0,
        tokens_source="chunks",
        chunks=0,
        tokens_per_s=None,
        request=request,
        start_s=round(start_s, 6),
        end_s=round(end_s, 6),
    )


def request_metrics(ex: Exchange) -> RequestRow:
    """The figures of one request (a row of the load test's table)."""
    gaps = [g * 1000 for g in ex.gaps]
    tokens, source = ex.output_tokens
    latency = ex.latency
    return RequestRow(
        status=ex.status,
        ok=ex.ok,
        error=ex.failure,
        latency_ms=_ms(latency),
        ttft_ms=_ms(ex.ttft),
        first_answer_ms=_ms(ex.first_answer),
        itl_mean_ms=_round(decode_itl_ms(ex)),
        itl_p50_ms=_round(percentile(gaps, 50)),
        itl_p90_ms=_round(percentile(gaps, 90)),
        longest_pause_ms=_round(longest_pause_ms(ex.times)),
        output_tokens=tokens,
        tokens_source=source,
        chunks=len(ex.pieces),
        tokens_per_s=round(tokens / latency, 3) if latency and tokens else None,
    )


def decode_itl_ms(ex: Exchange) -> float | None:
    """The request's inter-token latency: decode time / (tokens - 1), in ms."""
    times = ex.times
    tokens, source = ex.output_tokens
    # usage counts a reasoning model's thinking too, which came before the first content.
    count = tokens if source == "usage" and not ex.reasoning_chars else len(times)
    if len(times) < 2 or count < 2:
        return None
    return (times[-1] - times[0]) / (count - 1) * 1000


def longest_pause_ms(times: Sequence[float], now: float | None = None) -> float | None:
    """The longest gap between two content tokens (ms); ``now``: the reply still runs, and
    the wait since its last token counts. None: fewer than two tokens and no ``now``."""
    gaps = [b - a for a, b in itertools.pairwise(times)]
    if now is not None and times:
        gaps.append(max(0.0, now - times[-1]))
    return max(gaps) * 1000 if gaps else None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
