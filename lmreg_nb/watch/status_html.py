"""status.html: the models' state after each round, one offline page (no link, no fetch).

For those who prefer a page to metrics: down models first, then failing,
then up; each row with since when, failures in a row, the last latency,
the certificate's days left, what failed, and the recent latencies as a
small inline SVG. The fleet's page adds a school column and lists first the
schools whose models cannot be read (their models' rows are marked stale). A
click on a column head sorts by it (a few lines of inline script; without
script the page still reads); the page reloads itself every round. Every
value is escaped (names and details came from a server). Written 0600 beside
the state file, replaced whole each round.
"""

from __future__ import annotations

import contextlib
import html
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ..i18n import N_, _, current_language, format_local_time, ngettext
from ..models import ms_to_datetime
from .alerts import ModelState, SchoolState
from .messages import what_failed
from .state import HistoryRow

__all__ = ["STATUS_LABELS", "render_status", "status_label", "write_status"]

STATUS_LABELS = {
    "down": N_("down"),
    "failing": N_("failing"),
    "up": N_("up"),
    "new": N_("not checked yet"),
}
_ORDER = {"down": 0, "failing": 1, "new": 2, "up": 3}
_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI","Noto Sans CJK SC","Microsoft YaHei",
sans-serif;margin:16px;color:#222;background:#fff}
h1{font-size:1.3em;margin:0 0 4px}p{margin:2px 0 10px;color:#555}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;
vertical-align:top}th{background:#f6f8fa}
.s{display:inline-block;padding:1px 8px;border-radius:9px;font-weight:bold;white-space:nowrap}
th{cursor:pointer;white-space:nowrap}.stale{color:#8a0c0c;font-style:italic}
.s-up{background:#d4f4dd;color:#05611d}.s-down{background:#fde0e0;color:#8a0c0c}
.s-failing{background:#fff3cd;color:#6b4e00}.s-new{background:#eee;color:#555}
"""


def status_label(status: str) -> str:
    """A model's status as a person reads it."""
    return _(STATUS_LABELS.get(status, status))


def _when(ms: int | None) -> str:
    return format_local_time(ms_to_datetime(ms)) if ms is not None else ""


def _spark(rows: Sequence[HistoryRow], width: int = 120, height: int = 22) -> str:
    """Recent latencies as a polyline; failed calls as red ticks at the bottom."""
    if not rows:
        return ""
    top = max((r.latency_s or 0.0) for r in rows if r.ok) if any(r.ok for r in rows) else 1.0
    top = top or 1.0
    step = width / max(1, len(rows) - 1)
    points, ticks = [], []
    for i, row in enumerate(rows):
        x = round(i * step, 1)
        if row.ok and row.latency_s is not None:
            points.append(f"{x},{round(height - 2 - (height - 4) * row.latency_s / top, 1)}")
        elif not row.ok:
            ticks.append(f'<line x1="{x}" y1="{height}" x2="{x}" y2="{height - 6}" stroke="#c00"/>')
    line = (
        f'<polyline fill="none" stroke="#0969da" stroke-width="1.2" points="{" ".join(points)}"/>'
        if len(points) > 1
        else ""
    )
    return (
        f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'xmlns="http://www.w3.org/2000/svg">{line}{"".join(ticks)}</svg>'
    )


#: Sorts the table by the column clicked (numbers as numbers); the page reads without it.
_SORT = """<script>
document.querySelectorAll("table.sort th").forEach(function(th){th.onclick=function(){
var i=th.cellIndex,b=th.closest("table").tBodies[0],r=Array.from(b.rows),d=th.dataset.d==="1"?-1:1;
th.dataset.d=d===1?"1":"0";r.sort(function(x,y){var a=x.cells[i].innerText,c=y.cells[i].innerText,
p=parseFloat(a),q=parseFloat(c);return d*(isNaN(p)||isNaN(q)?a.localeCompare(c):p-q)});
r.forEach(function(x){b.appendChild(x)})}})
</script>"""


def _schools_table(
    schools: Sequence[SchoolState], states: Sequence[ModelState], every: bool
) -> str:
    """The schools: those whose models cannot be read first (what failed, since when).

    ``every`` (the fleet): every school, with its models up and down; else only the
    ones that cannot be watched.
    """
    e = html.escape
    shown = list(schools) if every else [s for s in schools if s.blind]
    if not shown:
        return ""
    up: dict[str, int] = {}
    down: dict[str, int] = {}
    for m in states:
        counts = up if m.status == "up" else down
        counts[m.school] = counts.get(m.school, 0) + 1
    head = [_("school"), _("status"), _("models up"), _("models not up"), _("since"),
            _("what failed")]  # fmt: skip
    rows = []
    for s in sorted(shown, key=lambda s: (not s.blind, s.name)):
        if s.blind:
            label = _("cannot sign in") if s.problem == "sign-in" else _("cannot read the models")
            badge = f'<span class="s s-down">{e(label)}</span>'
        else:
            watched = _("watched")
            badge = f'<span class="s s-up">{e(watched)}</span>'
        cells = [e(s.name), badge, str(up.get(s.key, 0)), str(down.get(s.key, 0)),
                 e(_when(s.since_ms)), e(s.detail)]  # fmt: skip
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    heading = _("Schools") if every else _("Schools that cannot be watched")
    return (
        f'<h2>{e(heading)}</h2><table class="sort"><thead><tr>'
        + "".join(f"<th>{e(h)}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table><p></p>"
    )


def _what(state: ModelState) -> str:
    return what_failed(state) if state.status != "up" and state.kind else ""


def render_status(
    states: Iterable[ModelState],
    history: Mapping[str, Sequence[HistoryRow]],
    *,
    school: str,
    generated_ms: int,
    round_number: int,
    fail_after: int,
    schools: Sequence[SchoolState] = (),
    names: Mapping[str, str] | None = None,
    refresh_s: float | None = None,
) -> str:
    """The page, as one self-contained HTML document.

    ``names`` (the fleet): school key -> name, for the school column. ``refresh_s``:
    the page reloads itself that often (the round's interval).
    """
    ordered = sorted(states, key=lambda s: (_ORDER.get(s.status, 9), s.model_name))
    blind = {s.key for s in schools if s.blind}
    stale_text = _("stale: the models cannot be read")
    e = html.escape
    head = [
        *([_("school")] if names is not None else []),
        _("model"),
        _("status"),
        _("since"),
        _("failures in a row"),
        _("latency (s)"),
        _("certificate (days left)"),
        _("recent latency"),
        _("what failed"),
    ]
    rows = []
    for s in ordered:
        latency = f"{s.latency_s:.2f}" if s.latency_s is not None and s.status == "up" else ""
        stale = f'<br><small class="stale">{e(stale_text)}</small>' if s.school in blind else ""
        cells = [
            *([e(names.get(s.school, s.school))] if names is not None else []),
            f"{e(s.model_name)}<br><small>modelId {e(s.model_id)}</small>",
            f'<span class="s s-{e(s.status)}">{e(status_label(s.status))}</span>{stale}',
            e(_when(s.since_ms if s.status != "up" else s.last_ok_ms)),
            str(s.fails),
            latency,
            "" if s.tls_days is None else str(s.tls_days),
            _spark(history.get(s.key, ())),
            e(_what(s)),
        ]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    down = sum(1 for s in ordered if s.status == "down")
    summary = ngettext(
        "Round {n}, {when}: {models} model, {down} down. A model is down after {fail_after} "
        "failed rounds in a row.",
        "Round {n}, {when}: {models} models, {down} down. A model is down after {fail_after} "
        "failed rounds in a row.",
        len(ordered),
    ).format(
        n=round_number,
        when=_when(generated_ms),
        models=len(ordered),
        down=down,
        fail_after=fail_after,
    )
    title = (
        _("Registered models of {school}").format(school=school)
        if names is None
        else _("Registered models of every school")
    )
    lang = "zh-CN" if current_language() == "zh-CN" else "en"
    refresh = (
        f'<meta http-equiv="refresh" content="{max(1, round(refresh_s))}">'
        if refresh_s is not None
        else ""
    )
    return (
        f'<!DOCTYPE html>\n<html lang="{lang}"><head><meta charset="utf-8">{refresh}'
        f"<title>{e(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{e(title)}</h1><p>{e(summary)}</p>"
        f"{_schools_table(schools, ordered, every=names is not None)}"
        '<table class="sort"><thead><tr>'
        + "".join(f"<th>{e(h)}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "".join(rows)
        + f"</tbody></table>{_SORT}</body></html>\n"
    )


def write_status(path: Path, page: str) -> None:
    """Replace ``path`` with ``page`` at once (0600: it names models and hosts)."""
    fd, tmp = tempfile.mkstemp(prefix=".status-", suffix=".html", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(page)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
