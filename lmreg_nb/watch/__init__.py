"""Monitoring after go-live: `lmreg-nb watch` calls every registered model, alerts, recovers.

What it does for whom: the README ("After go-live"); its exit codes and settings:
docs/reference.md. The pieces, each with one job:
``call`` (one call of a model, the adapter over the probe package), ``rounds``
(every model at once, one pool), ``alerts`` (when to alert: pure functions),
``messages`` (what an alert says), ``notify`` (Apprise targets), ``state``
(SQLite), ``metrics`` (Prometheus), ``status_html`` (the page), ``watcher``
(the loop) and ``monitor`` (the notebook's plain functions).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ModelState",
    "Monitor",
    "NotifyTarget",
    "ProbeResult",
    "StateStore",
    "WatchConfig",
    "Watcher",
    "default_state_path",
    "parse_targets",
    "probe_model",
]

_LAZY = {
    "Monitor": "monitor",
    "ModelState": "alerts",
    "NotifyTarget": "notify",
    "ProbeResult": "call",
    "StateStore": "state",
    "WatchConfig": "watcher",
    "Watcher": "watcher",
    "default_state_path": "state",
    "parse_targets": "notify",
    "probe_model": "call",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
