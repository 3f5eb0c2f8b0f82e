"""The principal's page: one screen in plain words, from the typed onboarding ``Summary``.

A principal (or a head of IT who is not an engineer) reads: the school, the verdict
in one sentence, what stands in the way and who must act (the school's IT or the
provider), how many students the model serves at once, the contact for alerts and
the date. No code, no check names, no addresses: the full record, linked at the
bottom, has those. The page is self-contained (no script, no outside resource) and
fits a 1280x800 screen.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from ..i18n import _, format_local_time, ngettext, pgettext
from ..probe.checks.context_window import longest_answered
from ..summary import (
    CAPACITY_STEP,
    EXPECTED_STEPS,
    CapacityRecord,
    Check,
    ModelRecord,
    StepName,
    Summary,
)
from ..terminal import shown_name, terminal_text
from ..validate import url_warnings
from .text import capacity_found

__all__ = ["Obstacle", "obstacles", "render_principal_html", "verdict_sentence"]

#: Who acts on an obstacle.
SCHOOL, PROVIDER = "school", "provider"
#: At most this many obstacles on the page (the rest: "and N more" in the full record).
_MAX_SHOWN = 5
#: Steps whose failure the school's IT fixes; "token" is the provider's account.
_SCHOOL_STEPS = ("contact card", "parameters", "register", "modify", "list models")


@dataclass(frozen=True)
class Obstacle:
    """One thing in the way of go-live, in plain words, and who must act on it."""

    text: str
    who: str  # SCHOOL or PROVIDER


def who_label(who: str) -> str:
    """The party that acts, in words."""
    if who == PROVIDER:
        return _("Provider")
    return _("School IT staff")


def verdict_sentence(summary: Summary) -> str:
    """The verdict in one sentence a principal reads."""
    if summary.go_live.ready:
        return _("The model works with the platform and can go live.")
    if summary.status == "failed":
        return _("The model cannot go live yet: part of the onboarding failed.")
    if summary.status == "incomplete":
        return _("The model cannot go live yet: the onboarding is not finished.")
    return _("The model is connected to the platform but cannot go live yet.")


def obstacles(summary: Summary) -> list[Obstacle]:
    """What stands in the way, in plain words (none when ready), most important first."""
    if summary.go_live.ready:
        return []
    found = _step_obstacles(summary) + _url_obstacles(summary) + _check_obstacles(summary)
    found += _capacity_obstacles(summary)
    if not found and summary.go_live.blockers:
        found.append(
            Obstacle(
                ngettext(
                    "{n} technical problem, listed in the full record.",
                    "{n} technical problems, listed in the full record.",
                    len(summary.go_live.blockers),
                ).format(n=len(summary.go_live.blockers)),
                SCHOOL,
            )
        )
    return list(dict.fromkeys(found))


def _step_obstacles(summary: Summary) -> list[Obstacle]:
    found = []
    failed = {s.name for s in summary.steps if not s.passed}
    if "token" in failed:
        found.append(
            Obstacle(_("The platform account given by the provider does not work."), PROVIDER)
        )
    if failed & {"contact card", "parameters"}:
        found.append(Obstacle(_("The contact details for alerts are not valid."), SCHOOL))
    if failed & {"register", "modify", "list models"}:
        found.append(Obstacle(_("The model could not be registered with the platform."), SCHOOL))
    expected = [*EXPECTED_STEPS, *([CAPACITY_STEP] if summary.class_size else [])]
    done = {s.name for s in summary.steps}
    missing = {name for name in expected if name not in done}
    if summary.failed_checks:
        missing -= _ENDPOINT_STEPS  # waiting on a failed check, whose row names the cause
    if missing:
        found.append(Obstacle(_("Some onboarding steps have not been done yet."), SCHOOL))
    return found


def _url_obstacles(summary: Summary) -> list[Obstacle]:
    codes = {w.code for m in summary.models for w in url_warnings(_registry_url(m))}
    failed = {c.name for c in summary.checks if not c.passed}
    found = []
    if "unreachable-host" in codes or "url-public-host" in failed:
        found.append(
            Obstacle(_("The platform cannot reach the school's model server over the internet."),
                     SCHOOL)
        )  # fmt: skip
    if "plain-http" in codes or "url-https" in failed:
        found.append(Obstacle(_("The model server's connection is not encrypted (https)."), SCHOOL))
    return found


def _registry_url(model: ModelRecord) -> str:
    """A recorded model's registryUrl ("" when the record has none)."""
    return model.registry_url or ""


#: Steps that wait on the endpoint: not done because of a cause already named.
_ENDPOINT_STEPS = frozenset({StepName.CHECKS, StepName.CHAT, StepName.CAPACITY})


def _server_silent(summary: Summary) -> bool:
    """Whether the model server does not answer at all (then every other check waits on it)."""
    return any(c.name == "reachable" for c in summary.failed_checks)


def _cause_obstacles(failed: list[Check]) -> tuple[list[Obstacle], list[Check]]:
    """One row per cause a principal understands, and the failed checks left unnamed."""
    found, rest = [], []
    for check in failed:
        if check.name == "reachable":
            found.append(Obstacle(_("The school's model server does not answer."), SCHOOL))
        elif check.name == "key-accepted":
            found.append(
                Obstacle(_("The model server refuses the key the platform will use."), SCHOOL)
            )
        elif check.name == "context-window":
            longest = longest_answered(check.detail)
            text = (
                _("Lessons longer than {n} tokens are refused (the model's context window is "
                  "too short).").format(n=longest)
                if longest is not None
                else _("Long lessons are refused (the model's context window is too short).")
            )  # fmt: skip
            found.append(Obstacle(text, SCHOOL))
        elif check.name == "streams-not-cut":
            found.append(Obstacle(_("Replies are cut off when two students ask at once."), SCHOOL))
        elif check.name == "system-role":
            found.append(
                Obstacle(_("The model refuses the course apps' instructions (system messages)."),
                         SCHOOL)
            )  # fmt: skip
        else:
            rest.append(check)
    return found, rest


def _check_obstacles(summary: Summary) -> list[Obstacle]:
    failed = [c for c in summary.failed_checks if c.name not in ("url-public-host", "url-https")]
    if _server_silent(summary):
        # A server that does not answer fails every other check too: one row, its cause.
        failed = [c for c in failed if c.name in ("reachable", "tls-certificate")]
    found = []
    if any(c.name == "tls-certificate" for c in failed):
        found.append(Obstacle(_("The model server's security certificate is not valid."), SCHOOL))
    named, others = _cause_obstacles([c for c in failed if c.name != "tls-certificate"])
    found += named
    if others:
        found.append(
            Obstacle(
                ngettext(
                    "The model does not yet answer the way the platform needs ({n} problem).",
                    "The model does not yet answer the way the platform needs ({n} problems).",
                    len(others),
                ).format(n=len(others)),
                SCHOOL,
            )
        )
    return found


def _capacity_obstacles(summary: Summary) -> list[Obstacle]:
    size = summary.class_size
    if not size:
        return []
    concurrency = capacity_found(summary.capacity)
    if concurrency is None:
        return [] if summary.capacity is None or _server_silent(summary) else [
            Obstacle(_("How many students the model serves at once is not known yet."), SCHOOL)
        ]  # fmt: skip
    if concurrency >= size:
        return []
    return [
        Obstacle(
            ngettext(
                "The model serves {found} student at once, fewer than a class of {need}.",
                "The model serves {found} students at once, fewer than a class of {need}.",
                concurrency,
            ).format(found=concurrency, need=size),
            SCHOOL,
        )
    ]


def _wait_s(capacity: CapacityRecord | None) -> float | None:
    """The first-token wait the capacity was measured against, in seconds."""
    value = None if capacity is None else capacity.slo.ttft_ms
    return float(value) / 1000 if value is not None and value > 0 else None


def _capacity_sentence(summary: Summary) -> str:
    """How many students the model serves at once, in plain words (no percentiles)."""
    found = capacity_found(summary.capacity)
    if found is None:
        return _("Not measured yet: the onboarding's capacity step measures it.")
    wait = _wait_s(summary.capacity)
    served = ngettext(
        "The model serves {n} student chatting at once, 9 replies in 10 starting within {s} s.",
        "The model serves {n} students chatting at once, 9 replies in 10 starting within {s} s.",
        found,
    ).format(n=found, s=f"{wait:g}" if wait else "2")
    workload = summary.capacity.workload if summary.capacity is not None else None
    if workload is not None:  # what "at once" means: one plain sentence
        served = _("{served} {how}").format(served=served, how=workload.plain_sentence())
    size = summary.class_size
    if not size:
        return served
    enough = (
        _("That is enough for a class of {size}.")
        if found >= size
        else _("A class of {size} needs more.")
    ).format(size=size)
    return _("{served} {enough}").format(served=served, enough=enough)


def _contact(summary: Summary) -> list[str]:
    contact = summary.contact
    if contact is None:
        return []
    return [_name(p) for p in (contact.name, contact.mobile, contact.email) if p]


def _name(value: str) -> str:
    """A name typed by a person, shown by the one rule for names (:func:`shown_name`):
    what reverses, hides or blanks part of it becomes a visible U+FFFD; capped."""
    return shown_name(value)


_CSS = """
*{box-sizing:border-box}
body{margin:0;background:#f4f5f7;color:#1f2328;font:17px/1.5 system-ui,-apple-system,
"Segoe UI","Noto Sans CJK SC","Microsoft YaHei","PingFang SC",sans-serif}
main{max-width:960px;margin:16px auto;background:#fff;border:1px solid #d0d7de;
border-radius:10px;padding:20px 32px}
h1{font-size:26px;line-height:1.3;margin:0}
.when{color:#57606a;font-size:15px;margin:2px 0 12px}
.verdict{font-size:21px;font-weight:600;padding:10px 16px;border-radius:8px;margin:0 0 12px}
.verdict-ready{background:#dafbe1;color:#0a5d22}
.verdict-waiting{background:#fff4d6;color:#6b4400}
.verdict-failed{background:#ffebe9;color:#8a1c12}
h2{font-size:16px;margin:12px 0 4px;color:#57606a}
table{border-collapse:collapse;width:100%}
td,th{border-bottom:1px solid #eaeef2;padding:4px 8px;text-align:left;vertical-align:top}
th{font-size:15px;color:#57606a;font-weight:600}
td.who{white-space:nowrap;width:12em}
p{margin:4px 0}
footer{margin-top:12px;padding-top:8px;border-top:1px solid #eaeef2;font-size:15px;color:#57606a}
"""


def _e(value: Any) -> str:
    # Any sentence may quote a server: its control and bidi characters made visible.
    text = "" if value is None else terminal_text(value, lines=True, limit=None)
    return html.escape(text, quote=True)


def _h2(title: str) -> str:
    return f"<h2>{_e(title)}</h2>"


def _row(text: str, who: str) -> str:
    return f'<tr><td>{_e(text)}</td><td class="who">{_e(who_label(who))}</td></tr>'


def render_principal_html(summary: Summary, *, full_record: str | None = None) -> str:
    """The principal's page for ``summary``; ``full_record`` is the full record's file name."""
    lang = summary.lang or "en"
    school = _name(summary.school) if summary.school else _("the school")
    title = _("Onboarding result: {school}").format(school=school)
    when = format_local_time(summary.generated_at, summary.lang) if summary.generated_at else ""
    dated = _("Model onboarding, {when}").format(when=when) if when else ""
    css = (
        "ready" if summary.go_live.ready else "failed" if summary.status == "failed" else "waiting"
    )
    parts = [
        f'<!DOCTYPE html><html lang="{_e(lang)}"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body><main>",
        f"<h1>{_e(school)}</h1>",
        f'<p class="when">{_e(dated)}</p>' if dated else "",
        f'<p class="verdict verdict-{css}">{_e(verdict_sentence(summary))}</p>',
    ]
    parts += _obstacles_html(summary)
    parts.append(_h2(_("Students served at once")))
    parts.append(f'<p class="capacity">{_e(_capacity_sentence(summary))}</p>')
    contact = _contact(summary)
    if contact:
        parts.append(_h2(_("Contact for alerts about the model")))
        joined = pgettext("list separator", ", ").join(contact)
        parts.append(f'<p class="contact">{_e(joined)}</p>')
    if full_record:
        link = f'<a href="{_e(full_record)}">{_e(full_record)}</a>'
        note = _e(_("The full record for the technical staff: {link}")).format(link=link)
        parts.append(f"<footer>{note}</footer>")
    parts.append("</main></body></html>\n")
    return "".join(parts)


def _obstacles_html(summary: Summary) -> list[str]:
    if summary.go_live.ready:
        row = _row(_("Switch the platform to this model (go-live)."), PROVIDER)
        return [_h2(_("What comes next")), f"<table><tbody>{row}</tbody></table>"]
    found = obstacles(summary)
    if not found:
        return []
    rows = "".join(_row(o.text, o.who) for o in found[:_MAX_SHOWN])
    parts = [_h2(_("Before go-live"))]
    head = "".join(f"<th>{_e(h)}</th>" for h in (_("What stands in the way"), _("Who must act")))
    parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
    if len(found) > _MAX_SHOWN:
        extra = len(found) - _MAX_SHOWN
        more = ngettext(
            "And {n} more in the full record.", "And {n} more in the full record.", extra
        ).format(n=extra)
        parts.append(f"<p>{_e(more)}</p>")
    return parts
