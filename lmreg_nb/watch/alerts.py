"""When to alert: the state of one model after a round, and what to send. Pure functions.

Per model, each round (DESIGN "Contract: monitoring after go-live"):

- a failed call adds one to the failures in a row; the first one marks since when;
- at ``fail_after`` failed calls of the last :func:`window_size` (in a row or
  not, counted since the last recovery) the model is down: one ``alert``, never
  repeated while it stays down (a restart reads the state, so it does not
  repeat either, nor forget since when);
- the first passing call after that: one ``recovery`` with how long it was down,
  unless the model is :func:`flapping` (passing and failing by turns): then the
  recovery waits until it is steady, so a flapping model alerts once and
  recovers once;
- a certificate within :data:`TLS_WARNING_DAYS` of expiry: one ``tls-warning``
  a day;
- the first round only sets the baseline: a model that passes sends nothing.

No network, no clock, no storage here: the round passes the time in, and
the store keeps what comes out.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from .call import ProbeResult

__all__ = [
    "DAY_MS",
    "NOTIFY_TYPES",
    "TLS_WARNING_DAYS",
    "Event",
    "ModelState",
    "SchoolState",
    "TlsSeen",
    "flapping",
    "model_key",
    "school_step",
    "step",
    "window_size",
]

#: A certificate expiring within this many days gets one warning a day.
TLS_WARNING_DAYS = 14
DAY_MS = 24 * 3600 * 1000
#: Event type -> the Apprise notify type it is sent as.
NOTIFY_TYPES = {"alert": "failure", "recovery": "success", "tls-warning": "warning"}


@dataclass(frozen=True)
class TlsSeen:
    """The certificate of an https registryUrl as one round saw it."""

    days_left: int | None
    expires_ms: int | None = None
    issuer: str | None = None
    verified: bool = True


@dataclass(frozen=True)
class ModelState:
    """What is known of one registered model between rounds (a row of the state file)."""

    model_id: str
    model_name: str
    host: str = ""  # the registryUrl's host, for the page and the TLS warning
    status: str = "new"  # "new" | "up" | "failing" | "down"
    fails: int = 0  # failed rounds in a row
    since_ms: int | None = None  # the first failed round of this run of failures
    kind: str | None = None  # the last failure's kind (probe.KINDS)
    detail: str = ""  # the last failure's detail (masked)
    checked_ms: int | None = None
    last_ok_ms: int | None = None
    alerted_ms: int | None = None  # when the down alert was decided
    latency_s: float | None = None  # the last passing call's latency
    tls_days: int | None = None
    tls_expires_ms: int | None = None
    tls_issuer: str | None = None
    tls_warned_ms: int | None = None
    school: str = ""  # the school's key (the plan's run_id; "" for a one-account watch)
    recent: str = ""  # the last window_size(fail_after) calls, oldest first: "1" passed, "0" failed
    after_recovery: int = 0  # calls since the last recovery (the down rule looks no further back)
    #: What the watch knows the model by: its school's key and modelId (:func:`model_key`).
    #: Two schools' platforms may list the same modelId, one account two models of one id.
    key: str = ""

    @property
    def down(self) -> bool:
        """Alerted as down (fail_after failures in a row), not yet recovered."""
        return self.status == "down"


@dataclass(frozen=True)
class Event:
    """Something to tell the targets: an alert, a recovery or a TLS warning."""

    type: str  # "alert" | "recovery" | "tls-warning"
    state: ModelState  # the model's state after the round
    at_ms: int
    since_ms: int | None = None  # when the outage began (alert, recovery)
    previous: ModelState | None = None

    @property
    def notify_type(self) -> str:
        """The Apprise notify type: failure, success or warning."""
        return NOTIFY_TYPES[self.type]

    @property
    def down_for_ms(self) -> int | None:
        """How long the model was down (a recovery): since the first failed round."""
        if self.type != "recovery" or self.since_ms is None:
            return None
        return max(0, self.at_ms - self.since_ms)


def model_key(school: str, model_id: str, nth: int = 1) -> str:
    """The key of a model in the state, alerts and metrics: ``school/modelId``.

    ``school`` is the plan row's run_id ("" for one account; a run_id holds no "/");
    ``nth`` > 1 tells apart the second, third... model an account lists under one
    modelId (in the platform's order: creation order).
    """
    return f"{school}/{model_id}" + (f"#{nth}" if nth > 1 else "")


def step(
    previous: ModelState | None,
    current: ModelState,
    result: ProbeResult,
    *,
    now_ms: int,
    fail_after: int,
    tls: TlsSeen | None = None,
) -> tuple[ModelState, list[Event]]:
    """The model's state after this round's ``result``, and the events to send.

    ``previous`` is the stored state (None: a model seen for the first time);
    ``current`` carries its id, name and host as the platform lists them now.
    """
    if fail_after < 1:
        raise ValueError("fail_after must be at least 1")
    before = previous or ModelState(current.model_id, current.model_name, key=current.key)
    state = replace(
        before,
        model_id=current.model_id,
        model_name=current.model_name,
        host=current.host,
        school=current.school,
        key=current.key,
        checked_ms=now_ms,
    )
    events: list[Event] = []
    size = window_size(fail_after)
    recent = (before.recent + ("1" if result.ok else "0"))[-size:]
    after_recovery = min(before.after_recovery + 1, size)
    state = replace(state, recent=recent, after_recovery=after_recovery)
    if result.ok:
        if before.down and flapping(recent, fail_after):
            # Still flapping: no recovery yet (it would be followed by another alert).
            state = replace(state, fails=0, latency_s=result.latency_s, last_ok_ms=now_ms)
        else:
            state = replace(
                state,
                status="up",
                fails=0,
                since_ms=None,
                kind=None,
                detail="",
                last_ok_ms=now_ms,
                alerted_ms=None,
                latency_s=result.latency_s,
            )
            if before.down:
                state = replace(state, after_recovery=0)
                events.append(
                    Event("recovery", state, now_ms, since_ms=before.since_ms, previous=before)
                )
    else:
        fails = before.fails + 1
        keep = before.down or before.fails
        since = before.since_ms if keep and before.since_ms is not None else now_ms
        # N failed calls of the last M (since the last recovery), in a row or not: a model
        # failing every other call is down too, once.
        failed = recent[-after_recovery:].count("0")
        status = "down" if before.down or failed >= fail_after else "failing"
        state = replace(
            state,
            status=status,
            fails=fails,
            since_ms=since,
            kind=result.kind,
            detail=result.detail,
        )
        if status == "down" and not before.down:
            state = replace(state, alerted_ms=now_ms)
            events.append(Event("alert", state, now_ms, since_ms=since, previous=before))
    state, warning = _tls(state, tls, now_ms)
    if warning is not None:
        events.append(warning)
    return state, events


def window_size(fail_after: int) -> int:
    """M, the calls judged together: failing ``fail_after`` of them is down."""
    return 2 * fail_after + 2


def flapping(recent: str, fail_after: int) -> bool:
    """Whether the calls in the window changed between pass and fail too often to trust one."""
    changes = sum(1 for a, b in itertools.pairwise(recent) if a != b)
    return changes >= max(2, window_size(fail_after) // 2)


def _tls(state: ModelState, tls: TlsSeen | None, now_ms: int) -> tuple[ModelState, Event | None]:
    """Record the certificate; one warning a day while it is within the warning window."""
    if tls is None:
        return replace(state, tls_days=None, tls_expires_ms=None, tls_issuer=None), None
    state = replace(
        state, tls_days=tls.days_left, tls_expires_ms=tls.expires_ms, tls_issuer=tls.issuer
    )
    # A certificate that does not verify (expired too) fails the call: that is an alert.
    due = tls.verified and tls.days_left is not None and tls.days_left <= TLS_WARNING_DAYS
    if not due:
        return state, None
    if state.tls_warned_ms is not None and now_ms - state.tls_warned_ms < DAY_MS:
        return state, None
    state = replace(state, tls_warned_ms=now_ms)
    return state, Event("tls-warning", state, now_ms)


@dataclass(frozen=True)
class SchoolState:
    """Whether the watch can read a school's models (a row of the state's ``schools``)."""

    key: str
    name: str
    problem: str = ""  # "" | "sign-in" (refused, missing env) | "blind" (no answer)
    fails: int = 0  # rounds in a row the models could not be read
    since_ms: int | None = None
    alerted_ms: int | None = None
    detail: str = ""
    last_ok_ms: int | None = None

    @property
    def blind(self) -> bool:
        """The models cannot be read now."""
        return self.fails > 0


def school_step(
    previous: SchoolState | None,
    current: SchoolState,
    *,
    error: str | None,
    sign_in: bool,
    now_ms: int,
    fail_after: int,
) -> tuple[SchoolState, str | None]:
    """A school's reading state after a round; ``"alert"``, ``"recovery"`` or None to send.

    A refused sign-in is alerted at once (it does not heal by waiting); a platform that
    does not answer after ``fail_after`` rounds in a row; one recovery when it reads again.
    """
    before = previous or current
    if error is None:
        state = replace(
            before, name=current.name, problem="", fails=0, since_ms=None, alerted_ms=None,
            detail="", last_ok_ms=now_ms,
        )  # fmt: skip
        return state, "recovery" if before.alerted_ms is not None else None
    fails = before.fails + 1
    since = before.since_ms if before.fails and before.since_ms is not None else now_ms
    problem = "sign-in" if sign_in else "blind"
    state = replace(
        before, name=current.name, problem=problem, fails=fails, since_ms=since, detail=error
    )
    due = sign_in or fails >= fail_after
    if due and before.alerted_ms is None:
        return replace(state, alerted_ms=now_ms), "alert"
    return state, None
