"""The probe's figures as one value: a load test's, or the checks' one streamed request's.

The JSON is ``check --json``'s ``summary`` object (check.schema.json, ``$defs/performance``:
``requests``, ``errors``, ``ttft_ms``, ``first_answer_ms``, ``itl_ms``, ``latency_ms``
(each ``{"p50", "p90", "p99"}``), ``requests_per_s``, ``output_tokens_per_s``) . The
record's ``performance`` is the same object plus ``load_test``: whether the figures come
from a load test or from one request, so that no view states a rate nobody measured.
:meth:`Performance.from_json` reads either once, at the edge.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .capacity import Percentiles
from .client import ClientLag
from .fields import float_or_none, int_or_none, mapping_or_empty

__all__ = ["Performance"]


@dataclass(frozen=True)
class Performance:
    """Requests, errors, first-token, answer, between-token and whole-reply times, rates."""

    requests: int = 0
    errors: int = 0
    ttft_ms: Percentiles = field(default_factory=Percentiles)
    #: The first token of the answer, thinking excluded (None: a record made before it).
    first_answer_ms: Percentiles | None = field(default_factory=Percentiles)
    itl_ms: Percentiles = field(default_factory=Percentiles)
    latency_ms: Percentiles = field(default_factory=Percentiles)
    requests_per_s: float | None = None
    output_tokens_per_s: float | None = None
    #: True: a load test's figures; False: the checks' one streamed request (no rates).
    load_test: bool = True
    #: The client's own stalls while it measured (None: not measured).
    client: ClientLag | None = None

    @property
    def reasoning_apart(self) -> bool:
        """The first answer token came later than the first token (a model that reasons)."""
        return self.first_answer_ms is not None and self.first_answer_ms != self.ttft_ms

    def to_record(self) -> dict[str, Any]:
        """The record's ``performance``: :meth:`to_json` and ``load_test``."""
        return {**self.to_json(), "load_test": self.load_test}

    def to_json(self) -> dict[str, Any]:
        """``check --json``'s ``summary`` object (``client`` when it was measured)."""
        found: dict[str, Any] = {
            "requests": self.requests,
            "errors": self.errors,
            "ttft_ms": self.ttft_ms.to_json(),
            "itl_ms": self.itl_ms.to_json(),
            "latency_ms": self.latency_ms.to_json(),
            "requests_per_s": self.requests_per_s,
            "output_tokens_per_s": self.output_tokens_per_s,
        }
        if self.first_answer_ms is not None:
            found["first_answer_ms"] = self.first_answer_ms.to_json()
        if self.client is not None:
            found["client"] = self.client.to_json()
        return found

    @classmethod
    def from_json(cls, data: Any) -> Performance | None:
        """From its JSON (None: nothing recorded). A record made before ``load_test`` was
        kept tells one request by its count of 1."""
        found = mapping_or_empty(data)
        if not found:
            return None
        requests = int_or_none(found.get("requests")) or 0
        load_test = found.get("load_test")
        answer = found.get("first_answer_ms")
        return cls(
            requests=requests,
            errors=int_or_none(found.get("errors")) or 0,
            ttft_ms=Percentiles.from_json(found.get("ttft_ms")),
            first_answer_ms=Percentiles.from_json(answer) if answer is not None else None,
            itl_ms=Percentiles.from_json(found.get("itl_ms")),
            latency_ms=Percentiles.from_json(found.get("latency_ms")),
            requests_per_s=float_or_none(found.get("requests_per_s")),
            output_tokens_per_s=float_or_none(found.get("output_tokens_per_s")),
            load_test=load_test if isinstance(load_test, bool) else requests != 1,
            client=ClientLag.from_json(found.get("client")),
        )
