"""The server's own figures: vLLM's Prometheus ``/metrics``, or llama.cpp's ``timings``.

vLLM serves ``GET /metrics`` beside ``/v1`` (Prometheus text): the histogram
``vllm:time_to_first_token_seconds`` and the counters ``vllm:prefix_cache_queries``
and ``vllm:prefix_cache_hits`` (tokens). Two readings, before and after a run,
give what the server measured over the run (:func:`figures_between`). A server's
answer is untrusted: the read is bounded in bytes and time, parsed by
prometheus-client's parser, and a value that is not a finite, non-negative number
is dropped; anything else than this shape gives no figures, never an error.

llama.cpp's server puts ``timings`` in each reply (its last stream chunk, or the
body): ``prompt_ms`` is its prompt processing, the server's part of the time to
the first token, and ``cache_n`` the prompt tokens it took from its cache
(:func:`llamacpp_figures`).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import httpx

from ..._decode import DecodingError, ainflated
from ...summary.server import LLAMACPP_TIMINGS, VLLM_METRICS, ServerFigures
from ..target import Target
from .reply import Reply

__all__ = ["MAX_METRICS_BYTES", "MetricsReading", "figures_between", "llamacpp_figures",
           "metrics_url", "parse_metrics", "read_metrics"]  # fmt: skip

#: The most of a /metrics answer that is read (vLLM's is about 60 KB).
MAX_METRICS_BYTES = 2 * 1024 * 1024
QUANTILES = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))
#: The longest a /metrics read may take (s): a server without one must not hold the checks.
READ_S = 3.0
_TTFT = "vllm:time_to_first_token_seconds"
_HITS = "vllm:prefix_cache_hits"
_QUERIES = "vllm:prefix_cache_queries"


@dataclass
class MetricsReading:
    """The figures of one /metrics answer, summed over the label sets (engines, models)."""

    ttft_buckets: dict[float, float] = field(default_factory=dict)  # le (s) -> cumulative count
    ttft_count: float = 0.0
    prefix_hits: float | None = None
    prefix_queries: float | None = None

    @property
    def empty(self) -> bool:
        return not self.ttft_buckets and self.prefix_queries is None


def metrics_url(chat_url: str) -> str | None:
    """``/metrics`` at the server's root, beside ``.../v1/chat/completions``."""
    base = chat_url.partition("?")[0].rstrip("/")
    if not base.endswith("/v1/chat/completions"):
        return None
    return base[: -len("/v1/chat/completions")] + "/metrics"


def _number(value: float) -> float | None:
    return value if math.isfinite(value) and value >= 0 else None


def parse_metrics(text: str) -> MetricsReading | None:
    """The vLLM figures in a Prometheus text answer; None when it holds none (or is no
    Prometheus text at all)."""
    from prometheus_client.parser import text_string_to_metric_families

    found = MetricsReading()
    try:
        for family in text_string_to_metric_families(text):
            if family.name not in (_TTFT, _HITS, _QUERIES):
                continue
            for sample in family.samples:
                value = _number(float(sample.value))
                if value is None:
                    continue
                if sample.name == _TTFT + "_bucket":
                    le = float(sample.labels.get("le", "nan"))
                    if not math.isnan(le):
                        found.ttft_buckets[le] = found.ttft_buckets.get(le, 0.0) + value
                elif sample.name == _TTFT + "_count":
                    found.ttft_count += value
                elif sample.name == _HITS + "_total":
                    found.prefix_hits = (found.prefix_hits or 0.0) + value
                elif sample.name == _QUERIES + "_total":
                    found.prefix_queries = (found.prefix_queries or 0.0) + value
    except (ValueError, TypeError, KeyError, IndexError):
        return None  # not Prometheus text: no figures
    return None if found.empty else found


async def read_metrics(client: httpx.AsyncClient, target: Target) -> MetricsReading | None:
    """GET /metrics (with the key, which vLLM does not ask for there); None when there is
    none, it is not vLLM's, or it does not come whole within the target's timeout."""
    url = metrics_url(target.url)
    if url is None:
        return None
    raw = bytearray()
    try:
        async with (
            asyncio.timeout(min(target.timeout, READ_S)),
            client.stream("GET", url, headers=target.headers()) as reply,
        ):
            if reply.status_code != 200:
                return None
            if "text/plain" not in reply.headers.get("content-type", ""):
                return None
            async for chunk in ainflated(reply, MAX_METRICS_BYTES):
                raw += chunk
                if len(raw) > MAX_METRICS_BYTES:
                    return None
    except (httpx.HTTPError, httpx.InvalidURL, TimeoutError, DecodingError):
        return None
    return parse_metrics(raw.decode("utf-8", "replace"))


def _quantile(buckets: dict[float, float], count: float, q: float) -> float | None:
    """The upper bound (ms) of the bucket holding quantile ``q`` (None: +Inf, or no data)."""
    if count <= 0:
        return None
    for le in sorted(buckets):
        if buckets[le] >= q * count:
            return le * 1000.0 if math.isfinite(le) else None
    return None


def figures_between(
    before: MetricsReading | None, after: MetricsReading | None
) -> ServerFigures | None:
    """What the server measured between two readings (None: nothing, or counters that went
    backwards: a restart in between)."""
    if before is None or after is None:
        return None
    count = after.ttft_count - before.ttft_count
    buckets = {le: after.ttft_buckets[le] - before.ttft_buckets.get(le, 0.0)
               for le in after.ttft_buckets}  # fmt: skip
    if count < 0 or any(v < 0 for v in buckets.values()):
        return None
    share = None
    if None not in (after.prefix_queries, before.prefix_queries, after.prefix_hits,
                    before.prefix_hits):  # fmt: skip
        queries = (after.prefix_queries or 0.0) - (before.prefix_queries or 0.0)
        hits = (after.prefix_hits or 0.0) - (before.prefix_hits or 0.0)
        if queries > 0 and 0 <= hits <= queries:
            share = round(hits / queries, 4)
    if count <= 0 and share is None:
        return None
    return ServerFigures(
        source=VLLM_METRICS,
        requests=round(count),
        ttft_ms={q: _quantile(buckets, count, p) for q, p in QUANTILES},
        bucketed=True,
        prefix_cache_hit_share=share,
    )


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)], 1)


def llamacpp_figures(replies: Sequence[Reply]) -> ServerFigures | None:
    """The server's own times from llama.cpp's ``timings`` of these replies (None: none
    carried them)."""
    timed = [r.timings for r in replies if r.timings is not None and "prompt_ms" in r.timings]
    if not timed:
        return None
    prompt_ms = [one["prompt_ms"] for one in timed]
    cached = sum(one.get("cache_n", 0.0) for one in timed)
    looked_up = cached + sum(one.get("prompt_n", 0.0) for one in timed)
    share = round(cached / looked_up, 4) if "cache_n" in timed[0] and looked_up > 0 else None
    return ServerFigures(
        source=LLAMACPP_TIMINGS,
        requests=len(timed),
        ttft_ms={q: _percentile(prompt_ms, p) for q, p in QUANTILES},
        prefix_cache_hit_share=share,
    )
