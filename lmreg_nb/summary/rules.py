"""The one place that decides ``status`` and ``go_live`` (DESIGN.md, "Contract: records").

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
    Phase,
    Status,
    Step,
    StepName,
    step_label,
)

__all__ = ["decide", "phases"]


def decide(
    steps: Sequence[Step],
    checks: Sequence[Check],
    *,
    model_urls: Sequence[str] = (),
    capacity: CapacityRecord | None = None,
    class_size: int | None = None,
) -> tuple[Status, GoLive]:
    """The one rule for ``status`` and ``go_live`` (DESIGN.md, records contract)."""
    expected = list(EXPECTED_STEPS) + ([CAPACITY_STEP] if class_size else [])
    ran = {s.name for s in steps}
    missing = [name for name in expected if name not in ran]
    failed_steps = [s for s in steps if not s.passed]
    failed_checks = [c for c in checks if not c.passed and c.severity == "error"]
    status: Status
    if failed_steps or failed_checks:
        status = "failed"
    elif missing or not steps:
        status = "incomplete"
    else:
        status = "ok"
    blockers: list[str] = []
    check_causes = {one_line(c.detail) for c in failed_checks}
    for step in failed_steps:
        if (step.name == StepName.CHECKS and failed_checks) or one_line(
            step.detail
        ) in check_causes:
            continue  # the failed checks below say why, each cause once
        blockers.append(
            _("Step “{step}” failed: {detail}. Fix it and run the onboarding again.").format(
                step=step_label(step.name), detail=one_line(step.detail)
            )
        )
    blockers += _url_blockers(model_urls, checks)
    blockers += _check_blockers(failed_checks)
    blockers += _capacity_blockers(capacity, class_size)
    if missing:
        # Last: a step not done is often waiting on a cause named above (issue 32).
        blockers.append(
            ngettext(
                "Step not done yet: {steps}. Run it.",
                "Steps not done yet: {steps}. Run them.",
                len(missing),
            ).format(steps=listing(f"“{step_label(n)}”" for n in missing))
        )
    return status, GoLive(ready=not blockers, blockers=_unique(blockers))


def _url_blockers(urls: Sequence[str], checks: Sequence[Check]) -> list[str]:
    """A host the platform cannot reach first (the bigger problem), then plain http."""
    unreachable: list[str] = []
    plain: list[str] = []
    for url in filter(None, urls):
        codes = {w.code for w in url_warnings(url)}
        if "unreachable-host" in codes:
            unreachable.append(
                _(
                    "The platform cannot reach {host} (registryUrl {url}): register an "
                    "address it can reach over the internet."
                ).format(host=_host(url), url=url)
            )
        if "plain-http" in codes:
            plain.append(
                _(
                    "registryUrl {url} uses plain http: serve the model over https so the "
                    "apiKey is not sent in clear."
                ).format(url=url)
            )
    by_name = {c.name: c for c in checks}
    host_check = by_name.get("url-public-host")
    if not unreachable and host_check is not None and not host_check.passed:
        # A public-looking name may still resolve to a private address: the check sees it.
        unreachable.append(
            _("The platform cannot reach the model's host: {detail}").format(
                detail=one_line(host_check.detail)
            )
        )
    https_check = by_name.get("url-https")
    if not plain and https_check is not None and not https_check.passed:
        plain.append(
            _("The model is served over plain http: {detail}").format(
                detail=one_line(https_check.detail)
            )
        )
    return unreachable + plain


def _check_blockers(failed: Sequence[Check]) -> list[str]:
    """One blocker per distinct cause: checks failing for the same reason share it."""
    blockers = []
    by_cause: dict[str, list[str]] = {}
    for check in failed:
        if check.name == "tls-certificate":
            text = _(
                "The TLS certificate of the model's host does not verify ({detail}): install "
                "a certificate from a trusted authority for this host name."
            )
            blockers.append(text.format(detail=one_line(check.detail)))
        else:
            by_cause.setdefault(one_line(check.detail), []).append(check.name)
    for cause, names in by_cause.items():
        blockers.append(
            ngettext(
                "Required check {names} failed: {detail}",
                "Required checks {names} failed: {detail}",
                len(names),
            ).format(names=pgettext("list separator", ", ").join(names), detail=cause)
        )
    return blockers


def _capacity_blockers(capacity: CapacityRecord | None, class_size: int | None) -> list[str]:
    if capacity is None:
        if class_size:  # the capacity step's own blocker (not done, or failed) says why
            return []
        return [
            _(
                "No capacity measured: go-live needs evidence that the model serves a class. "
                "Run the onboarding with class_size set to how many students chat at once "
                "(40 by default; 0 skips the test)."
            )
        ]
    if not class_size:
        return []
    concurrency = capacity.concurrency or 0
    if concurrency >= class_size:
        return []
    return [
        _(
            "Capacity is {found} chats at once, below the class size of {need}: add serving "
            "capacity (GPUs, replicas) or a faster model."
        ).format(found=concurrency, need=class_size)
    ]


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
