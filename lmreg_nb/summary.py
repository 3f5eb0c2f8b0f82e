"""The onboarding ``summary``: one typed object the notebook records and every reader uses.

:func:`build_summary` is the one place that decides ``status`` and ``go_live``
(DESIGN.md, "Contract: records"); :meth:`Summary.from_json` reads records
written by any version, including older ones without ``status``/``go_live``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from .i18n import N_, _, ngettext
from .validate import url_warnings

__all__ = [
    "EXPECTED_STEPS",
    "Check",
    "GoLive",
    "Step",
    "Summary",
    "build_summary",
    "decide",
]

#: The steps of a complete onboarding, in order; "capacity" joins them when class_size > 0.
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

    #: Older callers use ``to_dict``.
    to_dict = to_json

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


def build_summary(
    *,
    school: str,
    contact: Mapping[str, str] | Any | None,
    base_url: str | None,
    env: str | None,
    steps: Iterable[Step | Mapping[str, Any]],
    models: Iterable[Any],
    checks: Iterable[Any],
    performance: Mapping[str, Any] | None = None,
    capacity: Mapping[str, Any] | None = None,
    class_size: int | None = None,
    lang: str | None = None,
    generated_at: datetime | None = None,
    target_urls: Sequence[str] | None = None,
) -> Summary:
    """Make the summary from what happened, deciding status and go_live.

    ``target_urls`` are the registryUrls the platform will call (the registered
    model); without them every listed model's URL is judged.
    """
    step_list = [s if isinstance(s, Step) else Step.from_json(s) for s in steps]
    check_list = [c if isinstance(c, Check) else Check.from_json(c) for c in checks]
    model_list = [_model_dict(m) for m in models]
    urls = (
        list(target_urls)
        if target_urls is not None
        else [str(m.get("registryUrl") or "") for m in model_list]
    )
    size = class_size if class_size and class_size > 0 else None
    status, go_live = decide(
        step_list, check_list, model_urls=urls, capacity=capacity, class_size=size
    )
    return Summary(
        school=school,
        contact=_contact_dict(contact),
        base_url=str(base_url) if base_url else None,
        env=env,
        steps=step_list,
        models=model_list,
        checks=check_list,
        performance=dict(performance) if performance is not None else None,
        capacity=dict(capacity) if capacity is not None else None,
        status=status,
        go_live=go_live,
        lang=lang,
        generated_at=generated_at or datetime.now(UTC),
        phases=_phases(step_list, go_live),
        class_size=size,
    )


def decide(
    steps: Sequence[Step],
    checks: Sequence[Check],
    *,
    model_urls: Sequence[str] = (),
    capacity: Mapping[str, Any] | None = None,
    class_size: int | None = None,
) -> tuple[str, GoLive]:
    """The one rule for ``status`` and ``go_live`` (DESIGN.md, records contract)."""
    expected = list(EXPECTED_STEPS) + ([CAPACITY_STEP] if class_size else [])
    ran = {s.name for s in steps}
    missing = [name for name in expected if name not in ran]
    failed_steps = [s for s in steps if not s.passed]
    failed_checks = [c for c in checks if not c.passed and c.severity == "error"]
    if failed_steps or failed_checks:
        status = "failed"
    elif missing or not steps:
        status = "incomplete"
    else:
        status = "ok"
    blockers: list[str] = []
    for step in failed_steps:
        blockers.append(
            _("Step “{step}” failed: {detail}. Fix it and run the onboarding again.").format(
                step=step_label(step.name), detail=_one_line(step.detail)
            )
        )
    if missing:
        blockers.append(
            ngettext(
                "Step not done yet: {steps}. Run it.",
                "Steps not done yet: {steps}. Run them.",
                len(missing),
            ).format(steps=", ".join(f"“{step_label(n)}”" for n in missing))
        )
    blockers += _url_blockers(model_urls, checks)
    blockers += _check_blockers(failed_checks)
    blockers += _capacity_blockers(capacity, class_size)
    return status, GoLive(ready=not blockers, blockers=_unique(blockers))


def _url_blockers(urls: Sequence[str], checks: Sequence[Check]) -> list[str]:
    blockers: list[str] = []
    unreachable = plain = False
    for url in urls:
        if not url:
            continue
        host = _host(url)
        for warning in url_warnings(url):
            code = _code(warning)
            if code == "unreachable-host":
                unreachable = True
                blockers.append(
                    _(
                        "The platform cannot reach {host} (registryUrl {url}): register an "
                        "address it can reach over the internet."
                    ).format(host=host, url=url)
                )
            elif code == "plain-http":
                plain = True
                blockers.append(
                    _(
                        "registryUrl {url} uses plain http: serve the model over https so the "
                        "apiKey is not sent in clear."
                    ).format(url=url)
                )
    by_name = {c.name: c for c in checks}
    host_check = by_name.get("url-public-host")
    if not unreachable and host_check is not None and not host_check.passed:
        # A public-looking name may still resolve to a private address: the check sees it.
        blockers.append(
            _("The platform cannot reach the model's host: {detail}").format(
                detail=_one_line(host_check.detail)
            )
        )
    https_check = by_name.get("url-https")
    if not plain and https_check is not None and not https_check.passed:
        blockers.append(
            _("The model is served over plain http: {detail}").format(
                detail=_one_line(https_check.detail)
            )
        )
    return blockers


def _code(warning: Any) -> str | None:
    code = getattr(warning, "code", None)
    if isinstance(code, str):
        return code
    # Until validate.url_warnings returns (code, message) pairs everywhere (issue 10).
    text = str(warning)
    if "plain http" in text:
        return "plain-http"
    return "unreachable-host" if "cannot reach" in text else None


def _check_blockers(failed: Sequence[Check]) -> list[str]:
    blockers = []
    for check in failed:
        if check.name == "tls-certificate":
            text = _(
                "The TLS certificate of the model's host does not verify ({detail}): install "
                "a certificate from a trusted authority for this host name."
            )
        else:
            text = _("Required check {name} failed: {detail}")
        blockers.append(text.format(name=check.name, detail=_one_line(check.detail)))
    return blockers


def _capacity_blockers(capacity: Mapping[str, Any] | None, class_size: int | None) -> list[str]:
    if not class_size or capacity is None:
        return []
    found = _get(capacity.get("capacity"), "concurrency") if capacity.get("capacity") else None
    concurrency = _int_or_none(found) or 0
    if concurrency >= class_size:
        return []
    return [
        _(
            "Capacity is {found} chats at once, below the class size of {need}: add serving "
            "capacity (GPUs, replicas) or a faster model."
        ).format(found=concurrency, need=class_size)
    ]


def _phases(steps: Sequence[Step], go_live: GoLive) -> list[dict[str, Any]]:
    """The three onboarding phases of spec section 1 (names are identifiers)."""
    passed = {s.name for s in steps if s.passed}
    token = "token" in passed
    needed = {"contact card", "token", "register", "list models"}
    integration = needed <= passed
    missing = ", ".join(step_label(n) for n in EXPECTED_STEPS if n in needed - passed)
    return [
        {
            "name": "preparation",
            "done": token,
            "detail": _("the platform answers and the provider's appId/appSecret work")
            if token
            else _(
                "no token yet: the provider must create the platform and hand out appId/appSecret"
            ),
        },
        {
            "name": "technical integration",
            "done": integration,
            "detail": _("contact given, model registered and listed")
            if integration
            else _("missing: {steps}").format(steps=missing),
        },
        {
            "name": "go-live",
            "done": False,
            "detail": _("ready: the provider switches the active model in the back office")
            if go_live.ready
            else _("not ready: see what stands in the way"),
        },
    ]


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


def _host(url: str) -> str:
    try:
        return urlsplit(url).hostname or url
    except ValueError:
        return url


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, Mapping) else getattr(item, key, None)


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


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
