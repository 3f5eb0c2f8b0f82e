"""The onboarding summary as one self-contained, escaped HTML block.

Two plain verdicts come first (the onboarding steps; ready for go-live or
not, with what to do), then the facts, steps, models, checks, capacity and
performance. Every value is escaped: it came from a server or a form.
"""

from __future__ import annotations

import html
from typing import Any

from ..i18n import _, pgettext
from ..probe.text.capacity_table import level_cells, level_headers, ordered_levels
from ..probe.text.client_text import client_sentence, server_lines
from ..probe.text.performance import ms
from ..probe.text.workload_text import prefix_sentence, workload_sentence
from ..summary import CapacityRecord, StepName, Summary, step_label
from ..terminal import terminal_text
from .text import (
    answer_sentence,
    fmt,
    fmt_name,
    go_live_verdict,
    local_time,
    measured_nothing,
    nothing_measured_note,
    one_request_note,
    percentile_rows,
    perf_sentence,
    phase_label,
    severity_label,
    single_request,
    status_badge,
    step_done,
    steps_verdict,
)

__all__ = ["RECORD_MIME", "render_summary_html"]

#: The MIME type of a record's output (:func:`lmreg_nb.records.record`).
RECORD_MIME = "application/vnd.lmreg.record+json"

_CSS = """
.lmreg-summary{font-family:system-ui,-apple-system,"Segoe UI","Noto Sans CJK SC","Microsoft YaHei",
sans-serif;border:1px solid #ccc;border-radius:6px;padding:12px 16px;margin:8px 0 16px;
max-width:72em;overflow-x:auto;background:#fff;color:#222}
.lmreg-summary h2{margin:0 0 8px;font-size:1.3em}
.lmreg-summary h3{margin:12px 0 4px;font-size:1.05em}
.lmreg-summary table{border-collapse:collapse;margin:4px 0}
.lmreg-summary td,.lmreg-summary th{border:1px solid #ddd;padding:3px 8px;
text-align:left!important;vertical-align:top}
.lmreg-summary ul{list-style:none;padding-left:0;margin:4px 0}
.lmreg-summary ol{margin:4px 0 4px 1.5em;padding:0}
.lmreg-verdict{font-size:1.1em;font-weight:bold;margin:6px 0}
.lmreg-status{display:inline-block;padding:1px 10px;border-radius:10px;font-weight:bold}
.lmreg-status-ok{background:#d4f4dd;color:#05611d}.lmreg-status-failed{background:#fde0e0;color:#8a0c0c}
.lmreg-status-incomplete{background:#fff3cd;color:#6b4e00}
.lmreg-pass{color:#05611d}.lmreg-fail{color:#8a0c0c}.lmreg-unjudged{color:#57606a}
.lmreg-checks td:nth-child(-n+3),.lmreg-checks th:nth-child(-n+3){white-space:nowrap}
"""


def _e(value: Any) -> str:
    # Any value may quote a server: its control and bidi characters made visible.
    return html.escape(terminal_text(fmt(value), lines=True, limit=None), quote=True)


def _name(value: Any) -> str:
    return html.escape(fmt_name(value), quote=True)


def _table(header: list[str] | None, rows: list[list[str]], css: str = "") -> str:
    # Cells arrive escaped already (some hold our own markup, such as the pass marks).
    head = ""
    if header is not None:
        head = (
            "<thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr></thead>"
        )
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    klass = f' class="{css}"' if css else ""
    return f"<table{klass}>{head}<tbody>{body}</tbody></table>"


def _h3(title: str) -> str:
    return f"<h3>{html.escape(title)}</h3>"


def _mark(flag: bool | None) -> str:
    if flag is None:  # not judged: neither passed nor failed
        return '<span class="lmreg-unjudged">–</span>'
    if flag:
        return '<span class="lmreg-pass">✔</span>'
    return '<span class="lmreg-fail">✘</span>'


def render_summary_html(s: Summary) -> str:
    """The onboarding summary as a self-contained, escaped HTML block."""
    css, badge = status_badge(s)  # green only when ready for go-live
    parts = [
        f'<div class="lmreg-summary"><style>{_CSS}</style>',
        "<h2>"
        + html.escape(_("Onboarding record: {school}").format(school=fmt_name(s.school)))
        + f' <span class="lmreg-status lmreg-status-{css}">'
        + f"{html.escape(badge)}</span></h2>",
    ]
    parts += _verdicts(s)
    parts.append(_facts(s))
    parts += _steps(s)
    parts += _models(s)
    parts += _checks(s)
    parts += _capacity(s.capacity)
    parts += _performance(s)
    parts.append("</div>")
    return "".join(parts)


def _verdicts(s: Summary) -> list[str]:
    ok, text = steps_verdict(s)
    parts = [f'<p class="lmreg-verdict lmreg-verdict-steps">{_mark(ok)} {html.escape(text)}</p>']
    ready, text = go_live_verdict(s)
    parts.append(
        f'<p class="lmreg-verdict lmreg-verdict-go-live">{_mark(ready)} {html.escape(text)}</p>'
    )
    if s.go_live.blockers:
        items = "".join(f"<li>{html.escape(b)}</li>" for b in s.go_live.blockers)
        parts.append(f'<ol class="lmreg-blockers">{items}</ol>')
    return parts


def _facts(s: Summary) -> str:
    facts = []
    if s.contact:
        card = s.contact
        contact = pgettext("list separator", ", ").join(
            _name(v) for v in (card.name, card.mobile, card.email)
        )
        facts.append([html.escape(_("Contact")), contact])
    generated = local_time(s.generated_at, s.lang) if s.generated_at else None
    for label, value in (
        (_("Platform"), s.base_url),
        (_("Env"), s.env),
        (_("Generated"), generated),
    ):
        if value:
            facts.append([html.escape(label), _e(value)])
    return _table(None, facts) if facts else ""


def _steps(s: Summary) -> list[str]:
    parts = []
    if s.phases:
        parts.append(_h3(_("Onboarding phases")) + "<ul>")
        for p in s.phases:
            box = "☑" if p.done else "☐"
            parts.append(f"<li>{box} <b>{_e(phase_label(p.name))}</b> — {_e(p.detail)}</li>")
        parts.append("</ul>")
    if s.steps:
        parts.append(_h3(_("Steps")) + "<ul>")
        for st in s.steps:
            box = "☑" if step_done(s, st) else "☒"
            parts.append(f"<li>{box} <b>{_e(step_label(st.name))}</b> — {_e(st.detail)}</li>")
        parts.append("</ul>")
    return parts


def _models(s: Summary) -> list[str]:
    if not s.models:
        return []
    keys = ["modelName", "modelId", "registryUrl", "createTime", "updateTime"]
    rows = [
        [
            _name(m.model_name),
            _name(m.model_id),
            _e(m.registry_url),
            _e(local_time(m.create_time, s.lang)),
            _e(local_time(m.update_time, s.lang)),
        ]
        for m in s.models
    ]
    return [_h3(_("Models")), _table(keys, rows)]


def _checks(s: Summary) -> list[str]:
    if not s.checks:
        return []
    rows = [
        [_mark(c.passed), _e(c.name), _e(severity_label(c.severity)), _e(c.detail)]
        for c in s.checks
    ]
    header = ["", _("check"), _("severity"), _("detail")]
    return [_h3(_("Checks")), _table(header, rows, "lmreg-checks")]


def _capacity(capacity: CapacityRecord | None) -> list[str]:
    if capacity is None:
        return []
    parts = [
        _h3(_("Capacity")),
        f'<p class="lmreg-capacity-verdict">{_e(capacity.verdict)}</p>',
    ]
    # What the chats sent, and whether the server reused the lesson (older records: neither).
    if capacity.workload is not None:
        parts.append(
            f'<p class="lmreg-capacity-workload">{_e(workload_sentence(capacity.workload))}</p>'
        )
    if capacity.prefix_cache is not None:
        parts.append(
            f'<p class="lmreg-prefix-cache">{_e(prefix_sentence(capacity.prefix_cache))}</p>'
        )
    levels = capacity.levels
    if levels:
        rows = [[*map(_e, level_cells(lv)), _mark(lv.meets_slo)] for lv in ordered_levels(levels)]
        parts.append(_table(level_headers(), rows))
    return parts


def _measured_by(s: Summary) -> list[str]:
    """The server's own figures and the client's stalls, beside the client's figures."""
    busy = client_sentence(s.client)
    return [*server_lines(s.server), *([busy] if busy is not None else [])]


def _performance(s: Summary) -> list[str]:
    perf = s.performance
    if perf is None:
        ran = any(st.name == StepName.CHECKS for st in s.steps)
        return ["<p>" + html.escape(_("No load test in this run.")) + "</p>"] if ran else []
    if measured_nothing(perf):  # the one request got no reply: no table of dashes
        return [
            _h3(_("Performance")),
            f"<p>{html.escape(one_request_note(s))}</p>",
            f"<p>{html.escape(nothing_measured_note())}</p>",
        ]
    if single_request(perf):
        # One request has one value per measure: no percentiles, no rates.
        rows = [[html.escape(label), _ms(p.p50)] for label, p in percentile_rows(perf)]
        answer = answer_sentence(perf)
        return [
            _h3(_("Performance")),
            f"<p>{html.escape(one_request_note(s))}</p>",
            _table(None, rows),
            *(f"<p>{html.escape(text)}</p>" for text in [answer, *_measured_by(s)] if text),
        ]
    rows = [
        [html.escape(label), _ms(p.p50), _ms(p.p90), _ms(p.p99)]
        for label, p in percentile_rows(perf)
    ]
    sentences = [perf_sentence(perf), answer_sentence(perf), *_measured_by(s)]
    return [
        _h3(_("Performance")),
        _table(["", "p50", "p90", "p99"], rows),
        *(f"<p>{html.escape(text)}</p>" for text in sentences if text),
    ]


def _ms(value: float | None) -> str:
    return html.escape(ms(value))
