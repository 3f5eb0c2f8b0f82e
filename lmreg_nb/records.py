"""Record values into a notebook's outputs, read them back, and render the onboarding summary.

A record is a display output whose bundle holds the MIME type
``application/vnd.lmreg.record+json`` with the payload ``{"name": ..., "value": ...}``
(the name lives in the payload, so the record survives tools that drop output
metadata), a readable ``text/plain`` fallback, and for the onboarding ``summary``
a ``text/html`` rendering. Everything rendered is HTML-escaped: the values come
from servers and forms, not from us.
"""

from __future__ import annotations

import dataclasses
import enum
import html
import json
import logging
import math
from collections.abc import Mapping
from datetime import UTC, date, datetime
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from .errors import LmregError
from .scrub import scrub_notebook  # re-exported: records and scrubbing go together
from .secret import Secret

if TYPE_CHECKING:
    import nbformat

__all__ = [
    "RECORD_MIME",
    "read_records",
    "record",
    "records_of",
    "render_summary_html",
    "render_summary_text",
    "scrub_notebook",
    "to_jsonable",
]

log = logging.getLogger("lmreg_nb")

RECORD_MIME = "application/vnd.lmreg.record+json"
_TEXT_LIMIT = 4000  # the text fallback of a big value is cut: the JSON payload has it whole


def to_jsonable(value: Any) -> Any:
    """``value`` as plain JSON data: Secrets masked, datetimes ISO 8601, NaN as null.

    Raises TypeError (one line, naming the type) for what has no JSON form.
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        # NaN and infinities are not JSON: a reader in another language would choke.
        return value if math.isfinite(value) else None
    if isinstance(value, Secret):
        return value.masked
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    to_json = getattr(value, "to_json", None)
    if callable(to_json):  # EndpointReport and friends know their JSON shape
        return to_jsonable(to_json())
    item = getattr(value, "item", None)
    if callable(item):  # numpy scalars
        return to_jsonable(item())
    raise TypeError(f"a record needs JSON data; got a value of type {type(value).__name__}")


def record(name: str, value: Any) -> None:
    """Display ``value`` as the record ``name`` (JSON payload, text fallback, summary HTML).

    Outside IPython it only logs the text fallback.
    """
    if not isinstance(name, str) or not name.strip():
        raise ValueError("a record needs a non-empty name")
    data = to_jsonable(value)
    bundle: dict[str, Any] = {
        RECORD_MIME: {"name": name, "value": data},
        "text/plain": _text_fallback(name, data),
    }
    if name == "summary" and isinstance(data, Mapping):
        bundle["text/html"] = render_summary_html(data)
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover - IPython is a dependency
        get_ipython = None
    if get_ipython is None or get_ipython() is None:
        log.info("record %s: %s", name, bundle["text/plain"])
        return
    display(bundle, raw=True)


def records_of(nb: nbformat.NotebookNode) -> dict[str, Any]:
    """The records of an in-memory notebook, by name; a later record of a name wins."""
    found: dict[str, Any] = {}
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []) or []:
            payload = (output.get("data") or {}).get(RECORD_MIME)
            if isinstance(payload, str):  # a tool stored the JSON as text
                try:
                    payload = json.loads(payload)
                except ValueError:
                    continue
            if isinstance(payload, Mapping) and isinstance(payload.get("name"), str):
                found[payload["name"]] = _plain(payload.get("value"))
    return found


def read_records(path: str | Path) -> dict[str, Any]:
    """The records of the executed notebook at ``path``, by name."""
    import nbformat

    target = Path(path)
    if not target.is_file():
        raise LmregError(f"no notebook at {target}: give the path of an executed .ipynb")
    try:
        nb = nbformat.read(target, as_version=4)
    except Exception as exc:  # nbformat raises several unrelated types for a bad file
        raise LmregError(
            f"{target} is not a readable notebook ({type(exc).__name__}); "
            "give the path of an executed .ipynb"
        ) from exc
    return records_of(nb)


def _plain(value: Any) -> Any:
    # nbformat hands back NotebookNode (a dict subclass); callers want plain data.
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _text_fallback(name: str, data: Any) -> str:
    if name == "summary" and isinstance(data, Mapping):
        return render_summary_text(data)
    text = json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False)
    if len(text) > _TEXT_LIMIT:
        text = text[:_TEXT_LIMIT] + "\n… (cut; the record holds the whole value)"
    return f"{name}: {text}"


# ---------------------------------------------------------------- summary rendering
# A summary comes from the notebook, which builds it from servers' answers: every
# key may be missing or of a surprising type, so each accessor below tolerates that.


def _get(data: Any, key: str, default: Any = None) -> Any:
    return data.get(key, default) if isinstance(data, Mapping) else default


def _list(data: Any, key: str) -> list[Any]:
    value = _get(data, key)
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _fmt(value: Any) -> str:
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 100 else f"{value:.3g}"
    if isinstance(value, Mapping | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _status(summary: Any) -> str:
    status = _get(summary, "status")
    return str(status) if status not in (None, "") else "unknown"


_PERCENTILE_ROWS = (("ttft_ms", "time to first token (ms)"), ("itl_ms", "inter-token latency (ms)"),
                    ("latency_ms", "request latency (ms)"))  # fmt: skip


def render_summary_text(summary: Mapping[str, Any]) -> str:
    """The onboarding summary as plain text: a checklist a person can read in a log."""
    mark = {True: "[x]", False: "[ ]"}
    lines = [
        f"Onboarding record: {_fmt(_get(summary, 'school'))} — status {_status(summary).upper()}"
    ]
    contact = _get(summary, "contact")
    if isinstance(contact, Mapping):
        lines.append(
            "Contact: " + ", ".join(_fmt(_get(contact, k)) for k in ("name", "mobile", "email"))
        )
    for key, label in (("base_url", "Platform"), ("env", "Env"), ("generated_at", "Generated")):
        if _get(summary, key) not in (None, ""):
            lines.append(f"{label}: {_fmt(_get(summary, key))}")
    for title, key, flag in (("Phases", "phases", "done"), ("Steps", "steps", "passed")):
        items = _list(summary, key)
        if items:
            lines.append(f"{title}:")
            for item in items:
                done = mark[bool(_get(item, flag))]
                detail = _get(item, "detail")
                suffix = f" — {_fmt(detail)}" if detail not in (None, "") else ""
                lines.append(f"  {done} {_fmt(_get(item, 'name'))}{suffix}")
    models = _list(summary, "models")
    if models:
        lines.append("Models:")
        for m in models:
            lines.append(
                f"  {_fmt(_get(m, 'modelName'))} ({_fmt(_get(m, 'modelId'))}) "
                f"{_fmt(_get(m, 'registryUrl'))}"
            )
    checks = _list(summary, "checks")
    if checks:
        lines.append("Checks:")
        for c in checks:
            ok = "PASS" if _get(c, "passed") else "FAIL"
            lines.append(
                f"  {ok} {_fmt(_get(c, 'name'))} [{_fmt(_get(c, 'severity'))}] "
                f"{_fmt(_get(c, 'detail'))}"
            )
    perf = _get(summary, "performance")
    if isinstance(perf, Mapping):
        lines.append(
            f"Performance: {_fmt(_get(perf, 'requests'))} requests, "
            f"{_fmt(_get(perf, 'errors'))} errors, "
            f"{_fmt(_get(perf, 'requests_per_s'))} req/s, "
            f"{_fmt(_get(perf, 'output_tokens_per_s'))} output tokens/s"
        )
        for key, label in _PERCENTILE_ROWS:
            p = _get(perf, key)
            if isinstance(p, Mapping):
                lines.append(
                    f"  {label}: p50 {_fmt(_get(p, 'p50'))}, p90 {_fmt(_get(p, 'p90'))}, "
                    f"p99 {_fmt(_get(p, 'p99'))}"
                )
    return "\n".join(lines)


_CSS = """
.lmreg-summary{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;border:1px solid #ccc;
border-radius:6px;padding:12px 16px;margin:8px 0 16px;max-width:72em;overflow-x:auto;
background:#fff;color:#222}
.lmreg-summary h2{margin:0 0 8px;font-size:1.3em}
.lmreg-summary h3{margin:12px 0 4px;font-size:1.05em}
.lmreg-summary table{border-collapse:collapse;margin:4px 0}
.lmreg-summary td,.lmreg-summary th{border:1px solid #ddd;padding:3px 8px;text-align:left;
vertical-align:top}
.lmreg-summary ul{list-style:none;padding-left:0;margin:4px 0}
.lmreg-status{display:inline-block;padding:1px 10px;border-radius:10px;font-weight:bold}
.lmreg-status-ok{background:#d4f4dd;color:#05611d}.lmreg-status-failed{background:#fde0e0;color:#8a0c0c}
.lmreg-status-unknown{background:#eee;color:#444}
.lmreg-pass{color:#05611d}.lmreg-fail{color:#8a0c0c}
"""


def _e(value: Any) -> str:
    return html.escape(_fmt(value), quote=True)


def _when(value: Any) -> Any:
    """An ISO timestamp as ``2026-11-22 05:10:58 UTC`` (readable, and narrow in a table)."""
    if not isinstance(value, str):
        return value
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return value
    if moment.tzinfo is None:
        return moment.strftime("%Y-%m-%d %H:%M:%S")
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _table(header: list[str] | None, rows: list[list[str]]) -> str:
    # Cells arrive escaped already (some hold our own markup, such as the pass marks).
    head = ""
    if header is not None:
        head = (
            "<thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr></thead>"
        )
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table>{head}<tbody>{body}</tbody></table>"


def _passmark(flag: Any) -> str:
    if flag:
        return '<span class="lmreg-pass">✔</span>'
    return '<span class="lmreg-fail">✘</span>'


def render_summary_html(summary: Mapping[str, Any]) -> str:
    """The onboarding summary as a self-contained, escaped HTML block."""
    status = _status(summary)
    css_status = status if status in ("ok", "failed") else "unknown"
    parts = [
        f'<div class="lmreg-summary"><style>{_CSS}</style>',
        f"<h2>Onboarding record: {_e(_get(summary, 'school'))} "
        f'<span class="lmreg-status lmreg-status-{css_status}">{html.escape(status.upper())}'
        "</span></h2>",
    ]
    facts = []
    contact = _get(summary, "contact")
    if isinstance(contact, Mapping):
        facts.append(
            ["Contact", ", ".join(_e(_get(contact, k)) for k in ("name", "mobile", "email"))]
        )
    for key, label in (("base_url", "Platform"), ("env", "Env"), ("generated_at", "Generated")):
        if _get(summary, key) not in (None, ""):
            facts.append([label, _e(_when(_get(summary, key)))])
    if facts:
        parts.append(_table(None, facts))
    for title, key, flag in (("Onboarding phases", "phases", "done"), ("Steps", "steps", "passed")):
        items = _list(summary, key)
        if items:
            parts.append(f"<h3>{title}</h3><ul>")
            for item in items:
                box = "☑" if _get(item, flag) else "☐"
                detail = _get(item, "detail")
                tail = f" — {_e(detail)}" if detail not in (None, "") else ""
                parts.append(f"<li>{box} <b>{_e(_get(item, 'name'))}</b>{tail}</li>")
            parts.append("</ul>")
    models = _list(summary, "models")
    if models:
        keys = ["modelName", "modelId", "registryUrl", "createTime", "updateTime"]
        parts.append("<h3>Models</h3>")
        rows = [[_e(_when(_get(m, k)) if k.endswith("Time") else _get(m, k)) for k in keys]
                for m in models]  # fmt: skip
        parts.append(_table(keys, rows))
    checks = _list(summary, "checks")
    if checks:
        parts.append("<h3>Checks</h3>")
        parts.append(
            _table(
                ["", "check", "severity", "detail"],
                [
                    [_passmark(_get(c, "passed")), _e(_get(c, "name")), _e(_get(c, "severity")),
                     _e(_get(c, "detail"))]
                    for c in checks
                ],
            )
        )  # fmt: skip
    perf = _get(summary, "performance")
    if isinstance(perf, Mapping):
        parts.append("<h3>Performance</h3>")
        rows = [
            [html.escape(label), _e(_get(_get(perf, key), "p50")), _e(_get(_get(perf, key), "p90")),
             _e(_get(_get(perf, key), "p99"))]
            for key, label in _PERCENTILE_ROWS
        ]  # fmt: skip
        parts.append(_table(["", "p50", "p90", "p99"], rows))
        parts.append(
            f"<p>{_e(_get(perf, 'requests'))} requests, {_e(_get(perf, 'errors'))} errors, "
            f"{_e(_get(perf, 'requests_per_s'))} requests/s, "
            f"{_e(_get(perf, 'output_tokens_per_s'))} output tokens/s</p>"
        )
    elif "performance" in (summary if isinstance(summary, Mapping) else {}):
        parts.append("<h3>Performance</h3><p>No load test in this run.</p>")
    parts.append("</div>")
    return "".join(parts)
