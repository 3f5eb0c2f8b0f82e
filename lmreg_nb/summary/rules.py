"""The one place that decides ``status`` and ``go_live`` (docs/reference.md, "The record").

It reads the parts of :mod:`.model` and :mod:`.capacity`; neither imports it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from ..i18n import _, listing, ngettext, pgettext
from ..validate import url_warnings
from .capacity import CapacityRecord
from .fields import one_line
from .model import (
    CAPACITY_STEP,
    EXPECTED_STEPS,
    Check,
    GoLive,
    Obstacle,
    Owner,
    Phase,
    Status,
    Step,
    StepName,
    step_label,
)

__all__ = ["blocker_text", "decide", "obstacles", "phases"]


def decide(
    steps: Sequence[Step],
    checks: Sequence[Check],
    *,
    model_urls: Sequence[str] = (),
    capacity: CapacityRecord | None = None,
    class_size: int | None = None,
) -> tuple[Status, GoLive]:
    """The one rule for ``status`` and ``go_live`` (summary.schema.json names both)."""
    expected = list(EXPECTED_STEPS) + ([CAPACITY_STEP] if class_size else [])
    ran = {s.name for s in steps}
    missing = [name for name in expected if name not in ran]
    failed_steps = [s for s in steps if s.failed]
    failed_checks = [c for c in checks if c.failed and c.severity == "error"]
    status: Status
    if failed_steps or failed_checks:
        status = "failed"
    elif missing or not steps:
        status = "incomplete"
    else:
        status = "ok"
    found = obstacles(steps, checks, model_urls=model_urls, capacity=capacity,
                      class_size=class_size, missing=missing)  # fmt: skip
    blockers = [blocker_text(o) for o in found]
    return status, GoLive(ready=not found, blockers=_unique(blockers), obstacles=found)


def obstacles(
    steps: Sequence[Step],
    checks: Sequence[Check],
    *,
    model_urls: Sequence[str] = (),
    capacity: CapacityRecord | None = None,
    class_size: int | None = None,
    missing: Sequence[StepName] = (),
) -> list[Obstacle]:
    """What stands in the way of go-live, as facts, each cause once, most important first."""
    failed_checks = [c for c in checks if c.failed and (c.severity == "error" or _stops(c))]
    check_causes = {one_line(c.detail) for c in failed_checks}
    found: list[Obstacle] = []
    for step in steps:
        if not step.failed:
            continue
        after_checks = step.name in (StepName.CHECKS, StepName.CHAT, StepName.CAPACITY)
        if (after_checks and failed_checks) or one_line(step.detail) in check_causes:
            continue  # the failed checks below say why, each cause once (a model down: one)
        owner: Owner = "provider" if step.name == StepName.TOKEN else "school"
        facts = {"step": step.name.value, "detail": one_line(step.detail)}
        found.append(Obstacle("step-failed", owner, facts))
    checks_found = _check_obstacles(failed_checks)
    # The address that serves no chat first: nothing works until it is registered right.
    found += [o for o in checks_found if o.cause == "chat-path"]
    found += _url_obstacles(model_urls, checks)
    found += [o for o in checks_found if o.cause != "chat-path"]
    found += _capacity_obstacles(capacity, class_size)
    if failed_checks:
        # The chat and capacity steps wait on the failed checks: their cause is named above.
        missing = [n for n in missing if n not in (StepName.CHECKS, StepName.CHAT, CAPACITY_STEP)]
    if missing:
        # Last: a step not done is often waiting on a cause named above (issue 32).
        steps_missing = ",".join(n.value for n in missing)
        found.append(Obstacle("step-missing", "school", {"steps": steps_missing,
                                                          "count": len(missing)}))  # fmt: skip
    return _unique_obstacles(found)


def blocker_text(obstacle: Obstacle) -> str:
    """One obstacle as the record's blocker sentence (the JSON's ``go_live.blockers``)."""
    facts = obstacle.facts
    cause = obstacle.cause
    if cause == "step-failed":
        return _("Step “{step}” failed: {detail}. Fix it and run the onboarding again.").format(
            step=step_label(str(facts.get("step"))), detail=facts.get("detail")
        )
    if cause == "unreachable-host" and facts.get("url"):
        return _(
            "The platform cannot reach {host} (registryUrl {url}): register an "
            "address it can reach over the internet."
        ).format(host=facts.get("host"), url=facts.get("url"))
    if cause == "unreachable-host":
        return _("The platform cannot reach the model's host: {detail}").format(
            detail=facts.get("detail")
        )
    if cause == "plain-http" and facts.get("host"):
        # The host, not the whole registryUrl again: the address is said once per run.
        return _(
            "The model on {host} is served over plain http: serve it over https so the "
            "apiKey is not sent in clear."
        ).format(host=facts.get("host"))
    if cause == "plain-http":
        return _("The model is served over plain http: {detail}").format(detail=facts.get("detail"))
    if cause == "capacity-not-measured":
        return _(
            "No capacity measured: go-live needs evidence that the model serves a class. "
            "Run the onboarding with class_size set to how many students chat at once "
            "(40 by default; 0 skips the test)."
        )
    if cause == "capacity-below-class":
        return _(
            "Capacity is {found} chats at once, below the class size of {need}: add serving "
            "capacity (GPUs, replicas) or a faster model."
        ).format(found=facts.get("found"), need=facts.get("need"))
    if cause == "step-missing":
        names = [StepName(n) for n in str(facts.get("steps") or "").split(",") if n]
        return ngettext(
            "Step not done yet: {steps}. Run it.",
            "Steps not done yet: {steps}. Run them.",
            len(names),
        ).format(steps=listing(f"“{step_label(n)}”" for n in names))
    return _check_blocker_text(obstacle)


def _check_blocker_text(obstacle: Obstacle) -> str:
    facts = obstacle.facts
    names = str(facts.get("checks") or "").split(",")
    if obstacle.cause == "tls-certificate":
        text = _(
            "The TLS certificate of the model's host does not verify ({detail}): install "
            "a certificate from a trusted authority for this host name."
        )
        return text.format(detail=facts.get("detail"))
    if obstacle.cause == "chat-path":
        # The address to register, once; the one registered is named beside (the host).
        return _(
            "The registryUrl is not the chat endpoint (it answered HTTP {status}; the chat "
            "path is v1/chat/completions): register {url}"
        ).format(status=facts.get("status"), url=facts.get("url"))
    if obstacle.cause in NAME_NOT_SERVED:
        return _(
            "The platform will send a model name the server does not answer to, so every "
            "student's chat would fail: {detail}"
        ).format(detail=facts.get("detail"))
    return ngettext(
        "Required check {names} failed: {detail}",
        "Required checks {names} failed: {detail}",
        len(names),
    ).format(names=pgettext("list separator", ", ").join(names), detail=facts.get("detail"))


def _url_obstacles(urls: Sequence[str], checks: Sequence[Check]) -> list[Obstacle]:
    """A host the platform cannot reach first (the bigger problem), then plain http."""
    unreachable: list[Obstacle] = []
    plain: list[Obstacle] = []
    for url in filter(None, urls):
        codes = {w.code for w in url_warnings(url)}
        if "unreachable-host" in codes:
            unreachable.append(
                Obstacle("unreachable-host", "school", {"host": _host(url), "url": url})
            )
        if "plain-http" in codes:
            plain.append(Obstacle("plain-http", "school", {"host": _host(url), "url": url}))
    by_name = {c.name: c for c in checks}
    host_check = by_name.get("url-public-host")
    if not unreachable and host_check is not None and host_check.failed:
        # A public-looking name may still resolve to a private address: the check sees it.
        facts = {**host_check.facts, "detail": one_line(host_check.detail)}
        unreachable.append(Obstacle("unreachable-host", "school", facts))
    https_check = by_name.get("url-https")
    if not plain and https_check is not None and https_check.failed:
        facts = {**https_check.facts, "detail": one_line(https_check.detail)}
        plain.append(Obstacle("plain-http", "school", facts))
    return unreachable + plain


#: model-name-served's causes: the name the platform sends is not served.
NAME_NOT_SERVED = frozenset({"not-served", "not-served-unknown"})


def _stops(check: Check) -> bool:
    """A warning that still stops go-live: the registered modelName, which the platform
    sends, got no reply (each student's chat would fail), though the name the school
    configured is served (the required chat checks passed with it)."""
    return check.name == "model-name-served" and check.facts.get("unanswered") is True


def _check_obstacles(failed: Sequence[Check]) -> list[Obstacle]:
    """One obstacle per distinct cause: checks failing for the same reason share it."""
    found: list[Obstacle] = []
    by_cause: dict[str, list[Check]] = {}
    for check in failed:
        if check.name == "tls-certificate":
            facts = {**check.facts, "checks": check.name, "detail": one_line(check.detail)}
            found.append(Obstacle("tls-certificate", check.owner or "school", facts))
        else:
            # Checks that name one cause share it; else their words say whether it is one.
            key = check.cause or one_line(check.detail)
            by_cause.setdefault(key, []).append(check)
    for group in by_cause.values():
        first = group[0]
        facts = {
            **first.facts,
            "checks": ",".join(c.name for c in group),
            "detail": one_line(first.detail),
        }
        found.append(Obstacle(first.cause or "check-failed", first.owner or "school", facts))
    return found


def _capacity_obstacles(capacity: CapacityRecord | None, class_size: int | None) -> list[Obstacle]:
    if capacity is None:
        if class_size:  # the capacity step's own obstacle (failed, skipped, not done) says why
            return []
        return [Obstacle("capacity-not-measured", "school")]
    if not class_size:
        return []
    concurrency = capacity.concurrency or 0
    if concurrency >= class_size:
        return []
    return [Obstacle("capacity-below-class", "school", {"found": concurrency, "need": class_size})]


def _unique_obstacles(found: Iterable[Obstacle]) -> list[Obstacle]:
    seen: set[tuple[str, str]] = set()
    kept = []
    for obstacle in found:
        key = (obstacle.cause, blocker_text(obstacle))
        if key not in seen:
            seen.add(key)
            kept.append(obstacle)
    return kept


def phases(steps: Sequence[Step], go_live: GoLive) -> list[Phase]:
    """The three onboarding phases of spec section 1 (names are identifiers)."""
    passed = {s.name for s in steps if s.passed}
    token = StepName.TOKEN in passed
    needed = {StepName.CONTACT_CARD, StepName.TOKEN, StepName.REGISTER, StepName.LIST_MODELS}
    integration = needed <= passed
    missing = listing(step_label(n) for n in EXPECTED_STEPS if n in needed - passed)
    return [
        Phase(
            "preparation",
            token,
            _("the platform answers and the provider's appId/appSecret work")
            if token
            else _(
                "no token yet: the provider must create the platform and hand out appId/appSecret"
            ),
        ),
        Phase(
            "technical integration",
            integration,
            _("contact given, model registered and listed")
            if integration
            else _("missing: {steps}").format(steps=missing),
        ),
        Phase(
            "go-live",
            False,
            _("ready: the provider switches the active model in the back office")
            if go_live.ready
            else _("not ready: see what stands in the way"),
        ),
    ]


def _host(url: str) -> str:
    try:
        return urlsplit(url).hostname or url
    except ValueError:
        return url


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
