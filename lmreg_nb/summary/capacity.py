"""The summary's ``capacity``: the capacity search as recorded (``capacity.schema.json``).

The JSON is the capacity command's object (``slo``, ``levels``, ``capacity``,
``need``, ``workload``, ``prefix_cache``) plus the verdict sentence and the class
size it was judged against.
The probe's :class:`~lmreg_nb.probe.load.capacity.CapacityResult` makes it
(:meth:`CapacityRecord.from_json` of its ``to_json``); the summary is core, so
it keeps a typed copy of its own rather than the probe's objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .client import ClientLag
from .fields import float_or_none, int_or_none, list_of, mapping_or_empty, text_or_none
from .workload import PrefixCache, Workload

__all__ = ["CapacityLevel", "CapacityRecord", "CapacitySLO", "Percentiles"]


@dataclass(frozen=True)
class Percentiles:
    """``{"p50", "p90", "p99"}`` of a measure, in milliseconds (None: nothing measured)."""

    p50: float | None = None
    p90: float | None = None
    p99: float | None = None

    def to_json(self) -> dict[str, float | None]:
        """``{"p50", "p90", "p99"}``."""
        return {"p50": self.p50, "p90": self.p90, "p99": self.p99}

    @classmethod
    def from_json(cls, data: Any) -> Percentiles:
        """From its JSON (anything that is no object: nothing measured)."""
        found = mapping_or_empty(data)
        return cls(*(float_or_none(found.get(k)) for k in ("p50", "p90", "p99")))


@dataclass(frozen=True)
class CapacitySLO:
    """What a level must meet: TTFT p90, optionally ITL p90 and longest-pause p90, and an
    error rate."""

    ttft_ms: float | None = None
    itl_ms: float | None = None
    max_error_rate: float | None = None
    #: The longest pause in the middle of a reply (p90 over replies); None: not held to it.
    pause_ms: float | None = None

    def to_json(self) -> dict[str, float | None]:
        """``{"ttft_ms", "itl_ms", "pause_ms", "max_error_rate"}``."""
        return {
            "ttft_ms": self.ttft_ms,
            "itl_ms": self.itl_ms,
            "pause_ms": self.pause_ms,
            "max_error_rate": self.max_error_rate,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CapacitySLO:
        """From its JSON."""
        keys = ("ttft_ms", "itl_ms", "max_error_rate", "pause_ms")
        return cls(*(float_or_none(data.get(k)) for k in keys))


@dataclass(frozen=True)
class CapacityLevel:
    """One concurrency level measured and whether it met the SLO."""

    concurrency: int
    requests: int = 0
    errors: int = 0
    ttft_ms: Percentiles = field(default_factory=Percentiles)
    itl_ms: Percentiles = field(default_factory=Percentiles)
    latency_ms: Percentiles = field(default_factory=Percentiles)
    requests_per_s: float | None = None
    output_tokens_per_s: float | None = None
    meets_slo: bool = False
    #: p90 over the level's replies of each one's longest pause between two content tokens.
    longest_pause_ms: float | None = None

    def to_json(self) -> dict[str, Any]:
        """The contract's level object."""
        return {
            "concurrency": self.concurrency,
            "requests": self.requests,
            "errors": self.errors,
            "ttft_ms": self.ttft_ms.to_json(),
            "itl_ms": self.itl_ms.to_json(),
            "latency_ms": self.latency_ms.to_json(),
            "requests_per_s": self.requests_per_s,
            "output_tokens_per_s": self.output_tokens_per_s,
            "longest_pause_ms": self.longest_pause_ms,
            "meets_slo": self.meets_slo,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CapacityLevel:
        """From its JSON (a missing count: 0)."""
        return cls(
            concurrency=int_or_none(data.get("concurrency")) or 0,
            requests=int_or_none(data.get("requests")) or 0,
            errors=int_or_none(data.get("errors")) or 0,
            ttft_ms=Percentiles.from_json(data.get("ttft_ms")),
            itl_ms=Percentiles.from_json(data.get("itl_ms")),
            latency_ms=Percentiles.from_json(data.get("latency_ms")),
            requests_per_s=float_or_none(data.get("requests_per_s")),
            output_tokens_per_s=float_or_none(data.get("output_tokens_per_s")),
            meets_slo=bool(data.get("meets_slo")),
            longest_pause_ms=float_or_none(data.get("longest_pause_ms")),
        )


@dataclass(frozen=True)
class CapacityRecord:
    """The capacity found (JSON ``capacity``), how it was measured, and the verdict."""

    #: The largest level within the SLO (JSON ``capacity.concurrency``); None: not recorded.
    concurrency: int | None = None
    requests_per_s: float | None = None
    output_tokens_per_s: float | None = None
    #: What stops the server from serving more ("ttft", "errors", "need-met", ...).
    limited_by: str | None = None
    slo: CapacitySLO = field(default_factory=CapacitySLO)
    levels: list[CapacityLevel] = field(default_factory=list)
    need: int | None = None
    #: The sentence for people: the capacity against the class size.
    verdict: str = ""
    class_size: int | None = None
    #: What each chat sent (None: a record made before workloads were recorded).
    workload: Workload | None = None
    #: Whether the server reused the shared lesson (None: not measured).
    prefix_cache: PrefixCache | None = None
    #: The client's own event-loop stalls while it searched (None: not measured).
    client: ClientLag | None = None
    #: How much longer than the server's its first-token times may read because of those
    #: stalls, when they could have moved a level's p90 past its margin (JSON
    #: ``client.may_read_longer_ms``; None: they could not).
    may_read_longer_ms: float | None = None

    def to_json(self) -> dict[str, Any]:
        """The capacity command's object plus ``verdict`` and ``class_size`` (and
        ``prefix_cache`` and ``client`` when the search measured them)."""
        found = {
            "slo": self.slo.to_json(),
            "levels": [lv.to_json() for lv in self.levels],
            "capacity": {
                "concurrency": self.concurrency,
                "requests_per_s": self.requests_per_s,
                "output_tokens_per_s": self.output_tokens_per_s,
                "limited_by": self.limited_by,
            },
            "need": self.need,
            "workload": self.workload.to_json() if self.workload is not None else None,
            "verdict": self.verdict,
            "class_size": self.class_size,
        }
        if self.prefix_cache is not None:
            found["prefix_cache"] = self.prefix_cache.to_json()
        if self.client is not None:
            found["client"] = {
                **self.client.to_json(),
                "may_read_longer_ms": _rounded(self.may_read_longer_ms),
            }
        return found

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CapacityRecord:
        """From its JSON (the capacity command's object, with or without the verdict)."""
        found = mapping_or_empty(data.get("capacity"))
        return cls(
            concurrency=int_or_none(found.get("concurrency")),
            requests_per_s=float_or_none(found.get("requests_per_s")),
            output_tokens_per_s=float_or_none(found.get("output_tokens_per_s")),
            limited_by=text_or_none(found.get("limited_by")),
            slo=CapacitySLO.from_json(mapping_or_empty(data.get("slo"))),
            levels=[CapacityLevel.from_json(lv) for lv in list_of(data.get("levels"))],
            need=int_or_none(data.get("need")),
            verdict=str(data.get("verdict") or ""),
            class_size=int_or_none(data.get("class_size")),
            workload=Workload.from_json(data.get("workload")),
            prefix_cache=PrefixCache.from_json(data.get("prefix_cache")),
            client=ClientLag.from_json(data.get("client")),
            may_read_longer_ms=float_or_none(
                mapping_or_empty(data.get("client")).get("may_read_longer_ms")
            ),
        )


def _rounded(ms: float | None) -> float | None:
    return None if ms is None else round(ms, 1)
