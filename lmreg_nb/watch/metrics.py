"""Prometheus metrics of the watch, served on loopback (prometheus-client).

``lmreg_model_up{model}`` (1 when the last call passed, else 0),
``lmreg_model_latency_seconds{model}`` (the last call's latency; NaN after a
failed one), ``lmreg_model_failures_in_a_row{model}`` and
``lmreg_tls_days_left{model}`` (https models only). The label is the
modelName; a model removed or renamed loses its old series. The registry is
the watch's own, not the process-wide default.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable
from typing import Any

from .alerts import ModelState

__all__ = ["METRIC_NAMES", "WatchMetrics"]

METRIC_NAMES = (
    "lmreg_model_up",
    "lmreg_model_latency_seconds",
    "lmreg_model_failures_in_a_row",
    "lmreg_tls_days_left",
)


class WatchMetrics:
    """The four gauges, updated after each round, and their HTTP server."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Gauge

        self.registry = CollectorRegistry()
        labels = ["model"]
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
        self._names: dict[str, str] = {}  # modelId -> the label in use
        self._server: Any = None

    def update(self, states: Iterable[ModelState]) -> None:
        """Set every gauge from the models' states after a round; drop models gone."""
        states = list(states)
        seen = {state.model_id: state.model_name for state in states}
        for model_id, old in self._names.items():  # first: a new model may take an old name
            if seen.get(model_id) != old:
                for gauge in (self.up, self.latency, self.fails, self.tls):
                    self._remove(gauge, old)
        self._names = seen
        for state in states:
            name = state.model_name
            passed = state.status == "up"
            self.up.labels(name).set(1 if passed else 0)
            latency = state.latency_s if passed and state.latency_s is not None else math.nan
            self.latency.labels(name).set(latency)
            self.fails.labels(name).set(state.fails)
            if state.tls_days is not None:
                self.tls.labels(name).set(state.tls_days)
            else:
                self._remove(self.tls, name)

    @staticmethod
    def _remove(gauge: Any, name: str) -> None:
        with contextlib.suppress(KeyError):  # never set for this name
            gauge.remove(name)

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
