"""The onboarding summary as plain text: a checklist a person can read in a log."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ..i18n import N_, _, format_local_time, ngettext, pgettext
from ..probe.text.capacity_text import capacity_line
from ..probe.text.client_text import client_sentence, server_lines
from ..probe.text.performance import answer_wait_sentence, ms
from ..probe.text.workload_text import prefix_sentence, workload_sentence
from ..severity import severity_label
from ..summary import (
    CAPACITY_STEP,
    CapacityRecord,
    Percentiles,
    Performance,
    Step,
    Summary,
    step_label,
)
from ..summary.fields import one_line
from ..terminal import shown_name, terminal_text

__all__ = [
    "PERCENTILE_ROWS",
    "answer_sentence",
    "below_class",
    "capacity_found",
    "fmt",
    "fmt_name",
    "go_live_verdict",
    "local_time",
    "measured_nothing",
    "ms",
    "nothing_measured_note",
    "one_request_note",
    "percentile_rows",
    "perf_sentence",
    "phase_label",
    "render_summary_text",
    "served_line",
    "severity_label",
    "single_request",
    "status_badge",
    "status_label",
    "step_done",
    "steps_verdict",
]

PERCENTILE_ROWS = (
    ("ttft_ms", N_("time to first token (ms)")),
    ("first_answer_ms", N_("time to the first answer token (ms)")),
    ("itl_ms", N_("inter-token latency (ms)")),
    ("latency_ms", N_("request latency (ms)")),
)
_STATUS = {"ok": N_("OK"), "failed": N_("FAILED"), "incomplete": N_("INCOMPLETE")}
_PHASES = {
    "preparation": N_("preparation"),
    "technical integration": N_("technical integration"),
    "go-live": N_("go-live"),
}


def status_label(status: str) -> str:
    """The status in words (the status value itself stays an identifier in JSON)."""
    return _(_STATUS[status]) if status in _STATUS else status


def status_badge(summary: Summary) -> tuple[str, str]:
    """The badge beside a record's title, (css class, words): green only when ready for
    go-live, so an "OK" never stands beside "not ready"."""
    if summary.go_live.ready:
        return "ok", _("ready")
    if summary.status in ("failed", "incomplete"):
        return summary.status, status_label(summary.status)
    return "incomplete", _("not ready")


def step_done(summary: Summary, step: Step) -> bool:
    """Whether a step's box is ticked: a capacity measured below the class is not done."""
    if step.name == CAPACITY_STEP and summary.class_size and step.passed:
        found = capacity_found(summary.capacity)
        return found is not None and found >= summary.class_size
    return step.passed


def served_line(capacity: int, class_size: int | None) -> str:
    """The one capacity number with enough or not for the class, in one line."""
    return capacity_line(capacity, class_size)


def capacity_found(capacity: CapacityRecord | None) -> int | None:
    """The concurrency a recorded capacity found, or None (not measured)."""
    return None if capacity is None else capacity.concurrency


def phase_label(name: str) -> str:
    return _(_PHASES[name]) if name in _PHASES else name


def fmt(value: Any) -> str:
    """A value as short readable text ("—" for nothing)."""
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return _("yes") if value else _("no")
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 100 else f"{value:.3g}"
    if isinstance(value, Mapping | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def fmt_name(value: Any) -> str:
    """A name (the school, a contact's, a model's name or id) by the one rule every view
    shows names with (:func:`lmreg_nb.terminal.shown_name`): one line, capped, nothing hidden."""
    return shown_name(fmt(value))


def local_time(value: Any, lang: str | None = None) -> str:
    """An ISO timestamp or datetime in the school's local time with its zone."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return value
    if isinstance(value, datetime):
        return format_local_time(value, lang)
    return fmt(value)


def below_class(summary: Summary) -> tuple[int, int] | None:
    """(capacity, class size) when the capacity measured is below the class, else None."""
    found, size = capacity_found(summary.capacity), summary.class_size
    if found is None or not size or found >= size:
        return None
    return found, size


def steps_verdict(summary: Summary) -> tuple[bool, str]:
    """The first verdict: did the onboarding's steps all run and pass? It never says "all
    done" above a capacity the record finds too small for the class."""
    short = below_class(summary)
    if summary.status == "ok" and short is not None:
        found, size = short
        return False, ngettext(
            "Onboarding steps: all done, every required check passed, but the model serves "
            "{found} chat at once: not enough for a class of {size}.",
            "Onboarding steps: all done, every required check passed, but the model serves "
            "{found} chats at once: not enough for a class of {size}.",
            found,
        ).format(found=found, size=size)
    if summary.status == "ok":
        return True, _("Onboarding steps: all done, every required check passed.")
    if summary.status == "failed":
        return False, _("Onboarding steps: failed. {reason}").format(reason=summary.reason)
    return False, _("Onboarding steps: not finished; some steps have not run.")


def go_live_verdict(summary: Summary) -> tuple[bool, str]:
    """The second verdict: can the platform go live with this model as registered?"""
    if summary.go_live.ready:
        return True, _("Ready for go-live: the provider can switch the platform to this model.")
    return False, _("Not ready for go-live. What to do:")


def answer_sentence(perf: Performance) -> str:
    """Which first-token time students feel, when the record has both; else ""."""
    if perf.first_answer_ms is None:
        return ""  # an older record
    return answer_wait_sentence()  # the probe report's words


def single_request(perf: Performance) -> bool:
    """Whether the figures come from one request (the checks' own), not a load test."""
    return not perf.load_test


def one_request_note(summary: Summary | None = None) -> str:
    """What the figures of one request are, so they never read like a load test; when a
    load test was asked for and did not run, why (never "set check_requests")."""
    asked = next((c for c in summary.checks if c.name == "load-test"), None) if summary else None
    if asked is not None and not asked.judged:
        return _(
            "Measured on one request (the checks' streamed reply): the load test did not "
            "run ({why})."
        ).format(why=one_line(asked.detail))
    return _(
        "Measured on one request (the checks' streamed reply), not a load test: set "
        "check_requests above 0 for a load test."
    )


def measured_nothing(perf: Performance) -> bool:
    """The checks' one request got no reply: there is no figure to show (only dashes)."""
    return not perf.load_test and perf.errors >= perf.requests


def nothing_measured_note() -> str:
    """Instead of a table of dashes."""
    return _("No figures: the one request the checks measured got no reply.")


def perf_sentence(perf: Performance) -> str:
    """Requests, errors and throughput in one sentence (with correct plurals)."""
    return pgettext("list separator", ", ").join(
        [
            ngettext("{n} request", "{n} requests", perf.requests).format(n=perf.requests),
            ngettext("{n} error", "{n} errors", perf.errors).format(n=perf.errors),
            _("{n} requests/s").format(n=fmt(perf.requests_per_s)),
            _("{n} output tokens/s").format(n=fmt(perf.output_tokens_per_s)),
        ]
    )


def percentile_rows(perf: Performance) -> list[tuple[str, Percentiles]]:
    """(label, percentiles) of each measure the record has (first_answer_ms: not in older
    records)."""
    found = {
        "ttft_ms": perf.ttft_ms,
        "first_answer_ms": perf.first_answer_ms,
        "itl_ms": perf.itl_ms,
        "latency_ms": perf.latency_ms,
    }
    rows = []
    for key, label in PERCENTILE_ROWS:
        value = found[key]
        if value is not None:
            rows.append((_(label), value))
    return rows


def render_summary_text(s: Summary) -> str:
    """The onboarding summary as plain text, the two verdicts first."""
    mark = {True: "[x]", False: "[ ]"}
    lines = [
        _("Onboarding record: {school} — {status}").format(
            school=fmt_name(s.school), status=status_badge(s)[1]
        )
    ]
    ok, text = steps_verdict(s)
    lines.append(f"{mark[ok]} {text}")
    ok, text = go_live_verdict(s)
    lines.append(f"{mark[ok]} {text}")
    lines += [f"    - {b}" for b in s.go_live.blockers]
    if s.contact:
        card = s.contact
        contact = pgettext("list separator", ", ").join(
            fmt_name(v) for v in (card.name, card.mobile, card.email)
        )
        lines.append(_("Contact: {contact}").format(contact=contact))
    for label, value in (
        (_("Platform"), s.base_url),
        (_("Env"), s.env),
        (_("Generated"), local_time(s.generated_at, s.lang) if s.generated_at else None),
    ):
        if value:
            lines.append(f"{label}: {value}")
    if s.phases:
        lines.append(_("Phases:"))
        for p in s.phases:
            lines.append(f"  {mark[p.done]} {phase_label(p.name)} — {fmt(p.detail)}")
    if s.steps:
        lines.append(_("Steps:"))
        lines += [
            f"  {mark[step_done(s, st)]} {step_label(st.name)} — {st.detail}" for st in s.steps
        ]
    if s.models:
        lines.append(_("Models:"))
        lines += [
            f"  {fmt_name(m.model_name)} ({fmt_name(m.model_id)}) {fmt(m.registry_url)}"
            for m in s.models
        ]
    if s.checks:
        lines.append(_("Checks:"))
        for c in s.checks:
            ok_word = _("PASS") if c.passed else _("FAIL") if c.failed else _("NOT JUDGED")
            lines.append(f"  {ok_word} {c.name} [{severity_label(c.severity)}] {c.detail}")
    if s.capacity:
        lines.append(_("Capacity: {verdict}").format(verdict=fmt(s.capacity.verdict)))
        if s.capacity.workload is not None:
            lines.append("  " + workload_sentence(s.capacity.workload))
        if s.capacity.prefix_cache is not None:
            lines.append("  " + prefix_sentence(s.capacity.prefix_cache))
    if s.performance:
        lines += _performance_lines(s.performance, s)
    lines += ["  " + line for line in server_lines(s.server)]
    busy = client_sentence(s.client)
    if busy is not None:
        lines.append("  " + busy)
    # Details may quote a server: control and bidi characters made visible, as on a terminal.
    return terminal_text("\n".join(lines), lines=True, limit=None)


def _performance_lines(perf: Performance, summary: Summary) -> list[str]:
    """The performance figures: one request's values, or a load test's percentiles."""
    one = single_request(perf)
    if measured_nothing(perf):
        return [one_request_note(summary), nothing_measured_note()]
    lines = [one_request_note(summary)] if one else [
        _("Performance: {figures}").format(figures=perf_sentence(perf))
    ]  # fmt: skip
    for label, pct in percentile_rows(perf):
        figures = ms(pct.p50) if one else (
            f"p50 {ms(pct.p50)}, p90 {ms(pct.p90)}, p99 {ms(pct.p99)}"
        )  # fmt: skip
        lines.append(f"  {label}: {figures}")
    if answer_sentence(perf):
        lines.append("  " + answer_sentence(perf))
    return lines
