"""What operators plug into the watch's metrics: a Grafana dashboard and Prometheus rules
(docs/monitoring/). Every metric and label they name exists as the watch serves it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from lmreg_nb.watch.alerts import ModelState, SchoolState
from lmreg_nb.watch.metrics import METRIC_NAMES, WatchMetrics

DOCS = Path(__file__).resolve().parents[2] / "docs" / "monitoring"
METRIC = re.compile(r"\blmreg_[a-z_]+\b")
MODEL_LABELS = {"model", "model_id", "school", "run_id"}
SCHOOL_LABELS = {"school", "run_id"}


def _served() -> str:
    metrics = WatchMetrics()
    up = ModelState("m1", "qwen", status="up", latency_s=0.2, tls_days=9, school="a", key="a/m1")
    metrics.update([up], {"a": "School A"})
    metrics.update_schools([SchoolState("a", "School A", last_ok_ms=1_790_000_000_000)],
                           {"a": "School A"})  # fmt: skip
    return metrics.text()


def _labels_of(name: str) -> set[str]:
    return SCHOOL_LABELS if name.startswith(("lmreg_platform", "lmreg_last_read")) else MODEL_LABELS


def _check(expr: str, where: str) -> set[str]:
    names = set(METRIC.findall(expr))
    assert names, f"{where}: no lmreg metric in {expr!r}"
    assert names <= set(METRIC_NAMES), f"{where}: unknown {names - set(METRIC_NAMES)}"
    allowed = set.intersection(*(_labels_of(n) for n in names))
    used = set(re.findall(r"(\w+)\s*=~?", expr.split("{", 1)[-1])) if "{" in expr else set()
    for group in re.findall(r"by \(([^)]*)\)", expr):
        used |= {g.strip() for g in group.split(",")}
    assert used <= allowed, f"{where}: labels {used - allowed} not on {names}"
    return names


def test_the_dashboard_names_only_metrics_the_watch_serves() -> None:
    dashboard = json.loads((DOCS / "grafana-dashboard.json").read_text(encoding="utf-8"))
    served = _served()
    named: set[str] = set()
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            named |= _check(target["expr"], panel["title"])
            legend = set(re.findall(r"\{\{(\w+)\}\}", target.get("legendFormat", "")))
            assert legend <= MODEL_LABELS, (panel["title"], legend)
    assert named == set(METRIC_NAMES)  # every metric has a panel
    for name in named:
        assert f"# TYPE {name} gauge" in served
    (school,) = [v for v in dashboard["templating"]["list"] if v["name"] == "school"]
    _check(school["query"]["query"].replace("label_values(", "").rstrip(")"), "school")


def test_the_alerting_rules_name_only_metrics_and_labels_that_exist() -> None:
    rules = yaml.safe_load((DOCS / "prometheus-rules.yml").read_text(encoding="utf-8"))
    (group,) = rules["groups"]
    alerts = {rule["alert"]: rule for rule in group["rules"]}
    assert {"LmregModelDown", "LmregPlatformBlind", "LmregTlsCertificateExpiresSoon",
            "LmregStaleReads"} <= set(alerts)  # fmt: skip
    for name, rule in alerts.items():
        names = _check(rule["expr"], name)
        assert rule["labels"]["severity"] in ("critical", "warning") and rule["for"]
        text = rule["annotations"]["summary"] + rule["annotations"]["description"]
        labels = set(re.findall(r"\$labels\.(\w+)", text))
        assert labels <= set.intersection(*(_labels_of(n) for n in names)), (name, labels)
