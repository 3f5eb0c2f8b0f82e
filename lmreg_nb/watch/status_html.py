"""status.html: health first, one offline page (no link, no fetch) written after each round.

The schools come first, worst first: a badge red (every model down, or the
watch cannot sign in), amber (some models down or failing, or the models
cannot be read) or green, how many models are up, since when and the cause
in a readable column. Then every model, worst first: since when, failures in
a row, the last latency, the certificate's days left, the recent latencies as
a small inline SVG and what failed. Names never wrap; times are short
(``14:05``, or ``11-27 14:05`` on another day) with the zone said once at the
top. A click on a column head sorts by it (a few lines of inline script;
without script the page still reads); the page reloads itself every round.
Every value is escaped (names and details came from a server or a plan).
Written 0600 beside the state file, replaced whole each round.
"""

from __future__ import annotations

import contextlib
import html
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ..i18n import N_, _, current_language, local_zone, ngettext, zone_label
from ..models import ms_to_datetime
from .alerts import ModelState, SchoolState
from .messages import what_failed
from .state import HistoryRow

__all__ = ["HEALTH", "STATUS_LABELS", "render_status", "school_health", "status_label",
           "write_status"]  # fmt: skip

STATUS_LABELS = {
    "down": N_("down"),
    "failing": N_("failing"),
    "up": N_("up"),
    "new": N_("not checked yet"),
}
_ORDER = {"down": 0, "failing": 1, "new": 2, "up": 3}
#: A school's health, worst first.
HEALTH = ("red", "amber", "green")
_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI","Noto Sans CJK SC","Microsoft YaHei",
sans-serif;margin:16px;color:#222;background:#fff}
h1{font-size:1.3em;margin:0 0 4px}h2{font-size:1.1em;margin:14px 0 4px}
p{margin:2px 0 10px;color:#555}
table{border-collapse:collapse;width:100%}td,th{border:1px solid #ddd;padding:3px 6px;
text-align:left;vertical-align:top}th{background:#f6f8fa;cursor:pointer;font-size:.9em}
.n{white-space:nowrap}td.num{white-space:nowrap;text-align:right}td.why{min-width:18em;width:40%}
.s{display:inline-block;padding:1px 8px;border-radius:9px;font-weight:bold;white-space:nowrap}
.stale{color:#8a0c0c;font-style:italic}
.s-up,.h-green{background:#d4f4dd;color:#05611d}.s-down,.h-red{background:#fde0e0;color:#8a0c0c}
.s-failing,.h-amber{background:#fff3cd;color:#6b4e00}.s-new{background:#eee;color:#555}
"""


def status_label(status: str) -> str:
    """A model's status as a person reads it."""
    return _(STATUS_LABELS.get(status, status))


def _short(ms: int | None, now_ms: int) -> str:
    """``14:05`` today, ``11-27 14:05`` another day (the zone is said once, at the top)."""
    if ms is None:
        return ""
    zone = local_zone()
    when = ms_to_datetime(ms).astimezone(zone)
    now = ms_to_datetime(now_ms).astimezone(zone)
    return f"{when:%H:%M}" if when.date() == now.date() else f"{when:%m-%d %H:%M}"


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


def school_health(school: SchoolState, models: Sequence[ModelState]) -> tuple[str, str]:
    """(red | amber | green, the badge's words) of a school, from its models and sign-in."""
    down = sum(1 for m in models if m.status == "down")
    failing = sum(1 for m in models if m.status == "failing")
    if school.problem == "sign-in":
        return "red", _("cannot sign in")
    if models and down == len(models):
        return "red", ngettext("its model is down", "all {n} models down", down).format(n=down)
    if school.blind:
        return "amber", _("cannot read the models")
    if down:
        return "amber", ngettext(
            "{n} of {total} model down", "{n} of {total} models down", len(models)
        ).format(n=down, total=len(models))
    if failing:
        return "amber", ngettext("{n} model failing", "{n} models failing", failing).format(
            n=failing
        )
    if not models:
        return "green", _("no model registered")
    return "green", _("all models up")


def _cause(school: SchoolState, models: Sequence[ModelState]) -> str:
    """What is wrong with a school, in a sentence: its sign-in, or its worst model's failure."""
    if school.blind:
        return school.detail
    worst = sorted((m for m in models if m.status != "up" and m.kind),
                   key=lambda m: _ORDER.get(m.status, 9))  # fmt: skip
    return (
        _("{name}: {what}").format(name=worst[0].model_name, what=what_failed(worst[0]))
        if (worst)
        else ""
    )


def _schools_table(
    schools: Sequence[SchoolState], states: Sequence[ModelState], now_ms: int
) -> tuple[str, dict[str, int]]:
    """The schools, worst first; and each school's rank (for the models below)."""
    e = html.escape
    by_school: dict[str, list[ModelState]] = {}
    for m in states:
        by_school.setdefault(m.school, []).append(m)
    rows: list[tuple[int, str, str]] = []
    for s in schools:
        models = by_school.get(s.key, [])
        health, label = school_health(s, models)
        up = sum(1 for m in models if m.status == "up")
        since = (
            s.since_ms
            if s.blind
            else min((m.since_ms for m in models if m.status != "up" and m.since_ms), default=None)
        )
        cells = [
            f'<td><span class="s h-{health}">{e(label)}</span></td>',
            f'<td><span class="n">{e(s.name)}</span></td>',
            f'<td class="num">{up} / {len(models)}</td>',
            f'<td><span class="n">{e(_short(since, now_ms))}</span></td>',
            f'<td class="why">{e(_cause(s, models))}</td>',
        ]
        row = f'<tr class="school h-row-{health}">' + "".join(cells)
        rows.append((HEALTH.index(health), s.name, row + "</tr>"))
    rows.sort(key=lambda r: (r[0], r[1]))
    rank = {s.key: HEALTH.index(school_health(s, by_school.get(s.key, []))[0]) for s in schools}
    head = [_("health"), _("school"), _("models up"), _("since"), _("what is wrong")]
    heading = _("Schools")
    table = (
        f'<h2>{e(heading)}</h2><table class="sort schools"><thead><tr>'
        + "".join(f"<th>{e(h)}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "".join(r for _h, _n, r in rows)
        + "</tbody></table>"
    )
    return table, rank


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

    ``names`` (the fleet): school key -> name, for the models' school column.
    ``refresh_s``: the page reloads itself that often (the round's interval).
    """
    e = html.escape
    states = list(states)
    schools = list(schools) or [SchoolState("", school)]
    table, rank = _schools_table(schools, states, generated_ms)
    blind = {s.key for s in schools if s.blind}
    ordered = sorted(
        states,
        key=lambda s: (
            rank.get(s.school, 3),
            _ORDER.get(s.status, 9),
            (names or {}).get(s.school, ""),
            s.model_name,
        ),
    )
    stale_text = _("stale: the models cannot be read")
    head = [
        *([_("school")] if names is not None else []),
        _("model"), _("status"), _("since"), _("failures in a row"), _("latency (s)"),
        _("certificate (days left)"), _("recent latency"), _("what failed"),
    ]  # fmt: skip
    rows = []
    for s in ordered:
        latency = f"{s.latency_s:.2f}" if s.latency_s is not None and s.status == "up" else ""
        since = _short(s.since_ms if s.status != "up" else s.last_ok_ms, generated_ms)
        stale = f'<br><small class="stale">{e(stale_text)}</small>' if s.school in blind else ""
        cells = [
            *([f'<td><span class="n">{e(names.get(s.school, s.school))}</span></td>']
              if names is not None else []),
            f'<td><span class="n">{e(s.model_name)}</span><br><small class="n">modelId '
            f"{e(s.model_id)}</small></td>",
            f'<td><span class="s s-{e(s.status)}">{e(status_label(s.status))}</span>{stale}</td>',
            f'<td><span class="n">{e(since)}</span></td>',
            f'<td class="num">{s.fails}</td>',
            f'<td class="num">{latency}</td>',
            f'<td class="num">{"" if s.tls_days is None else s.tls_days}</td>',
            f"<td>{_spark(history.get(s.key, ()), width=90)}</td>",
            f'<td class="why">{e(_what(s))}</td>',
        ]  # fmt: skip
        rows.append("<tr>" + "".join(cells) + "</tr>")
    counts = {h: sum(1 for s in schools if rank.get(s.key) == i) for i, h in enumerate(HEALTH)}
    down = sum(1 for s in ordered if s.status == "down")
    now = ms_to_datetime(generated_ms).astimezone(local_zone())
    summary = ngettext(
        "Round {n}, updated {time} ({zone}): {models} model, {down} down. A model is down "
        "after {fail_after} failed rounds in a row.",
        "Round {n}, updated {time} ({zone}): {models} models, {down} down. A model is down "
        "after {fail_after} failed rounds in a row.",
        len(ordered),
    ).format(
        n=round_number, time=f"{now:%Y-%m-%d %H:%M}", zone=zone_label(now),
        models=len(ordered), down=down, fail_after=fail_after,
    )  # fmt: skip
    health = ngettext(
        "{n} school: {red} red, {amber} amber, {green} green.",
        "{n} schools: {red} red, {amber} amber, {green} green.",
        len(schools),
    ).format(n=len(schools), **counts)
    title = (
        _("Registered models of {school}").format(school=school)
        if names is None
        else _("Registered models of every school")
    )
    lang = "zh-CN" if current_language() == "zh-CN" else "en"
    models_heading = _("Models")
    refresh = (
        f'<meta http-equiv="refresh" content="{max(1, round(refresh_s))}">'
        if refresh_s is not None
        else ""
    )
    return (
        f'<!DOCTYPE html>\n<html lang="{lang}"><head><meta charset="utf-8">{refresh}'
        f"<title>{e(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{e(title)}</h1><p>{e(summary)}</p><p>{e(health)}</p>{table}"
        f'<h2>{e(models_heading)}</h2><table class="sort models"><thead><tr>'
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
