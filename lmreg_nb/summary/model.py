"""The onboarding ``summary``'s types: one typed object the notebook records and readers use.

:meth:`Summary.from_json` reads records written by any version, including older
ones without ``status``/``go_live`` (decided again by :mod:`.rules`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..i18n import N_, _

__all__ = [
    "CAPACITY_STEP",
    "EXPECTED_STEPS",
    "STEP_LABELS",
    "Check",
    "GoLive",
    "Step",
    "Summary",
    "step_label",
]

EXPECTED_STEPS = ("contact card", "token", "register", "list models", "chat endpoint checks")
CAPACITY_STEP = "capacity"
#: Step names are identifiers in the JSON; these are the words people read.
STEP_LABELS = {
    "contact card": N_("contact card"),
    "token": N_("token"),
    "register": N_("register the model"),
    "modify": N_("modify the model"),
    "list models": N_("list the models"),
    "chat endpoint checks": N_("chat endpoint checks"),
    "chat": N_("chat with the model"),
    "capacity": N_("capacity"),
    "parameters": N_("the notebook's parameters"),
}
_MODEL_KEYS = ("modelName", "modelId", "registryUrl", "createTime", "updateTime")


def step_label(name: str) -> str:
    """The readable, translated name of a step (unknown names as they are)."""
    return _(STEP_LABELS[name]) if name in STEP_LABELS else name


@dataclass(frozen=True)
class Check:
    """One check's outcome (probe or go-live check)."""

    name: str
    passed: bool
    severity: str
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "passed": self.passed,
            "severity": self.severity,
            "detail": self.detail,
        }

    @classmethod
    def from_json(cls, data: Any) -> Check:
        """From a dict, or any object with name/passed/severity/detail (a probe CheckResult)."""
        return cls(
            name=str(_get(data, "name") or ""),
            passed=bool(_get(data, "passed")),
            severity=str(_get(data, "severity") or "error"),
            detail=str(_get(data, "detail") or ""),
        )


@dataclass(frozen=True)
class Step:
    """One step of the onboarding and how it went."""

    name: str
    passed: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "detail": self.detail}

    @classmethod
    def from_json(cls, data: Any) -> Step:
        return cls(
            name=str(_get(data, "name") or ""),
            passed=bool(_get(data, "passed")),
            detail=str(_get(data, "detail") or ""),
        )


@dataclass(frozen=True)
class GoLive:
    """Whether the platform can go live with the model as registered, and what is in the way."""

    ready: bool
    blockers: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"ready": self.ready, "blockers": list(self.blockers)}

    @classmethod
    def from_json(cls, data: Any) -> GoLive:
        blockers = _get(data, "blockers") or []
        return cls(ready=bool(_get(data, "ready")), blockers=[str(b) for b in blockers])


@dataclass
class Summary:
    """The onboarding ``summary`` record (never holds an apiKey)."""

    school: str
    contact: dict[str, str] | None
    base_url: str | None
    env: str | None
    steps: list[Step]
    models: list[dict[str, Any]]
    checks: list[Check]
    performance: dict[str, Any] | None = None
    capacity: dict[str, Any] | None = None
    status: str = "incomplete"
    go_live: GoLive = field(default_factory=lambda: GoLive(False, []))
    lang: str | None = None
    generated_at: datetime | None = None
    phases: list[dict[str, Any]] = field(default_factory=list)
    class_size: int | None = None

    # -- readers' helpers ----------------------------------------------------
    @property
    def failed_checks(self) -> list[Check]:
        """Checks of severity error that failed."""
        return [c for c in self.checks if not c.passed and c.severity == "error"]

    @property
    def warnings(self) -> list[Check]:
        """Checks of severity warning that failed (they do not fail the onboarding)."""
        return [c for c in self.checks if not c.passed and c.severity == "warning"]

    @property
    def failed_steps(self) -> list[Step]:
        return [s for s in self.steps if not s.passed]

    @property
    def reason(self) -> str:
        """The first failed step or required check, in one line; "" when none failed."""
        for step in self.failed_steps:
            return f"{step_label(step.name)}: {_one_line(step.detail)}"
        for check in self.failed_checks:
            return f"{check.name}: {_one_line(check.detail)}"
        return ""

    # -- JSON ----------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """The record's JSON form (DESIGN.md, records contract)."""
        when = self.generated_at
        return {
            "school": self.school,
            "contact": dict(self.contact) if self.contact is not None else None,
            "base_url": self.base_url,
            "env": self.env,
            "phases": [dict(p) for p in self.phases],
            "steps": [s.to_json() for s in self.steps],
            "models": [dict(m) for m in self.models],
            "checks": [c.to_json() for c in self.checks],
            "performance": dict(self.performance) if self.performance is not None else None,
            "capacity": dict(self.capacity) if self.capacity is not None else None,
            "class_size": self.class_size,
            "status": self.status,
            "go_live": self.go_live.to_json(),
            "lang": self.lang,
            "generated_at": when.isoformat(timespec="seconds") if when else None,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Summary:
        """Read a recorded summary; older records lack status/go_live/lang/capacity."""
        steps = [Step.from_json(s) for s in _list(data.get("steps")) if isinstance(s, Mapping)]
        checks = [Check.from_json(c) for c in _list(data.get("checks")) if isinstance(c, Mapping)]
        models = [_model_dict(m) for m in _list(data.get("models")) if isinstance(m, Mapping)]
        class_size = _int_or_none(data.get("class_size"))
        capacity = data.get("capacity") if isinstance(data.get("capacity"), Mapping) else None
        from .rules import decide

        status, go_live = decide(
            steps,
            checks,
            model_urls=[str(m.get("registryUrl") or "") for m in models],
            capacity=capacity,
            class_size=class_size,
        )
        recorded = data.get("status")
        if recorded in ("ok", "failed", "incomplete"):
            status = str(recorded)
        if isinstance(data.get("go_live"), Mapping):
            go_live = GoLive.from_json(data["go_live"])
        contact = data.get("contact")
        return cls(
            school=str(data.get("school") or ""),
            contact=_contact_dict(contact),
            base_url=_str_or_none(data.get("base_url")),
            env=_str_or_none(data.get("env")),
            steps=steps,
            models=models,
            checks=checks,
            performance=dict(data["performance"])
            if isinstance(data.get("performance"), Mapping)
            else None,
            capacity=dict(capacity) if capacity is not None else None,
            status=status,
            go_live=go_live,
            lang=_str_or_none(data.get("lang")),
            generated_at=_parse_time(data.get("generated_at")),
            phases=[dict(p) for p in _list(data.get("phases")) if isinstance(p, Mapping)],
            class_size=class_size,
        )


def _model_dict(model: Any) -> dict[str, Any]:
    data = dict(model) if isinstance(model, Mapping) else model.summary()
    # The record never holds an apiKey, not even masked.
    return {k: data.get(k) for k in _MODEL_KEYS}


def _contact_dict(contact: Any) -> dict[str, str] | None:
    if contact is None:
        return None
    if isinstance(contact, Mapping):
        return {k: str(contact.get(k, "")) for k in ("name", "mobile", "email")}
    return {k: str(getattr(contact, k, "")) for k in ("name", "mobile", "email")}


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, Mapping) else getattr(item, key, None)


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


def _one_line(text: str) -> str:
    return " ".join(str(text).split()).rstrip(".")


def _str_or_none(value: Any) -> str | None:
    return None if value in (None, "") else str(value)


def _int_or_none(value: Any) -> int | None:
    try:
        return None if value is None or isinstance(value, bool) else int(value)
    except (TypeError, ValueError):
        return None


def _parse_time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not value:
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)
