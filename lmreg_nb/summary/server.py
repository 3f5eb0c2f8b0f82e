"""The server's own figures over a run, shown beside the client's (``check --json``'s ``server``).

A client on a busy machine reads its own stalls as the server's latency; a server
that publishes what it measured itself (vLLM's Prometheus ``/metrics`` histograms,
llama.cpp's ``timings`` in each reply) tells the server's part. :class:`ServerFigures`
is that, typed: where it came from, over how many requests, the time to the first
token as the server saw it, and the share of prompt tokens its prefix cache served.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .fields import float_or_none, int_or_none, mapping_or_empty

__all__ = ["LLAMACPP_TIMINGS", "VLLM_METRICS", "ServerFigures", "ServerSource"]

ServerSource = Literal["vllm-metrics", "llamacpp-timings"]
VLLM_METRICS: ServerSource = "vllm-metrics"
LLAMACPP_TIMINGS: ServerSource = "llamacpp-timings"
_QUANTILES = ("p50", "p90", "p99")


@dataclass(frozen=True)
class ServerFigures:
    """What the server measured itself while the toolkit measured it.

    ``ttft_ms``: p50/p90/p99 of the time to the first token (ms) as the server saw it;
    from a histogram (``bucketed``) each is the upper bound of its bucket ("at most").
    ``prefix_cache_hit_share``: of the prompt tokens the server looked up in its prefix
    cache during the run, the share it found there (None: not published).
    """

    source: ServerSource
    requests: int
    ttft_ms: Mapping[str, float | None]
    bucketed: bool = False
    prefix_cache_hit_share: float | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"source", "requests", "ttft_ms": {p50, p90, p99}, "bucketed",
        "prefix_cache_hit_share"}``."""
        return {
            "source": self.source,
            "requests": self.requests,
            "ttft_ms": {q: self.ttft_ms.get(q) for q in _QUANTILES},
            "bucketed": self.bucketed,
            "prefix_cache_hit_share": self.prefix_cache_hit_share,
        }

    @classmethod
    def from_json(cls, data: Any) -> ServerFigures | None:
        """From its JSON (None: none recorded, or not one of the known sources)."""
        found = mapping_or_empty(data)
        source = found.get("source")
        if source not in (VLLM_METRICS, LLAMACPP_TIMINGS):
            return None
        ttft = mapping_or_empty(found.get("ttft_ms"))
        share = float_or_none(found.get("prefix_cache_hit_share"))
        return cls(
            source=VLLM_METRICS if source == VLLM_METRICS else LLAMACPP_TIMINGS,
            requests=max(0, int_or_none(found.get("requests")) or 0),
            ttft_ms={q: float_or_none(ttft.get(q)) for q in _QUANTILES},
            bucketed=found.get("bucketed") is True,
            prefix_cache_hit_share=min(1.0, max(0.0, share)) if share is not None else None,
        )
