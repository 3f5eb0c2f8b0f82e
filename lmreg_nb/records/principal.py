"""The principal's page: one screen in plain words, from the typed onboarding ``Summary``.

A principal (or a head of IT who is not an engineer) reads: the school, the verdict
in one sentence, what stands in the way and who must act (the school's IT or the
provider), how many students the model serves at once, the contact for alerts and
the date. No code, no check names, no addresses but the one to register when the
registered one is wrong: the full record, linked at the bottom, has the rest. Every
row is made from the summary's obstacles (cause, owner, facts), never from words.
The page is self-contained (no script, no outside resource) and fits a 1280x800 screen.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, replace
from typing import Any

from ..i18n import N_, _, format_local_time, ngettext, pgettext
from ..probe.text.workload_text import workload_plain
from ..summary import CapacityRecord, StepName, Summary
from ..summary import Obstacle as SummaryObstacle
from ..terminal import shown_name, terminal_text
from .text import capacity_found

__all__ = ["Obstacle", "obstacles", "render_principal_html", "verdict_sentence"]

#: Who acts on an obstacle.
SCHOOL, PROVIDER = "school", "provider"
#: At most this many obstacles on the page (the rest: "and N more" in the full record).
_MAX_SHOWN = 5


@dataclass(frozen=True)
class Obstacle:
    """One thing in the way of go-live, in plain words, and who must act on it."""

    text: str
    who: str  # SCHOOL or PROVIDER
    #: The summary's cause it words ("" for a count of causes without plain words).
    cause: str = ""


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
    """What stands in the way, in plain words (none when ready), most important first.

    Made from the summary's obstacles (cause, owner, facts: decided once, with the
    blockers), never from their words; each cause once.
    """
    if summary.go_live.ready:
        return []
    found: list[Obstacle] = []
    unnamed: list[str] = []
    for obstacle in summary.go_live.obstacles:
        said = _plain(obstacle, summary)
        if said is None:
            unnamed.append(str(obstacle.facts.get("checks") or obstacle.cause))
        elif said.text:
            found.append(replace(said, cause=obstacle.cause))
    if unnamed:
        # Causes a principal has no word for: counted, the full record names them.
        n = sum(len(names.split(",")) for names in unnamed)
        found.append(
            Obstacle(
                ngettext(
                    "The model does not yet answer the way the platform needs ({n} problem).",
                    "The model does not yet answer the way the platform needs ({n} problems).",
                    n,
                ).format(n=n),
                SCHOOL,
            )
        )
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
    kept: dict[str, Obstacle] = {}
    for obstacle_ in found:
        kept.setdefault(obstacle_.text, obstacle_)  # each cause once, in words too
    return list(kept.values())


#: Causes of a model server that does not answer: one row, one owner, one fix.
_SILENT = frozenset({"server-down", "server-down-unsaid", "connection-failed", "no-answer-in-time"})
_STEP_WORDS = {
    StepName.TOKEN: N_("The platform account given by the provider does not work."),
    StepName.CONTACT_CARD: N_("The contact details for alerts are not valid."),
    StepName.PARAMETERS: N_("The onboarding's settings are not valid."),
    StepName.REGISTER: N_("The model could not be registered with the platform."),
    StepName.MODIFY: N_("The model could not be registered with the platform."),
    StepName.LIST_MODELS: N_("The model could not be registered with the platform."),
    StepName.CHECKS: N_("The model's checks could not run."),
    StepName.CHAT: N_("The model did not answer a chat."),
    StepName.CAPACITY: N_("How many students the model serves at once could not be measured."),
}
_CHECK_WORDS = {
    "key-refused": N_("The model server refuses the key the platform will use."),
    "tls-certificate": N_("The model server's security certificate is not valid."),
    "unreachable-host": N_(
        "The platform cannot reach the school's model server over the internet."
    ),
    "plain-http": N_("The model server's connection is not encrypted (https)."),
    "not-served": N_("The model's registered name is not one the model server answers to."),
    "not-served-unknown": N_("The model's registered name is not one the model server answers to."),
}


def _plain(obstacle: SummaryObstacle, summary: Summary) -> Obstacle | None:
    """One obstacle in a principal's words and who acts; None: no plain words for it."""
    cause, facts = obstacle.cause, obstacle.facts
    owner = PROVIDER if obstacle.owner == "provider" else SCHOOL
    checks = str(facts.get("checks") or "").split(",")
    if cause == "step-failed":
        step = _step_name(facts.get("step"))
        words = _STEP_WORDS.get(step) if step is not None else None
        return Obstacle(_(words), owner) if words else None
    if cause == "step-missing":
        return Obstacle(_("Some onboarding steps have not been done yet."), SCHOOL)
    if cause in _SILENT or "reachable" in checks:
        return Obstacle(_("The school's model server does not answer."), owner)
    if cause == "chat-path":
        text = _("The model's address is incomplete: register {url} (the platform calls the "
                 "address exactly as registered).").format(url=facts.get("url"))  # fmt: skip
        return Obstacle(text, owner)
    if cause in _CHECK_WORDS:
        return Obstacle(_(_CHECK_WORDS[cause]), owner)
    if "context-window" in checks:
        longest = facts.get("longest")
        text = (
            _("Lessons longer than {n} tokens are refused (the model's context window is "
              "too short).").format(n=longest)
            if isinstance(longest, int)
            else _("Long lessons are refused (the model's context window is too short).")
        )  # fmt: skip
        return Obstacle(text, owner)
    if "streams-not-cut" in checks:
        return Obstacle(_("Replies are cut off when two students ask at once."), owner)
    if "system-role" in checks:
        return Obstacle(
            _("The model refuses the course apps' instructions (system messages)."), owner
        )
    if cause == "capacity-below-class":
        found, need = facts.get("found"), facts.get("need")
        n = found if isinstance(found, int) else 0
        return Obstacle(
            ngettext(
                "The model serves {found} student at once, fewer than a class of {need}.",
                "The model serves {found} students at once, fewer than a class of {need}.",
                n,
            ).format(found=n, need=need),
            owner,
        )
    if cause == "capacity-not-measured":
        return Obstacle(_("How many students the model serves at once is not known yet."), owner)
    return None


def _step_name(value: object) -> StepName | None:
    try:
        return StepName(str(value))
    except ValueError:
        return None


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
        served = _("{served} {how}").format(served=served, how=workload_plain(workload))
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
