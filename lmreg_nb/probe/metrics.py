"""Figures of one request and of many: latency, time to first token, inter-token latency.

Definitions (all in milliseconds, from the client's side):

- latency: from sending the request to the end of the reply;
- TTFT: from sending to the first chunk with non-empty content (a role-only
  first chunk does not count);
- ITL: the gaps between consecutive content chunks (a load test pools every
  gap of every request);
- output tokens: ``usage.completion_tokens`` when the server reports it,
  otherwise the number of content chunks (``tokens_source`` says which);
- tokens/s: output tokens divided by the latency.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .exchange import Exchange

__all__ = ["percentile", "percentiles", "request_metrics"]


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) by linear interpolation; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def percentiles(values: Sequence[float], qs: Sequence[int] = (50, 90, 99)) -> dict[str, Any]:
    """``{"p50": ..., "p90": ..., "p99": ...}`` rounded to 0.001 (None when empty)."""
    out: dict[str, Any] = {}
    ordered = sorted(values)
    for q in qs:
        value = percentile(ordered, q)
        out[f"p{q}"] = None if value is None else round(value, 3)
    return out


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 3)


def request_metrics(ex: Exchange) -> dict[str, Any]:
    """The figures of one request (a row of the load test's table)."""
    gaps = [g * 1000 for g in ex.gaps]
    tokens, source = ex.output_tokens
    latency = ex.latency
    return {
        "status": ex.status,
        "ok": ex.ok,
        "error": ex.failure,
        "latency_ms": _ms(latency),
        "ttft_ms": _ms(ex.ttft),
        "itl_mean_ms": round(sum(gaps) / len(gaps), 3) if gaps else None,
        "itl_p50_ms": _round(percentile(gaps, 50)),
        "itl_p90_ms": _round(percentile(gaps, 90)),
        "output_tokens": tokens,
        "tokens_source": source,
        "chunks": len(ex.pieces),
        "tokens_per_s": round(tokens / latency, 3) if latency and tokens else None,
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
