"""The onboarding summary as plain text: a checklist a person can read in a log."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ..i18n import N_, _, format_local_time, ngettext, pgettext
from ..probe.load.metrics import answer_wait_sentence
from ..probe.text.client_text import client_sentence, server_lines
from ..severity import severity_label
from ..summary import CAPACITY_STEP, CapacityRecord, Step, Summary, step_label
from ..terminal import shown_name, terminal_text

__all__ = [
    "PERCENTILE_ROWS",
    "answer_sentence",
    "capacity_found",
    "fmt",
    "fmt_name",
    "go_live_verdict",
    "local_time",
    "one_request_note",
    "perf_sentence",
    "phase_label",
    "render_summary_text",
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


def steps_verdict(summary: Summary) -> tuple[bool, str]:
    """The first verdict: did the onboarding's steps all run and pass?"""
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


def answer_sentence(perf: Mapping[str, Any]) -> str:
    """Which first-token time students feel, when the record has both; else ""."""
    if not isinstance(perf.get("first_answer_ms"), Mapping):
        return ""  # an older record
    return answer_wait_sentence()  # the probe report's words


def single_request(perf: Mapping[str, Any]) -> bool:
    """Whether the figures come from one request (the checks' own), not a load test."""
    return perf.get("requests") == 1


def one_request_note() -> str:
    """What the figures of one request are, so they never read like a load test."""
    return _(
        "Measured on one request (the checks' streamed reply), not a load test: set "
        "check_requests above 0 for a load test."
    )


def perf_sentence(perf: Mapping[str, Any]) -> str:
    """Requests, errors and throughput in one sentence (with correct plurals)."""
    requests = perf.get("requests")
    errors = perf.get("errors")
    n_req = requests if isinstance(requests, int) else 0
    n_err = errors if isinstance(errors, int) else 0
    return pgettext("list separator", ", ").join(
        [
            ngettext("{n} request", "{n} requests", n_req).format(n=fmt(requests)),
            ngettext("{n} error", "{n} errors", n_err).format(n=fmt(errors)),
            _("{n} requests/s").format(n=fmt(perf.get("requests_per_s"))),
            _("{n} output tokens/s").format(n=fmt(perf.get("output_tokens_per_s"))),
        ]
    )


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
            ok_word = _("PASS") if c.passed else _("FAIL")
            lines.append(f"  {ok_word} {c.name} [{severity_label(c.severity)}] {c.detail}")
    if s.capacity:
        lines.append(_("Capacity: {verdict}").format(verdict=fmt(s.capacity.verdict)))
        if s.capacity.workload is not None:
            lines.append("  " + s.capacity.workload.sentence())
        if s.capacity.prefix_cache is not None:
            lines.append("  " + s.capacity.prefix_cache.sentence())
    if s.performance:
        lines += _performance_lines(s.performance)
    lines += ["  " + line for line in server_lines(s.server)]
    busy = client_sentence(s.client)
    if busy is not None:
        lines.append("  " + busy)
    # Details may quote a server: control and bidi characters made visible, as on a terminal.
    return terminal_text("\n".join(lines), lines=True, limit=None)


def _performance_lines(perf: Mapping[str, Any]) -> list[str]:
    """The performance figures: one request's values, or a load test's percentiles."""
    one = single_request(perf)
    lines = [one_request_note()] if one else [
        _("Performance: {figures}").format(figures=perf_sentence(perf))
    ]  # fmt: skip
    for key, label in PERCENTILE_ROWS:
        pct = perf.get(key)
        if not isinstance(pct, Mapping):
            continue  # first_answer_ms: an older record
        figures = fmt(pct.get("p50")) if one else (
            f"p50 {fmt(pct.get('p50'))}, p90 {fmt(pct.get('p90'))}, p99 {fmt(pct.get('p99'))}"
        )  # fmt: skip
        lines.append(f"  {_(label)}: {figures}")
    if answer_sentence(perf):
        lines.append("  " + answer_sentence(perf))
    return lines
