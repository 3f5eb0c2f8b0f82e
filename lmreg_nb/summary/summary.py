"""The onboarding ``summary``: one typed object the notebook records and every reader uses.

:func:`build_summary` makes it from what happened (deciding ``status`` and
``go_live`` with :mod:`.rules`); :meth:`Summary.from_json` reads a recorded one
once, at the edge, and the object travels from there: the renderers, the run's
report and the batch's overview take it as it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..i18n import _
from ..models import RegisteredModel
from .capacity import CapacityRecord
from .client import ClientLag
from .fields import int_or_none, list_of, one_line, text_or_none, time_or_none
from .model import (
    STATUSES,
    Check,
    Contact,
    GoLive,
    ModelRecord,
    Phase,
    Status,
    Step,
    step_label,
)
from .performance import Performance
from .rules import decide, phases
from .server import ServerFigures
from .workload import Workload

__all__ = ["Summary", "build_summary"]


@dataclass
class Summary:
    """The onboarding ``summary`` record (never holds an apiKey)."""

    school: str
    contact: Contact | None
    base_url: str | None
    env: str | None
    steps: list[Step]
    models: list[ModelRecord]
    checks: list[Check]
    #: The probe's figures (``check --json``'s ``summary`` object), when it measured any.
    performance: Performance | None = None
    capacity: CapacityRecord | None = None
    status: Status = "incomplete"
    go_live: GoLive = field(default_factory=lambda: GoLive(False, []))
    lang: str | None = None
    generated_at: datetime | None = None
    phases: list[Phase] = field(default_factory=list)
    class_size: int | None = None
    #: What the load test sent (``check --json``'s ``workload``); the capacity has its own.
    workload: Workload | None = None
    #: The toolkit's own stalls while the checks measured (``check --json``'s ``client``).
    client: ClientLag | None = None
    #: What the server measured itself meanwhile (``check --json``'s ``server``).
    server: ServerFigures | None = None

    # -- readers' helpers ----------------------------------------------------
    @property
    def failed_checks(self) -> list[Check]:
        """Checks of severity error that failed."""
        return [c for c in self.checks if c.failed and c.severity == "error"]

    @property
    def warnings(self) -> list[Check]:
        """Checks of severity warning that failed (they do not fail the onboarding)."""
        return [c for c in self.checks if c.failed and c.severity == "warning"]

    @property
    def failed_steps(self) -> list[Step]:
        """Steps that failed."""
        return [s for s in self.steps if s.failed]

    @property
    def reason(self) -> str:
        """The first failed step or required check, in one line; "" when none failed."""
        for step in self.failed_steps:
            # A template: Chinese puts "：" after the step's name ("联系人信息：…").
            return _("{step}: {detail}").format(
                step=step_label(step.name), detail=one_line(step.detail)
            )
        for check in self.failed_checks:
            return f"{check.name}: {one_line(check.detail)}"
        return ""

    # -- JSON ----------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """The record's JSON form (lmreg_nb/schemas/summary.schema.json)."""
        when = self.generated_at
        return {
            "school": self.school,
            "contact": self.contact.to_json() if self.contact is not None else None,
            "base_url": self.base_url,
            "env": self.env,
            "phases": [p.to_json() for p in self.phases],
            "steps": [s.to_json() for s in self.steps],
            "models": [m.to_json() for m in self.models],
            "checks": [c.to_record() for c in self.checks],
            "performance": self.performance.to_record() if self.performance else None,
            "workload": self.workload.to_json() if self.workload is not None else None,
            "client": self.client.to_json() if self.client is not None else None,
            "server": self.server.to_json() if self.server is not None else None,
            "capacity": self.capacity.to_json() if self.capacity is not None else None,
            "class_size": self.class_size,
            "status": self.status,
            "go_live": self.go_live.to_json(),
            "lang": self.lang,
            "generated_at": when.isoformat(timespec="seconds") if when else None,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Summary:
        """Read a recorded summary of any version (older ones lack status/go_live/lang/capacity).

        The recorded verdicts are kept; only a record without them has them decided again.
        """
        steps = [s for s in map(Step.from_json, list_of(data.get("steps"))) if s is not None]
        checks = [Check.from_json(c) for c in list_of(data.get("checks"))]
        models = [ModelRecord.from_json(m) for m in list_of(data.get("models"))]
        class_size = int_or_none(data.get("class_size"))
        found = data.get("capacity")
        capacity = CapacityRecord.from_json(found) if isinstance(found, Mapping) and found else None
        recorded = data.get("status")
        status = next((s for s in STATUSES if s == recorded), None)
        found_go_live = data.get("go_live")
        go_live = GoLive.from_json(found_go_live) if isinstance(found_go_live, Mapping) else None
        if status is None or go_live is None or not (go_live.obstacles or go_live.ready):
            decided, decided_go_live = decide(
                steps,
                checks,
                model_urls=[m.registry_url for m in models],
                capacity=capacity,
                class_size=class_size,
            )
            if status is None or go_live is None:
                status, go_live = status or decided, go_live or decided_go_live
            else:
                # A record made before obstacles were kept: its blockers as recorded, and
                # the same causes as facts, for the views that read them (principal's page).
                go_live = GoLive(go_live.ready, go_live.blockers, decided_go_live.obstacles)
        contact = data.get("contact")
        return cls(
            school=str(data.get("school") or ""),
            contact=Contact.from_json(contact) if isinstance(contact, Mapping) else None,
            base_url=text_or_none(data.get("base_url")),
            env=text_or_none(data.get("env")),
            steps=steps,
            models=models,
            checks=checks,
            performance=Performance.from_json(data.get("performance")),
            capacity=capacity,
            status=status,
            go_live=go_live,
            lang=text_or_none(data.get("lang")),
            generated_at=time_or_none(data.get("generated_at")),
            phases=[Phase.from_json(p) for p in list_of(data.get("phases"))],
            class_size=class_size,
            workload=Workload.from_json(data.get("workload")),
            client=ClientLag.from_json(data.get("client")),
            server=ServerFigures.from_json(data.get("server")),
        )


def build_summary(
    *,
    school: str,
    contact: Contact | None,
    base_url: str | None,
    env: str | None,
    steps: Iterable[Step],
    models: Iterable[ModelRecord | RegisteredModel],
    checks: Iterable[Check],
    performance: Performance | None = None,
    capacity: CapacityRecord | None = None,
    class_size: int | None = None,
    lang: str | None = None,
    generated_at: datetime | None = None,
    target_urls: Sequence[str] | None = None,
    workload: Workload | None = None,
    client: ClientLag | None = None,
    server: ServerFigures | None = None,
) -> Summary:
    """Make the summary from what happened, deciding status and go_live.

    ``target_urls`` are the registryUrls the platform will call (the registered
    model); without them every listed model's URL is judged.
    """
    step_list, check_list = list(steps), list(checks)
    model_list = [m if isinstance(m, ModelRecord) else ModelRecord.of(m) for m in models]
    urls = list(target_urls) if target_urls is not None else [m.registry_url for m in model_list]
    size = class_size if class_size and class_size > 0 else None
    status, go_live = decide(
        step_list, check_list, model_urls=urls, capacity=capacity, class_size=size
    )
    return Summary(
        school=school,
        contact=contact,
        base_url=str(base_url) if base_url else None,
        env=env,
        steps=step_list,
        models=model_list,
        checks=check_list,
        performance=performance,
        capacity=capacity,
        status=status,
        go_live=go_live,
        lang=lang,
        generated_at=generated_at or datetime.now(UTC),
        phases=phases(step_list, go_live),
        class_size=size,
        workload=workload,
        client=client,
        server=server,
    )
