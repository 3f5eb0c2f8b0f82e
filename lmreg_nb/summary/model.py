"""The parts of the onboarding ``summary``: steps, checks, the contact, the models, go-live.

Every part is a frozen value with ``to_json`` (its record form, DESIGN.md
"Contract: records") and a tolerant ``from_json`` (records of any version).
Step names are :class:`StepName` members: a ``str`` enum, so the JSON keeps the
same strings. The :class:`~lmreg_nb.summary.Summary` holding them and the rules
deciding its verdicts import this module; it imports neither.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, get_args

from ..i18n import N_, _
from .fields import text_or_none, time_or_none

if TYPE_CHECKING:
    from ..models import RegisteredModel

__all__ = [
    "CAPACITY_STEP",
    "EXPECTED_STEPS",
    "SEVERITIES",
    "STATUSES",
    "STEP_LABELS",
    "Check",
    "Contact",
    "GoLive",
    "ModelRecord",
    "Phase",
    "Severity",
    "Status",
    "Step",
    "StepName",
    "step_label",
]

#: ``ok``: every step ran and every required check passed; ``failed``: a step or a
#: required check failed; ``incomplete``: a step has not run.
Status = Literal["ok", "failed", "incomplete"]
#: ``error`` fails the onboarding, ``warning`` should be fixed, ``info`` is for the record.
Severity = Literal["error", "warning", "info"]
STATUSES: tuple[Status, ...] = get_args(Status)
#: Severities, most serious first.
SEVERITIES: tuple[Severity, ...] = get_args(Severity)


class StepName(enum.StrEnum):
    """The onboarding's steps; the values are the identifiers the record keeps."""

    CONTACT_CARD = "contact card"
    TOKEN = "token"
    REGISTER = "register"
    MODIFY = "modify"
    LIST_MODELS = "list models"
    CHECKS = "chat endpoint checks"
    CHAT = "chat"
    CAPACITY = "capacity"
    PARAMETERS = "parameters"


#: The steps every onboarding runs (capacity too when a class size is given).
EXPECTED_STEPS: tuple[StepName, ...] = (
    StepName.CONTACT_CARD,
    StepName.TOKEN,
    StepName.REGISTER,
    StepName.LIST_MODELS,
    StepName.CHECKS,
)
CAPACITY_STEP = StepName.CAPACITY
#: Step names are identifiers in the JSON; these are the words people read.
STEP_LABELS: dict[StepName, str] = {
    StepName.CONTACT_CARD: N_("contact card"),
    StepName.TOKEN: N_("token"),
    StepName.REGISTER: N_("register the model"),
    StepName.MODIFY: N_("modify the model"),
    StepName.LIST_MODELS: N_("list the models"),
    StepName.CHECKS: N_("chat endpoint checks"),
    StepName.CHAT: N_("chat with the model"),
    StepName.CAPACITY: N_("capacity"),
    StepName.PARAMETERS: N_("the notebook's parameters"),
}
_STEP_NAMES = {s.value: s for s in StepName}


def step_label(name: str) -> str:
    """The readable, translated name of a step (unknown names as they are)."""
    known = _STEP_NAMES.get(str(name))
    return _(STEP_LABELS[known]) if known is not None else name


def _severity_of(value: Any) -> Severity:
    """A recorded severity; a missing or unknown one counts as ``error`` (the safe side)."""
    for severity in SEVERITIES:
        if value == severity:
            return severity
    return "error"


@dataclass(frozen=True)
class Check:
    """One check's outcome: a conformance or go-live check of the probe, or a function check."""

    name: str
    passed: bool
    severity: Severity
    detail: str

    def to_json(self) -> dict[str, Any]:
        """``{"name", "passed", "severity", "detail"}``."""
        return {
            "name": self.name,
            "passed": self.passed,
            "severity": self.severity,
            "detail": self.detail,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Check:
        """From its recorded JSON (missing values: empty, severity ``error``)."""
        return cls(
            name=str(data.get("name") or ""),
            passed=bool(data.get("passed")),
            severity=_severity_of(data.get("severity")),
            detail=str(data.get("detail") or ""),
        )


@dataclass(frozen=True)
class Step:
    """One step of the onboarding and how it went."""

    name: StepName
    passed: bool
    detail: str

    def __post_init__(self) -> None:
        # A plain string naming a step is taken (and checked: a typo raises ValueError).
        if not isinstance(self.name, StepName):
            object.__setattr__(self, "name", StepName(self.name))

    def to_json(self) -> dict[str, Any]:
        """``{"name", "passed", "detail"}``."""
        return {"name": self.name.value, "passed": self.passed, "detail": self.detail}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Step | None:
        """From its recorded JSON; None for a step this version does not know."""
        name = _STEP_NAMES.get(str(data.get("name")))
        if name is None:
            return None
        return cls(name, bool(data.get("passed")), str(data.get("detail") or ""))


@dataclass(frozen=True)
class Phase:
    """One of the three onboarding phases of spec section 1 (names are identifiers)."""

    name: str
    done: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        """``{"name", "done", "detail"}``."""
        return {"name": self.name, "done": self.done, "detail": self.detail}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Phase:
        """From its recorded JSON."""
        return cls(
            str(data.get("name") or ""), bool(data.get("done")), str(data.get("detail") or "")
        )


@dataclass(frozen=True)
class GoLive:
    """Whether the platform can go live with the model as registered, and what is in the way."""

    ready: bool
    blockers: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """``{"ready", "blockers"}``."""
        return {"ready": self.ready, "blockers": list(self.blockers)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GoLive:
        """From its recorded JSON."""
        blockers = data.get("blockers")
        listed = blockers if isinstance(blockers, list | tuple) else []
        return cls(ready=bool(data.get("ready")), blockers=[str(b) for b in listed])


@dataclass(frozen=True)
class Contact:
    """The school's contact for the local model: alerts about the model go here."""

    name: str
    mobile: str
    email: str

    def to_json(self) -> dict[str, str]:
        """The record's ``contact`` object."""
        return {"name": self.name, "mobile": self.mobile, "email": self.email}

    to_dict = to_json  # the name of the first release

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Contact:
        """From its recorded JSON (a missing value: empty)."""
        return cls(*(str(data.get(k) or "") for k in ("name", "mobile", "email")))


@dataclass(frozen=True)
class ModelRecord:
    """A registered model as the record keeps it: never its apiKey, not even masked."""

    model_name: str
    model_id: str = ""
    registry_url: str = ""
    create_time: datetime | None = None
    update_time: datetime | None = None

    @classmethod
    def of(cls, model: RegisteredModel) -> ModelRecord:
        """The record of a model the platform returned."""
        return cls(
            model.model_name,
            model.model_id,
            model.registry_url,
            model.create_time,
            model.update_time,
        )

    def to_json(self) -> dict[str, Any]:
        """``{"modelName", "modelId", "registryUrl", "createTime", "updateTime"}`` (ISO 8601)."""
        return {
            "modelName": self.model_name,
            "modelId": self.model_id,
            "registryUrl": self.registry_url,
            "createTime": self.create_time.isoformat() if self.create_time else None,
            "updateTime": self.update_time.isoformat() if self.update_time else None,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ModelRecord:
        """From its recorded JSON (an apiKey in it is ignored)."""
        return cls(
            model_name=text_or_none(data.get("modelName")) or "",
            model_id=text_or_none(data.get("modelId")) or "",
            registry_url=text_or_none(data.get("registryUrl")) or "",
            create_time=time_or_none(data.get("createTime")),
            update_time=time_or_none(data.get("updateTime")),
        )
