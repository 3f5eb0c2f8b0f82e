"""Batch runs: one notebook run per row of a plan, on any ``concurrent.futures.Executor``.

A plan is a CSV file: ``run_id``, optional ``notebook`` (default ``onboarding``; a
name such as ``01_get_token`` or a path) and ``env_file`` (that school's LMREG_*
variables, secrets included), every other column a notebook parameter, typed as
the notebook's parameters cell declares. The whole plan is checked before
anything runs. Each run is its own papermill process with its own environment;
a failed run does not stop the others; a run that succeeded is skipped by the
next batch unless its plan row changed (or ``force``).

The default executor is a thread pool: each run is already a child process
(papermill and its kernel), so a thread only waits on it and then scrubs the
record; threads start instantly, need no pickling, and let Ctrl-C stop every
child. A distributed executor works too (the submitted function is module-level
and its argument plain data) when ``out_dir`` is on storage the workers share.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import html
import io
import json
import logging
import re
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .errors import ConfigurationError, LmregError
from .runner import RunResult, clean_environment, run_notebook, stop_all_runs, write_atomic
from .scrub import WINDOW, looks_secret, mask_text, secret_values

__all__ = [
    "DEFAULT_NOTEBOOK",
    "SUMMARY_COLUMNS",
    "BatchResult",
    "PlannedRun",
    "RunResult",
    "RunTask",
    "execute_run",
    "read_plan",
    "resolve_notebook",
    "run_batch",
    "run_notebook",
]

log = logging.getLogger("lmreg_nb")

DEFAULT_NOTEBOOK = "onboarding"
_RESERVED = ("run_id", "notebook", "env_file")
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_TRUE = {"true", "yes", "y", "1", "on"}
_FALSE = {"false", "no", "n", "0", "off"}
#: summary.csv's columns: the run, then the summary record's key figures.
SUMMARY_COLUMNS = (
    "run_id", "status", "duration_s", "error", "school", "summary_status", "models",
    "checks_passed", "checks_failed", "requests", "errors", "ttft_p50_ms", "itl_p50_ms",
    "latency_p50_ms", "requests_per_s", "output_tokens_per_s", "finished_at", "notebook", "html",
)  # fmt: skip


@dataclass(frozen=True)
class PlannedRun:
    """One checked row of a plan (parameters typed, no secret among them)."""

    run_id: str
    notebook: Path
    parameters: dict[str, Any]
    env_file: Path | None
    line: int


@dataclass(frozen=True)
class RunTask:
    """Everything a worker needs for one run: plain, picklable data."""

    run_id: str
    notebook: str
    run_dir: str
    parameters: dict[str, Any]
    env: dict[str, str] = field(repr=False)  # holds the run's secrets: never shown
    timeout: float | None
    fingerprint: str


@dataclass
class BatchResult:
    """What a batch did: every run's result (plan order), and which ran this time."""

    out_dir: Path
    runs: list[dict[str, Any]]
    executed: list[str]
    skipped: list[str]
    summary_csv: Path
    index_html: Path

    @property
    def failed(self) -> list[str]:
        """run_ids whose latest result is not ok."""
        return [r["run_id"] for r in self.runs if r.get("status") != "ok"]

    @property
    def ok(self) -> bool:
        """Whether every run succeeded."""
        return not self.failed


# ---------------------------------------------------------------- the plan


def resolve_notebook(name: str, base: Path | None = None) -> Path:
    """A notebook by name (``onboarding``, ``01_get_token``: the shipped notebooks) or path."""
    name = name.strip() or DEFAULT_NOTEBOOK
    if name.endswith(".ipynb") or "/" in name or "\\" in name:
        path = Path(name).expanduser()
        if not path.is_absolute() and base is not None:
            path = base / path
        if not path.is_file():
            raise ConfigurationError(f"notebook {path} does not exist")
        return path
    from .shipped import notebook_path

    return notebook_path(name)


def _declared_types(notebook: Path) -> dict[str, str]:
    """Parameter name -> type name, from the notebook's parameters cell."""
    import papermill

    types: dict[str, str] = {}
    for name, info in papermill.inspect_notebook(str(notebook)).items():
        kind = info.get("inferred_type_name") or "None"
        if kind == "None":
            # papermill reads only annotations; an unannotated default tells the type.
            try:
                kind = type(ast.literal_eval(info.get("default") or "None")).__name__
            except (ValueError, SyntaxError):
                kind = "str"
        types[name] = kind
    return types


def _convert(raw: str, kind: str) -> Any:
    kind = kind.lower()
    if kind == "int":
        return int(raw)
    if kind == "float":
        return float(raw)
    if kind == "bool":
        low = raw.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ValueError("not a bool")
    if kind in ("list", "dict", "tuple"):
        value = json.loads(raw)
        if not isinstance(value, list | dict):
            raise ValueError(f"not a {kind}")
        return value
    return raw  # str, NoneType and anything papermill could not name


def _load_env_file(path: Path, where: str) -> dict[str, str]:
    from dotenv import dotenv_values

    if not path.is_file():
        raise ConfigurationError(f"{where}: env file {path} does not exist")
    try:
        values = dotenv_values(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{where}: env file {path} is unreadable ({exc})") from exc
    return {k: v for k, v in values.items() if v is not None}


def read_plan(path: str | Path, *, env_file: Path | None = None) -> list[PlannedRun]:
    """Read and check a whole plan; ConfigurationError (one line: which line, which column)."""
    plan = Path(path)
    if not plan.is_file():
        raise ConfigurationError(
            f"plan {plan} does not exist: give a CSV file with a run_id column"
        )
    try:
        text = plan.read_text(encoding="utf-8-sig")  # utf-8-sig: Excel's byte order mark
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(
            f"plan {plan} is unreadable ({exc}); save it as UTF-8 CSV"
        ) from exc
    reader = csv.reader(io.StringIO(text))
    rows = [(reader.line_num, row) for row in reader]
    if not rows:
        raise ConfigurationError(f"plan {plan} is empty: it needs a header with run_id")
    header = [h.strip() for h in rows[0][1]]
    if "run_id" not in header:
        raise ConfigurationError(
            f"{plan.name} line 1: no run_id column (columns: {', '.join(header)})"
        )
    for i, name in enumerate(header):
        if not name:
            raise ConfigurationError(f"{plan.name} line 1: column {i + 1} has no name")
        if header.count(name) > 1:
            raise ConfigurationError(f"{plan.name} line 1: column {name} appears twice")
        if looks_secret(name):
            raise ConfigurationError(
                f"{plan.name} line 1: column {name} looks like a secret; secrets belong in "
                "the row's env_file, never in the plan"
            )
    common = _load_env_file(env_file, "--env-file") if env_file else {}
    types_of: dict[Path, dict[str, str]] = {}
    runs: list[PlannedRun] = []
    seen: set[str] = set()
    for line, values in rows[1:]:
        if not any(v.strip() for v in values):
            continue
        if len(values) > len(header):
            raise ConfigurationError(f"{plan.name} line {line}: more values than columns")
        cells = dict(zip(header, (v.strip() for v in values), strict=False))
        run_id = cells.get("run_id", "")
        where = f"{plan.name} line {line}"
        if not _RUN_ID.match(run_id):
            raise ConfigurationError(
                f"{where}, column run_id: {run_id!r} must be 1-100 letters, digits, '.', '_' "
                "or '-' (it names the run's folder)"
            )
        if run_id in seen:
            raise ConfigurationError(f"{where}, column run_id: {run_id} is used twice")
        seen.add(run_id)
        where = f"{plan.name} line {line} (run_id {run_id})"
        try:
            notebook = resolve_notebook(cells.get("notebook", ""), plan.parent)
        except ConfigurationError as exc:
            raise ConfigurationError(f"{where}, column notebook: {exc}") from None
        row_env_file = None
        env = dict(common)
        if cells.get("env_file"):
            row_env_file = Path(cells["env_file"]).expanduser()
            if not row_env_file.is_absolute():
                row_env_file = plan.parent / row_env_file
            env.update(_load_env_file(row_env_file, f"{where}, column env_file"))
        if notebook not in types_of:
            try:
                types_of[notebook] = _declared_types(notebook)
            except Exception as exc:  # papermill raises several types for a bad notebook
                raise ConfigurationError(
                    f"{where}, column notebook: {notebook} has no readable parameters "
                    f"({type(exc).__name__})"
                ) from None
        types = types_of[notebook]
        secrets = secret_values(clean_environment(env))
        parameters: dict[str, Any] = {}
        for name, raw in cells.items():
            if name in _RESERVED or raw == "":
                continue  # an empty cell keeps the notebook's default
            if name not in types:
                raise ConfigurationError(
                    f"{where}, column {name}: not a parameter of {notebook.name} "
                    f"(its parameters: {', '.join(types) or 'none'})"
                )
            try:
                parameters[name] = _convert(raw, types[name])
            except ValueError:
                raise ConfigurationError(
                    f"{where}, column {name}: {raw!r} is not a {types[name]}"
                ) from None
            if any(s == raw or (len(s) >= WINDOW and s in raw) for s in secrets.values()):
                raise ConfigurationError(
                    f"{where}, column {name}: holds a secret of the run's environment; "
                    "secrets belong in the env_file, never in the plan"
                )
        runs.append(PlannedRun(run_id, notebook, parameters, row_env_file, line))
    if not runs:
        raise ConfigurationError(f"plan {plan} has no runs: add a row under the header")
    return runs


def _fingerprint(run: PlannedRun) -> str:
    """Changes when the row changes: its notebook's path, its parameters, its env_file path.

    Not the notebook's content: a new toolkit version must not redo every school's
    onboarding unasked (``force`` does that).
    """
    digest = hashlib.sha256()
    payload = {
        "notebook": str(run.notebook.resolve()),
        "parameters": run.parameters,
        "env_file": str(run.env_file.resolve()) if run.env_file else None,
    }
    digest.update(json.dumps(payload, sort_keys=True, default=str).encode())
    return digest.hexdigest()


# ---------------------------------------------------------------- one run (the worker side)


def _key_figures(records: Mapping[str, Any]) -> dict[str, Any]:
    summary = records.get("summary")
    if not isinstance(summary, Mapping):
        return {}
    checks = [c for c in summary.get("checks") or [] if isinstance(c, Mapping)]
    perf_value = summary.get("performance")
    perf: Mapping[str, Any] = perf_value if isinstance(perf_value, Mapping) else {}

    def p50(key: str) -> Any:
        value = perf.get(key)
        return value.get("p50") if isinstance(value, Mapping) else None

    return {
        "school": summary.get("school"),
        "summary_status": summary.get("status"),
        "models": len(summary.get("models") or []),
        "checks_passed": sum(1 for c in checks if c.get("passed")),
        "checks_failed": sum(1 for c in checks if not c.get("passed")),
        "requests": perf.get("requests"),
        "errors": perf.get("errors"),
        "ttft_p50_ms": p50("ttft_ms"),
        "itl_p50_ms": p50("itl_ms"),
        "latency_p50_ms": p50("latency_ms"),
        "requests_per_s": perf.get("requests_per_s"),
        "output_tokens_per_s": perf.get("output_tokens_per_s"),
    }


def execute_run(task: RunTask) -> dict[str, Any]:
    """Run one planned notebook and write ``<run_dir>/result.json``; never raises for a bad run.

    Module-level and fed plain data, so any executor (a process pool, dask) can run it.
    """
    run_dir = Path(task.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    result: dict[str, Any] = {"run_id": task.run_id, "fingerprint": task.fingerprint}
    try:
        outcome: RunResult = run_notebook(
            Path(task.notebook), run_dir, parameters=task.parameters, env=task.env,
            timeout=task.timeout,
        )  # fmt: skip
        result.update(
            status=outcome.status,
            error=outcome.error,
            duration_s=round(outcome.duration_s, 2),
            notebook=outcome.notebook.name if outcome.notebook else None,
            html=outcome.html.name if outcome.html else None,
            **_key_figures(outcome.records),
        )
    except LmregError as exc:  # SecretLeakError, a bad notebook: the message holds no secret
        result.update(status="failed", error=str(exc), duration_s=time.monotonic() - started)
    except Exception as exc:  # a bug must not stop the batch; its message may quote a secret
        text = mask_text(f"{type(exc).__name__}: {exc}", secret_values(task.env))
        log.exception("run %s crashed", task.run_id)
        result.update(status="failed", error=" ".join(text.split())[:300],
                      duration_s=time.monotonic() - started)  # fmt: skip
    result["duration_s"] = round(float(result["duration_s"]), 2)
    result["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    write_atomic(run_dir / "result.json", json.dumps(result, indent=2, default=str) + "\n")
    return result


# ---------------------------------------------------------------- the batch


def _previous(run_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((run_dir / "result.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _csv_cell(value: Any) -> Any:
    # A spreadsheet runs a cell starting with = + - @ as a formula; these values
    # come from servers and forms, so such text is quoted (numbers are left alone).
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@"):
        try:
            float(value)
        except ValueError:
            return "'" + value
    return value


def write_summary_csv(path: Path, runs: Sequence[Mapping[str, Any]]) -> None:
    """summary.csv: one row per run, SUMMARY_COLUMNS."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=SUMMARY_COLUMNS, extrasaction="ignore")
    writer.writeheader()
    for run in runs:
        row = {k: _csv_cell(run.get(k)) for k in SUMMARY_COLUMNS}
        for key in ("notebook", "html"):
            if run.get(key):
                row[key] = f"{run['run_id']}/{run[key]}"
        writer.writerow(row)
    write_atomic(path, buffer.getvalue())


def write_index_html(path: Path, runs: Sequence[Mapping[str, Any]]) -> None:
    """index.html: every run, its status and links to its records (all values escaped)."""
    rows = []
    for run in runs:
        rid = str(run.get("run_id"))
        status = str(run.get("status") or "not run")
        links = " ".join(
            f'<a href="{html.escape(rid)}/{html.escape(str(run[key]))}">{label}</a>'
            for key, label in (("html", "record"), ("notebook", ".ipynb"))
            if run.get(key)
        )
        css = status if status in ("ok", "failed") else "none"
        rows.append(
            f"<tr><td>{html.escape(rid)}</td><td class='{css}'>{html.escape(status)}</td>"
            f"<td>{html.escape(str(run.get('school') or ''))}</td>"
            f"<td>{html.escape(str(run.get('duration_s') or ''))}</td>"
            f"<td>{html.escape(str(run.get('error') or ''))}</td><td>{links}</td></tr>"
        )
    failed = sum(1 for r in runs if r.get("status") != "ok")
    page = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Onboarding batch</title>"
        "<style>body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}"
        ".ok{background:#d4f4dd}.failed{background:#fde0e0}.none{background:#eee}</style>"
        f"</head><body><h1>Onboarding batch</h1><p>{len(runs)} runs, {failed} not ok. "
        "Updated " + html.escape(datetime.now(UTC).isoformat(timespec="seconds")) + ".</p>"
        "<table><thead><tr><th>run</th><th>status</th><th>school</th><th>seconds</th>"
        "<th>error</th><th>records</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
        "</body></html>\n"
    )
    write_atomic(path, page)


def run_batch(
    plan: str | Path | Sequence[PlannedRun],
    out_dir: str | Path,
    *,
    jobs: int = 1,
    executor: Executor | None = None,
    timeout: float | None = 600.0,
    force: bool = False,
    env_file: Path | None = None,
    progress: bool = True,
) -> BatchResult:
    """Run every row of ``plan`` (a CSV path, or rows from :func:`read_plan`) into ``out_dir``.

    ``executor`` (any concurrent.futures.Executor, e.g. a dask client's
    ``get_executor()``) is used as given and not shut down; by default a thread
    pool of ``jobs`` workers drives the papermill processes.
    """
    runs = read_plan(plan, env_file=env_file) if isinstance(plan, str | Path) else list(plan)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    common = _load_env_file(env_file, "--env-file") if env_file else {}
    results: dict[str, dict[str, Any]] = {}
    tasks: list[RunTask] = []
    skipped: list[str] = []
    for run in runs:
        run_dir = out / run.run_id
        fingerprint = _fingerprint(run)
        previous = _previous(run_dir)
        if (
            not force and previous and previous.get("status") == "ok"
            and previous.get("fingerprint") == fingerprint
            and (run_dir / str(previous.get("notebook"))).is_file()  # its record is still there
        ):  # fmt: skip
            results[run.run_id] = previous
            skipped.append(run.run_id)
            continue
        env = dict(common)
        if run.env_file:
            env.update(_load_env_file(run.env_file, f"run {run.run_id}"))
        tasks.append(
            RunTask(run.run_id, str(run.notebook), str(run_dir), run.parameters, env,
                    timeout, fingerprint)
        )  # fmt: skip

    own = executor is None
    pool = executor or ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="lmreg-run")
    from tqdm.auto import tqdm

    bar = tqdm(total=len(tasks), unit="run", desc="runs", disable=not progress or not tasks)
    counts = {"ok": 0, "failed": 0}
    try:
        futures: dict[Future[dict[str, Any]], RunTask] = {
            pool.submit(execute_run, task): task for task in tasks
        }
        for future in as_completed(futures):
            task = futures[future]
            try:
                result = future.result()
            except Exception as exc:  # the executor itself failed (a lost dask worker)
                result = {"run_id": task.run_id, "status": "failed",
                          "error": f"the executor lost the run: {type(exc).__name__}"}  # fmt: skip
            results[task.run_id] = result
            counts["ok" if result.get("status") == "ok" else "failed"] += 1
            bar.set_postfix(counts, refresh=False)
            bar.update()
    except BaseException:
        # Ctrl-C: cancel what has not started and stop what has (their kernels too).
        if own:
            pool.shutdown(wait=False, cancel_futures=True)
        stop_all_runs()
        raise
    finally:
        bar.close()
        if own:
            pool.shutdown(wait=True)
    ordered = [results.get(r.run_id) or {"run_id": r.run_id, "status": "not run"} for r in runs]
    summary_csv, index_html = out / "summary.csv", out / "index.html"
    write_summary_csv(summary_csv, ordered)
    write_index_html(index_html, ordered)
    return BatchResult(
        out_dir=out, runs=ordered, executed=[t.run_id for t in tasks], skipped=skipped,
        summary_csv=summary_csv, index_html=index_html,
    )  # fmt: skip
