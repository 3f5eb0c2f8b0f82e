"""A made-up onboarding summary (both languages) for the record's views: the principal's
page, the HTML and text records, the masker's structure tests."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from lmreg_nb.summary import (
    CapacityRecord,
    Check,
    Contact,
    ModelRecord,
    Step,
    Summary,
    build_summary,
)
from lmreg_nb.summary.performance import Performance

CHECKS = [
    Check("reachable", True, "error", "HTTP 200"),
    Check("stream", True, "error", "12 events"),
    Check("url-https", False, "warning", "plain http"),
    Check("url-public-host", False, "warning", "127.0.0.1 is loopback"),
    Check("usage-present", True, "warning", "usage.completion_tokens = 32"),
]
STEPS = [
    Step(name, True, "")
    for name in ("contact card", "token", "register", "list models", "chat endpoint checks")
]
URL = "http://127.0.0.1:8766/v1/chat/completions"
WHEN = datetime(2026, 9, 1, 6, 5, tzinfo=UTC)
CAPACITY = {
    "capacity": {"concurrency": 2, "requests_per_s": 3.1, "limited_by": "ttft"},
    "levels": [{"concurrency": 2, "meets_slo": True}, {"concurrency": 4, "meets_slo": False}],
    "verdict": "VERDICT-SENTENCE",
}


def demo_summary(lang: str, **changes: Any) -> Summary:
    """The demo school's summary in ``lang``, with ``changes`` to its build_summary values."""
    values: dict[str, Any] = {
        "school": "Demo Middle School",
        "contact": {"name": "Li Hua", "mobile": "13800138000", "email": "ai@demo.example"},
        "base_url": "http://127.0.0.1:8765",
        "env": "env-demo",
        "steps": [*STEPS, Step("capacity", True, "VERDICT-SENTENCE")],
        "models": [{"modelName": "demo-model", "modelId": "7", "registryUrl": URL}],
        "checks": CHECKS,
        "performance": {"requests": 1, "errors": 0, "ttft_ms": {"p50": 41.0, "p90": 41.0}},
        "capacity": CAPACITY,
        "class_size": 4,
        "lang": lang,
        "generated_at": WHEN,
        "target_urls": [URL],
    }
    values.update(changes)
    # The record's JSON shapes, read as the typed values build_summary takes.
    values["contact"] = values["contact"] and Contact.from_json(values["contact"])
    values["models"] = [ModelRecord.from_json(m) for m in values["models"]]
    values["capacity"] = values["capacity"] and CapacityRecord.from_json(values["capacity"])
    values["performance"] = Performance.from_json(values["performance"])
    return build_summary(**values)
