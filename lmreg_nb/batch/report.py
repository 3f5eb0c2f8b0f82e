"""A batch's overview: ``summary.csv`` (for Excel) and ``index.html`` (for people).

Both show, per run: its status and error, the school, whether it is ready for
go-live and what blocks it, the checks (required ones failed apart from
warnings) and the key figures. Every value may come from a server or a form:
CSV cells that a spreadsheet would run as a formula are quoted, HTML is escaped.
"""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..i18n import _, clauses, current_language, format_local_time, ngettext, pgettext
from ..records.text import ms, served_line
from ..runner import write_atomic
from ..summary import Summary
from ..terminal import shown_name

__all__ = [
    "SUMMARY_COLUMNS",
    "key_figures",
    "run_status_label",
    "write_index_html",
    "write_summary_csv",
]

#: summary.csv's columns: the run, readiness, then the summary record's key figures.
SUMMARY_COLUMNS = (
    "run_id", "status", "error", "school", "summary_status", "ready", "blockers",
    "checks_passed", "checks_failed", "warnings", "models", "requests", "errors",
    "ttft_p50_ms", "itl_p50_ms", "latency_p50_ms", "requests_per_s", "output_tokens_per_s",
    "capacity", "class_size", "workload", "lesson_tokens", "prompt_tokens",
    "kernel_retried", "duration_s", "finished_at",
    "notebook", "html", "short_html",
)  # fmt: skip
_LINKS = ("notebook", "html", "short_html")


def key_figures(summary: Summary | None) -> dict[str, Any]:
    """A run's row values from its recorded summary (empty without one)."""
    if summary is None:
        return {}
    perf = summary.performance
    # Rates exist only for a load test: one request's 1/latency is no throughput.
    load = perf if perf is not None and perf.load_test else None

    capacity = summary.capacity.concurrency if summary.capacity is not None else None
    # What the capacity (else the load test) was measured with: "lesson" or "short".
    found = summary.capacity.workload if summary.capacity is not None else None
    workload = found or summary.workload
    return {
        # Read by people in Excel and on the index: the one rule every view shows names by.
        "school": shown_name(summary.school) if summary.school else None,
        "summary_status": summary.status,
        "ready": summary.go_live.ready,
        "blockers": list(summary.go_live.blockers),
        # No check ran (no token, say): no count, rather than "0 passed, 0 failed".
        "checks_passed": sum(1 for c in summary.checks if c.passed) if summary.checks else None,
        "checks_failed": len(summary.failed_checks) if summary.checks else None,
        "warnings": len(summary.warnings) if summary.checks else None,
        "models": len(summary.models),
        "requests": perf.requests if perf is not None else None,
        "errors": perf.errors if perf is not None else None,
        "ttft_p50_ms": _ms(perf.ttft_ms.p50) if perf is not None else None,
        "itl_p50_ms": _ms(perf.itl_ms.p50) if perf is not None else None,
        "latency_p50_ms": _ms(perf.latency_ms.p50) if perf is not None else None,
        "requests_per_s": load.requests_per_s if load is not None else None,
        "output_tokens_per_s": load.output_tokens_per_s if load is not None else None,
        "capacity": capacity,
        "class_size": summary.class_size,
        "workload": workload.name if workload is not None else None,
        # The lesson's tokens, as the record's sentence says them; then each request's whole
        # prompt (instructions, lesson, the student's question and history), p50.
        "lesson_tokens": workload.shared_prefix_tokens if workload is not None else None,
        "prompt_tokens": workload.prompt_tokens if workload is not None else None,
    }


def _ms(value: float | None) -> float | None:
    """Milliseconds to one decimal: a client's figure is not exact to the microsecond."""
    return None if value is None else round(value, 1)


def _csv_headers() -> list[str]:
    """summary.csv's header in the current language (English keeps the identifiers)."""
    words = {
        "run_id": pgettext("summary.csv column", "run_id"),
        "status": pgettext("summary.csv column", "status"),
        "error": pgettext("summary.csv column", "error"),
        "school": pgettext("summary.csv column", "school"),
        "summary_status": pgettext("summary.csv column", "summary_status"),
        "ready": pgettext("summary.csv column", "ready"),
        "blockers": pgettext("summary.csv column", "blockers"),
        "checks_passed": pgettext("summary.csv column", "checks_passed"),
        "checks_failed": pgettext("summary.csv column", "checks_failed"),
        "warnings": pgettext("summary.csv column", "warnings"),
        "models": pgettext("summary.csv column", "models"),
        "requests": pgettext("summary.csv column", "requests"),
        "errors": pgettext("summary.csv column", "errors"),
        "ttft_p50_ms": pgettext("summary.csv column", "ttft_p50_ms"),
        "itl_p50_ms": pgettext("summary.csv column", "itl_p50_ms"),
        "latency_p50_ms": pgettext("summary.csv column", "latency_p50_ms"),
        "requests_per_s": pgettext("summary.csv column", "requests_per_s"),
        "output_tokens_per_s": pgettext("summary.csv column", "output_tokens_per_s"),
        "capacity": pgettext("summary.csv column", "capacity"),
        "class_size": pgettext("summary.csv column", "class_size"),
        "workload": pgettext("summary.csv column", "workload"),
        "lesson_tokens": pgettext("summary.csv column", "lesson_tokens"),
        "prompt_tokens": pgettext("summary.csv column", "prompt_tokens"),
        "kernel_retried": pgettext("summary.csv column", "kernel_retried"),
        "duration_s": pgettext("summary.csv column", "duration_s"),
        "finished_at": pgettext("summary.csv column", "finished_at"),
        "notebook": pgettext("summary.csv column", "notebook"),
        "html": pgettext("summary.csv column", "html"),
        "short_html": pgettext("summary.csv column", "short_html"),
    }
    return [words.get(column, column) for column in SUMMARY_COLUMNS]


def run_status_label(status: str | None) -> str:
    """A run's status in words (result.json keeps the identifier)."""
    if status == "ok":
        return pgettext("run status", "ok")
    if status == "failed":
        return pgettext("run status", "failed")
    if status == "incomplete":
        return pgettext("run status", "incomplete")
    if status in (None, "not run"):
        return pgettext("run status", "not run")
    return status


def _local(value: Any) -> Any:
    """An ISO time of a result (UTC) in the school's local time, with the zone."""
    try:
        return format_local_time(datetime.fromisoformat(str(value))) if value else value
    except ValueError:
        return value


#: A cell starting with one of these is a formula to a spreadsheet (OWASP's list: a tab
#: or a carriage return is dropped, and what follows it read).
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _csv_cell(value: Any) -> Any:
    # These values come from servers and forms, so a text a spreadsheet would run is
    # quoted (numbers are left alone).
    if isinstance(value, bool):
        return _("yes") if value else _("no")
    if isinstance(value, list):
        value = clauses(str(v) for v in value)
    if isinstance(value, str) and value[:1] in _FORMULA_STARTS:
        try:
            float(value)
        except ValueError:
            return "'" + value
    return value


def write_summary_csv(path: Path, runs: Sequence[Mapping[str, Any]]) -> None:
    """summary.csv: one row per run, SUMMARY_COLUMNS; UTF-8 with a BOM, so Excel reads it.

    The header and the yes/no words are in the current language (English keeps the
    column identifiers); times are local, with the zone.
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(_csv_headers())
    for run in runs:
        row = {k: _csv_cell(run.get(k)) for k in SUMMARY_COLUMNS}
        row["finished_at"] = _local(run.get("finished_at"))
        for key in ("status", "summary_status"):
            row[key] = run_status_label(run[key]) if run.get(key) else row[key]
        for key in _LINKS:
            if run.get(key):
                row[key] = f"{run['run_id']}/{run[key]}"
        writer.writerow([row[k] for k in SUMMARY_COLUMNS])
    # Excel on a Chinese Windows reads a CSV without a BOM as GBK and garbles it.
    write_atomic(path, buffer.getvalue(), encoding="utf-8-sig")


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _readiness(run: Mapping[str, Any]) -> str:
    ready = run.get("ready")
    if ready is None:
        # No summary to say why: the run's own error is the cause (one column, not two).
        error = run.get("error")
        return f"<span class='failed'>{_e(error)}</span>" if error else ""
    if ready:
        word = _e(_("ready"))
        return f"<span class='ok'>{word}</span>"
    word = _e(_("not ready"))
    items = "".join(f"<li>{_e(b)}</li>" for b in run.get("blockers") or [])
    return f"<span class='failed'>{word}</span><ul>{items}</ul>"


def _checks(run: Mapping[str, Any]) -> str:
    if run.get("checks_passed") is None:
        return ""
    return _e(
        _("{passed} passed, {failed} failed, {warnings} warnings").format(
            passed=run.get("checks_passed"), failed=run.get("checks_failed") or 0,
            warnings=run.get("warnings") or 0,
        )
    )  # fmt: skip


def _figures(run: Mapping[str, Any]) -> str:
    """What was measured, and only that: the first-token time (whole ms), the load test's
    rate when one ran, and the one capacity number with enough or not for the class."""
    parts = []
    ttft = run.get("ttft_p50_ms")
    if isinstance(ttft, int | float):
        parts.append(_e(_("TTFT p50 {value} ms").format(value=ms(float(ttft)))))
    rate = run.get("requests_per_s")
    if isinstance(rate, int | float):
        parts.append(_e(_("{value} requests/s").format(value=f"{rate:.1f}")))
    capacity, size = run.get("capacity"), run.get("class_size")
    if isinstance(capacity, int):
        parts.append(_e(served_line(capacity, size if isinstance(size, int) else None)))
    return "<br>".join(parts)


def _row(run: Mapping[str, Any]) -> str:
    rid = str(run.get("run_id"))
    status = str(run.get("status") or "not run")
    links = " ".join(
        f'<a href="{_e(rid)}/{_e(run[key])}">{_e(label)}</a>'
        for key, label in (("html", _("record")), ("short_html", _("short")),
                           ("notebook", ".ipynb"))
        if run.get(key)
    )  # fmt: skip
    # Green only for a run ready for go-live: never a green "ok" beside "not ready".
    css = {"ok": "ok" if run.get("ready") else "warn", "failed": "failed"}.get(status, "none")
    # The error column repeated the blockers: the go-live cell says the cause, once.
    cells = [
        (_e(rid), "run"), (_e(run_status_label(status)), f"{css} nowrap"),
        (_e(run.get("school")), "school"), (_readiness(run), "golive"),
        (_checks(run), "checks"), (_figures(run), "figures"),
        (_e(run.get("duration_s")), "nowrap"), (links, "nowrap"),
    ]  # fmt: skip
    tds = "".join(f"<td class='{cls}'>{c}</td>" for c, cls in cells)
    return f"<tr>{tds}</tr>"


_CSS = (
    "body{font-family:system-ui,sans-serif;margin:1.5em}"
    # The page support shares most: it fits the window (1280 px, no sideways scroll).
    "table{border-collapse:collapse;width:100%;table-layout:auto}"
    "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}"
    "ul{margin:2px 0;padding-left:1.2em}span.ok{color:#176b2c}span.failed{color:#a11}"
    "td.ok{background:#d4f4dd}td.failed{background:#fde0e0}td.none{background:#eee}"
    "td.warn{background:#fff3cd}"
    # Readable widths: short cells never wrap ("成功" one character a line); the school
    # keeps a sensible width; the go-live cell (the causes) takes the rest and breaks a
    # long address rather than the page; the figures wrap between their lines only.
    "td.nowrap{white-space:nowrap}td.school{min-width:7em}"
    "td.run{min-width:4em;max-width:10em;overflow-wrap:anywhere}th{white-space:nowrap}"
    "td.golive{min-width:18em;overflow-wrap:anywhere}"
    "td.figures{min-width:9em}td.checks{min-width:7em}"
)


def write_index_html(path: Path, runs: Sequence[Mapping[str, Any]]) -> None:
    """index.html: every run, its status, readiness, checks, key figures and records."""
    failed = sum(1 for r in runs if r.get("status") != "ok")
    ready = sum(1 for r in runs if r.get("ready"))
    heads = [_("run"), _("status"), _("school"), _("go-live"), _("checks"), _("key figures"),
             _("seconds"), _("records")]  # fmt: skip
    counts = ngettext(
        "{n} run: {failed} not ok, {ready} ready for go-live.",
        "{n} runs: {failed} not ok, {ready} ready for go-live.",
        len(runs),
    ).format(n=len(runs), failed=failed, ready=ready)
    updated = _("Updated {when}.").format(when=format_local_time(datetime.now(UTC)))
    title = _e(_("Onboarding batch"))
    page = (
        f"<!DOCTYPE html><html lang='{_e(current_language())}'><head><meta charset='utf-8'>"
        f"<title>{title}</title><style>{_CSS}</style></head><body>"
        f"<h1>{title}</h1><p>{_e(counts)} {_e(updated)}</p>"
        "<table><thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in heads) + "</tr></thead>"
        "<tbody>" + "".join(_row(run) for run in runs) + "</tbody></table></body></html>\n"
    )
    write_atomic(path, page)
