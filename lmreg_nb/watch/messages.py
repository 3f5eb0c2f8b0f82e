"""What an alert says, in the reader's language, short enough for a phone screen.

An alert: the school, the model (and its modelId, for provider support),
since when (local time with the zone), what failed in plain words and what to
do. A recovery: since when it works again and how long it was down. A TLS
warning: the certificate's expiry and what to do. Titles name the school and
the model, so a list of notifications reads well on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..i18n import N_, _, format_local_time, ngettext
from ..models import ms_to_datetime
from .alerts import Event, ModelState

__all__ = [
    "DIGEST_AFTER",
    "KIND_ADVICE",
    "KIND_TEXT",
    "Message",
    "backlog",
    "blind_message",
    "digest",
    "format_duration",
    "interrupted_message",
    "mail_failing_message",
    "render",
    "round_messages",
    "sees_again_message",
    "trial_message",
]

#: More events than this in one round go out as one digest (a phone gets one notification,
#: and services that limit a bot's messages per minute are not flooded).
DIGEST_AFTER = 3
#: Lines of a digest, one per event; the rest is counted.
DIGEST_LINES = 10

#: Failure kind -> what failed, in plain words.
KIND_TEXT = {
    "refused-key": N_("the model server refused the registered apiKey"),
    "tls": N_("its TLS certificate is not accepted"),
    "timeout": N_("it did not reply in time"),
    "unreachable": N_("it cannot be reached"),
    "http-5xx": N_("the model server answered with an error (HTTP 5xx)"),
    "http-error": N_("the model server refused the request"),
    "replacement-char": N_("its Chinese reply came out garbled (U+FFFD)"),
    "no-content": N_("its reply was empty"),
    "bad-reply": N_("its reply was broken"),
    "registration": N_("its registration cannot be called"),
    "private-address": N_(
        "it is registered at an address the platform cannot reach (loopback, private or link-local)"
    ),
    "not-called": N_("it was not called in time: the school's other models did not answer"),
}
#: Failure kind -> what to do.
KIND_ADVICE = {
    "refused-key": N_(
        "Make the key the model server expects and the registered apiKey the same again "
        "(lmreg-nb modify)."
    ),
    "tls": N_("Renew or fix the certificate: a full chain from a trusted CA, for this host name."),
    "timeout": N_("Check that the model server runs and is not overloaded (GPU memory, queue)."),
    "unreachable": N_(
        "Check that the model server runs and that its address and port are open to the platform."
    ),
    "http-5xx": N_("Check the model server's log and restart it if needed."),
    "http-error": N_("Check the URL and the model name the server serves (lmreg-nb check)."),
    "replacement-char": N_(
        "Update the serving software: it decodes Chinese characters token by token."
    ),
    "no-content": N_("Check the model server's log; run lmreg-nb check --registered for details."),
    "bad-reply": N_("Run lmreg-nb check --registered to see what is wrong with the reply."),
    "registration": N_("Fix the registration with lmreg-nb modify."),
    "private-address": N_(
        "Register the address the platform reaches the model at (lmreg-nb modify): a public "
        "host name or IP address."
    ),
    "not-called": N_(
        "Check that the school's model servers run: its models that hang hold the round's "
        "time; the watch calls this one first next round."
    ),
}


@dataclass(frozen=True)
class Message:
    """One notification: title, body, and the Apprise notify type."""

    title: str
    body: str
    notify_type: str  # "failure" | "success" | "warning" | "info"


def format_duration(ms: int) -> str:
    """``3 min``, ``2 h 5 min``, ``1 d 4 h``: how long, in the reader's language."""
    minutes = max(0, round(ms / 60_000))
    if ms < 60_000:
        return _("{seconds} s").format(seconds=max(0, round(ms / 1000)))
    if minutes < 60:
        return _("{minutes} min").format(minutes=minutes)
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return _("{hours} h {minutes} min").format(hours=hours, minutes=minutes)
    days, hours = divmod(hours, 24)
    return _("{days} d {hours} h").format(days=days, hours=hours)


def _when(ms: int | None) -> str:
    return format_local_time(ms_to_datetime(ms)) if ms is not None else "?"


def _model_line(state: ModelState) -> str:
    return _("Model: {name} (modelId {model_id})").format(
        name=state.model_name, model_id=state.model_id
    )


def what_failed(state: ModelState) -> str:
    """The failure in plain words, with the probe's detail when it adds something."""
    text = _(KIND_TEXT.get(state.kind or "", N_("its reply was broken")))
    return _("{what}: {detail}").format(what=text, detail=state.detail) if state.detail else text


def render(event: Event, school: str) -> Message:
    """The notification for ``event``, in the current language."""
    state = event.state
    head = _("School: {school}").format(school=school)
    if event.type == "alert":
        title = _("[{school}] model {name} is down").format(school=school, name=state.model_name)
        lines = [
            head,
            _model_line(state),
            ngettext(
                "Down since: {when} ({n} check in a row failed)",
                "Down since: {when} ({n} checks in a row failed)",
                state.fails,
            ).format(when=_when(event.since_ms), n=state.fails),
            _("What failed: {what}").format(what=what_failed(state)),
            _("What to do: {advice}").format(
                advice=_(KIND_ADVICE.get(state.kind or "", KIND_ADVICE["bad-reply"]))
            ),
        ]
        return Message(title, "\n".join(lines), event.notify_type)
    if event.type == "recovery":
        title = _("[{school}] model {name} works again").format(
            school=school, name=state.model_name
        )
        lines = [
            head,
            _model_line(state),
            _("Works again since: {when}").format(when=_when(event.at_ms)),
            _("It was down for {duration} (since {when}).").format(
                duration=format_duration(event.down_for_ms or 0), when=_when(event.since_ms)
            ),
        ]
        return Message(title, "\n".join(lines), event.notify_type)
    days = state.tls_days if state.tls_days is not None else 0
    title = ngettext(
        "[{school}] TLS certificate of {name} expires in {days} day",
        "[{school}] TLS certificate of {name} expires in {days} days",
        days,
    ).format(school=school, name=state.model_name, days=days)
    lines = [
        head,
        _model_line(state),
        _("Certificate of {host}: expires {when}, issued by {issuer}").format(
            host=state.host, when=_when(state.tls_expires_ms), issuer=state.tls_issuer or "?"
        ),
        _("What to do: renew it before it expires; the platform refuses an expired one."),
    ]
    return Message(title, "\n".join(lines), event.notify_type)


def trial_message(school: str) -> Message:
    """The test alert the notebook sends, so a person sees that a target works."""
    return Message(
        _("[{school}] test alert from lmreg-nb watch").format(school=school),
        _(
            "This is a test. Alerts about the school's registered models will arrive here "
            "when a model stops answering, and when it works again."
        ),
        "info",
    )


def _digest_line(event: Event) -> str:
    state = event.state
    if event.type == "alert":
        return _("down: {name} (modelId {model_id}): {what}").format(
            name=state.model_name, model_id=state.model_id, what=what_failed(state)
        )
    if event.type == "recovery":
        return _("works again: {name} (down for {duration})").format(
            name=state.model_name, duration=format_duration(event.down_for_ms or 0)
        )
    days = state.tls_days if state.tls_days is not None else 0
    return ngettext(
        "certificate of {name} expires in {days} day",
        "certificate of {name} expires in {days} days",
        days,
    ).format(name=state.model_name, days=days)


def digest(
    events: Sequence[Event], school: str, name_of: Callable[[Event], str] | None = None
) -> Message:
    """Many events of one round as one notification: one short line per model.

    ``name_of`` (the fleet) names each event's school at the start of its line.
    """
    kinds = {e.type for e in events}
    kind = "failure" if "alert" in kinds else "warning" if "tls-warning" in kinds else "success"
    title = ngettext(
        "[{school}] {n} model changed state", "[{school}] {n} models changed state", len(events)
    ).format(school=school, n=len(events))
    lines = [_("School: {school}").format(school=school)]
    for event in events[:DIGEST_LINES]:
        line = _digest_line(event)
        lines.append(f"[{name_of(event)}] {line}" if name_of is not None else line)
    return Message(title, _with_rest(lines, len(events)), kind)


def round_messages(
    events: Sequence[Event],
    school: str,
    name_of: Callable[[Event], str] | None = None,
    *,
    digest_after: int = DIGEST_AFTER,
) -> list[Message]:
    """What a round sends to each target: one message per event, or one digest of many.

    ``name_of`` (the fleet): each event's school; ``school`` then titles the digest.
    ``digest_after``: more events than this are one digest (a school's contact: 1).
    """
    if len(events) > digest_after:
        return [digest(events, school, name_of)]
    return [render(e, name_of(e) if name_of is not None else school) for e in events]


def backlog(messages: Sequence[Message]) -> Message:
    """Notifications that waited for one target (it did not answer, or many came at once)."""
    kinds = {m.notify_type for m in messages}
    kind = "failure" if "failure" in kinds else "warning" if "warning" in kinds else "success"
    title = ngettext(
        "{n} notification from lmreg-nb watch", "{n} notifications from lmreg-nb watch",
        len(messages),
    ).format(n=len(messages))  # fmt: skip
    lines = [m.title for m in messages[:DIGEST_LINES]]
    return Message(title, _with_rest(lines, len(messages)), kind)


def _with_rest(lines: list[str], total: int) -> str:
    """The digest's body: its first DIGEST_LINES items, then how many more there were."""
    rest = total - DIGEST_LINES
    if rest > 0:
        lines = [
            *lines,
            ngettext(
                "… and {n} more: see the status page", "… and {n} more: see the status page", rest
            ).format(n=rest),
        ]
    return "\n".join(lines)


def blind_message(school: str, since_ms: int | None, detail: str, sign_in: bool) -> Message:
    """Monitoring cannot read a school's models: the platform refuses or does not answer."""
    if sign_in:
        title = _("[{school}] monitoring cannot sign in").format(school=school)
        advice = _(
            "What to do: check the school's env_file (LMREG_APP_ID, LMREG_APP_SECRET, "
            "LMREG_BASE_URL) in the plan."
        )
    else:
        title = _("[{school}] monitoring cannot see the models").format(school=school)
        advice = _(
            "What to do: check that the platform answers (lmreg-nb models); until it does, "
            "no model of this school is watched."
        )
    lines = [
        _("School: {school}").format(school=school),
        _("Since: {when}").format(when=_when(since_ms)),
        _("What failed: {what}").format(what=detail),
        advice,
    ]
    return Message(title, "\n".join(lines), "failure")


def sees_again_message(school: str, since_ms: int | None, now_ms: int) -> Message:
    """Monitoring reads the school's models again."""
    title = _("[{school}] monitoring sees the models again").format(school=school)
    lines = [
        _("School: {school}").format(school=school),
        _("It was blind for {duration} (since {when}).").format(
            duration=format_duration(max(0, now_ms - (since_ms or now_ms))), when=_when(since_ms)
        ),
    ]
    return Message(title, "\n".join(lines), "success")


def mail_failing_message(school: str, address: str, error: str) -> Message:
    """For the provider: a school's contact cannot be mailed, so the school hears nothing."""
    title = _("[{school}] alerts cannot be mailed to the contact {address}").format(
        school=school, address=address
    )
    lines = [
        _("School: {school}").format(school=school),
        _("What failed: {what}").format(what=error),
        _(
            "What to do: check the row's contact_email and the mail sender (--mail, "
            "LMREG_NOTIFY_MAIL); until then this school hears of no outage."
        ),
    ]
    return Message(title, "\n".join(lines), "failure")


def interrupted_message(sent: Sequence[tuple[str, str]]) -> Message:
    """For the provider: notifications a stopped watch was sending, (target, title) each.

    They are not sent again (a contact must never get an alert twice); they may or may
    not have arrived, so the provider is told which.
    """
    title = ngettext(
        "{n} notification may not have arrived (the watch stopped while sending it)",
        "{n} notifications may not have arrived (the watch stopped while sending them)",
        len(sent),
    ).format(n=len(sent))
    lines = [_("{target}: {title}").format(target=t, title=m) for t, m in sent[:DIGEST_LINES]]
    return Message(title, _with_rest(lines, len(sent)), "warning")
