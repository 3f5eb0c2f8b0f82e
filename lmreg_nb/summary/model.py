"""The parts of the onboarding ``summary``: steps, checks, the contact, the models, go-live.

Every part is a frozen value with ``to_json`` (its record form, as
lmreg_nb/schemas/summary.schema.json names it) and a tolerant ``from_json`` (records of any
version).
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
    "OWNERS",
    "SEVERITIES",
    "STATUSES",
    "STEP_LABELS",
    "Check",
    "Contact",
    "Fact",
    "GoLive",
    "ModelRecord",
    "Obstacle",
    "Owner",
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


#: Who acts on a finding: the school's IT staff, or the provider (its account, its platform).
Owner = Literal["school", "provider"]
OWNERS: tuple[Owner, ...] = get_args(Owner)
#: One fact a check found (a count, a status, an address, a quote): what its words are made of.
Fact = str | int | float | bool | None


def _facts_of(value: Any) -> dict[str, Fact]:
    """Recorded facts: a JSON object of plain values (anything else is dropped)."""
    if not isinstance(value, Mapping):
        return {}
    return {
        str(k): v for k, v in value.items() if v is None or isinstance(v, str | int | float | bool)
    }


@dataclass(frozen=True)
class Check:
    """One check's outcome: a conformance or go-live check of the probe, or a function check.

    ``passed`` None: not judged (the answer it would be judged on never came: a path
    that serves nothing says nothing of the key); it counts as neither passed nor failed.
    ``cause`` names the finding (a stable identifier, e.g. ``chat-path``), ``owner`` who
    acts on it and ``facts`` the values its words and its fix are made of (the corrected
    address, the longest prompt answered...): views read these, never the ``detail``,
    which is the finding in words (made once, by :mod:`lmreg_nb.probe.text`).
    """

    name: str
    passed: bool | None
    severity: Severity
    detail: str = ""
    cause: str | None = None
    owner: Owner | None = None
    facts: Mapping[str, Fact] = field(default_factory=dict, hash=False)

    @property
    def failed(self) -> bool:
        """Judged and not passed (a check not judged has not failed)."""
        return self.passed is False

    @property
    def judged(self) -> bool:
        """Passed or failed (False: not judged)."""
        return self.passed is not None

    def fact(self, key: str) -> Fact:
        """One of :attr:`facts` (None when the check has no such fact)."""
        return self.facts.get(key)

    def to_json(self) -> dict[str, Any]:
        """``{"name", "passed", "severity", "detail"}``: the contract's check object
        (``check --json``)."""
        return {
            "name": self.name,
            "passed": self.passed,
            "severity": self.severity,
            "detail": self.detail,
        }

    def to_record(self) -> dict[str, Any]:
        """The record's check: :meth:`to_json` and ``"cause"``, ``"owner"``, ``"facts"``, so
        that every view of a record reads the finding as data, never from its words."""
        return {
            **self.to_json(),
            "cause": self.cause,
            "owner": self.owner,
            "facts": dict(self.facts),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Check:
        """From its recorded JSON (missing values: empty, severity ``error``)."""
        passed = data.get("passed")
        owner = data.get("owner")
        return cls(
            name=str(data.get("name") or ""),
            passed=passed if passed is None else bool(passed),
            severity=_severity_of(data.get("severity")),
            detail=str(data.get("detail") or ""),
            cause=text_or_none(data.get("cause")),
            owner=owner if owner in OWNERS else None,
            facts=_facts_of(data.get("facts")),
        )


@dataclass(frozen=True)
class Step:
    """One step of the onboarding and how it went.

    ``skipped_after``: the step did not run because that earlier step failed (a headless
    run stops at its first failure); it is neither done nor missing, and its cause is the
    failed step's, named there.
    """

    name: StepName
    passed: bool
    detail: str
    skipped_after: StepName | None = None

    def __post_init__(self) -> None:
        # A plain string naming a step is taken (and checked: a typo raises ValueError).
        if not isinstance(self.name, StepName):
            object.__setattr__(self, "name", StepName(self.name))
        after = self.skipped_after
        if after is not None and not isinstance(after, StepName):
            object.__setattr__(self, "skipped_after", StepName(after))

    @property
    def skipped(self) -> bool:
        """Not run because an earlier step failed."""
        return self.skipped_after is not None

    @property
    def failed(self) -> bool:
        """Ran and failed (a skipped step did not fail: the step before it did)."""
        return not self.passed and not self.skipped

    def to_json(self) -> dict[str, Any]:
        """``{"name", "passed", "detail"}`` and, for a skipped step, ``"skipped_after"``."""
        found: dict[str, Any] = {
            "name": self.name.value,
            "passed": self.passed,
            "detail": self.detail,
        }
        if self.skipped_after is not None:
            found["skipped_after"] = self.skipped_after.value
        return found

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Step | None:
        """From its recorded JSON; None for a step this version does not know."""
        name = _STEP_NAMES.get(str(data.get("name")))
        if name is None:
            return None
        after = _STEP_NAMES.get(str(data.get("skipped_after")))
        passed = bool(data.get("passed")) and after is None
        return cls(name, passed, str(data.get("detail") or ""), after)


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
class Obstacle:
    """One thing in the way of go-live, as a fact: its cause, who acts on it, its data.

    ``cause`` is a stable identifier (``unreachable-host``, ``plain-http``, a failed
    check's cause such as ``chat-path`` or ``server-down``, ``step-failed``,
    ``step-missing``, ``capacity-below-class``, ``capacity-not-measured``);
    ``facts`` hold what its words and its fix are made of (the address to register,
    the capacity and the class size, the checks that failed for it...).
    """

    cause: str
    owner: Owner
    facts: Mapping[str, Fact] = field(default_factory=dict, hash=False)

    def to_json(self) -> dict[str, Any]:
        """``{"cause", "owner", "facts"}``."""
        return {"cause": self.cause, "owner": self.owner, "facts": dict(self.facts)}

    @classmethod
    def from_json(cls, data: Any) -> Obstacle | None:
        """From its recorded JSON; None when it names no cause."""
        if not isinstance(data, Mapping) or not data.get("cause"):
            return None
        owner = data.get("owner")
        return cls(
            str(data["cause"]),
            owner if owner in OWNERS else "school",
            _facts_of(data.get("facts")),
        )


@dataclass(frozen=True)
class GoLive:
    """Whether the platform can go live with the model as registered, and what is in the way:
    ``obstacles`` as facts (cause, owner, data), ``blockers`` the same in words, one each."""

    ready: bool
    blockers: list[str] = field(default_factory=list)
    obstacles: list[Obstacle] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """``{"ready", "blockers", "obstacles"}``."""
        return {
            "ready": self.ready,
            "blockers": list(self.blockers),
            "obstacles": [o.to_json() for o in self.obstacles],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GoLive:
        """From its recorded JSON (a record made before obstacles were kept has none)."""
        blockers = data.get("blockers")
        listed = blockers if isinstance(blockers, list | tuple) else []
        found = data.get("obstacles")
        obstacles = [Obstacle.from_json(o) for o in found] if isinstance(found, list) else []
        return cls(
            ready=bool(data.get("ready")),
            blockers=[str(b) for b in listed],
            obstacles=[o for o in obstacles if o is not None],
        )


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
