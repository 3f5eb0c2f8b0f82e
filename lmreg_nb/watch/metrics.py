"""Prometheus metrics of the watch, served on loopback (prometheus-client).

``lmreg_model_up{model}`` (1 when the last call passed, else 0),
``lmreg_model_latency_seconds{model}`` (the last call's latency; NaN after a
failed one), ``lmreg_model_failures_in_a_row{model}`` and
``lmreg_tls_days_left{model}`` (https models only), each also labelled
``model_id`` (two models of one name stay apart), ``school`` (the fleet's
school name; "" for one account) and ``run_id`` (the plan's row: two schools
whose platforms list one modelId, or two rows of one school name, stay apart;
"" for one account). ``lmreg_platform_up{school, run_id}`` is 1 when the
school's models were read in the last round, and
``lmreg_last_read_timestamp_seconds{school, run_id}`` when they last were. A model
removed or renamed loses its old series. The registry is the watch's own, not
the process-wide default.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Mapping
from typing import Any

from .alerts import ModelState, SchoolState

__all__ = ["METRIC_NAMES", "WatchMetrics"]

METRIC_NAMES = (
    "lmreg_model_up",
    "lmreg_model_latency_seconds",
    "lmreg_model_failures_in_a_row",
    "lmreg_tls_days_left",
    "lmreg_platform_up",
    "lmreg_last_read_timestamp_seconds",
)


class WatchMetrics:
    """The gauges, updated after each round, and their HTTP server."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Gauge

        self.registry = CollectorRegistry()
        labels = ["model", "model_id", "school", "run_id"]
        self.up = Gauge(
            "lmreg_model_up",
            "1 when the registered model's last call passed, else 0",
            labels,
            registry=self.registry,
        )
        self.latency = Gauge(
            "lmreg_model_latency_seconds",
            "Seconds of the last call (one short streamed chat); NaN after a failed call",
            labels,
            registry=self.registry,
        )
        self.fails = Gauge(
            "lmreg_model_failures_in_a_row",
            "Failed rounds in a row",
            labels,
            registry=self.registry,
        )
        self.tls = Gauge(
            "lmreg_tls_days_left",
            "Days until the TLS certificate of the registryUrl expires (https only)",
            labels,
            registry=self.registry,
        )
        self.platform_up = Gauge(
            "lmreg_platform_up",
            "1 when the school's models were read from the platform in the last round, else 0",
            ["school", "run_id"],
            registry=self.registry,
        )
        self.last_read = Gauge(
            "lmreg_last_read_timestamp_seconds",
            "When the school's models were last read from the platform (Unix time)",
            ["school", "run_id"],
            registry=self.registry,
        )
        self._labels: dict[str, tuple[str, str, str, str]] = {}  # key -> the labels in use
        self._server: Any = None

    def update(self, states: Iterable[ModelState], names: Mapping[str, str] | None = None) -> None:
        """Set every gauge from the models' states after a round; drop models gone.

        ``names``: school key (run_id) -> the school's name (the fleet).
        """
        states = list(states)
        seen = {
            s.key: (s.model_name, s.model_id, (names or {}).get(s.school, s.school), s.school)
            for s in states
        }
        for key, old in self._labels.items():  # first: a new model may take old labels
            if seen.get(key) != old:
                for gauge in (self.up, self.latency, self.fails, self.tls):
                    self._remove(gauge, old)
        self._labels = seen
        for state in states:
            labels = seen[state.key]
            passed = state.status == "up"
            self.up.labels(*labels).set(1 if passed else 0)
            latency = state.latency_s if passed and state.latency_s is not None else math.nan
            self.latency.labels(*labels).set(latency)
            self.fails.labels(*labels).set(state.fails)
            if state.tls_days is not None:
                self.tls.labels(*labels).set(state.tls_days)
            else:
                self._remove(self.tls, labels)

    def update_schools(
        self, schools: Iterable[SchoolState], names: Mapping[str, str] | None = None
    ) -> None:
        """Whether each school's models were read, and when they last were."""
        for school in schools:
            labels = ((names or {}).get(school.key, school.key), school.key)
            self.platform_up.labels(*labels).set(0 if school.blind else 1)
            if school.last_ok_ms is not None:
                self.last_read.labels(*labels).set(school.last_ok_ms / 1000)

    @staticmethod
    def _remove(gauge: Any, labels: tuple[str, ...]) -> None:
        with contextlib.suppress(KeyError):  # never set for these labels
            gauge.remove(*labels)

    def text(self) -> str:
        """The metrics as Prometheus scrapes them."""
        from prometheus_client import generate_latest

        return generate_latest(self.registry).decode()

    def serve(self, port: int, host: str = "127.0.0.1") -> int:
        """Serve /metrics on ``host`` (loopback); the port in use (``port`` 0: a free one)."""
        from prometheus_client import start_http_server

        server, _thread = start_http_server(port, addr=host, registry=self.registry)
        self._server = server
        return int(server.server_port)

    def close(self) -> None:
        """Stop serving."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
