"""Batch runs: one notebook run per row of a plan, on any ``concurrent.futures.Executor``.

A plan (:mod:`lmreg_nb.batch.plan`) is a CSV file, checked whole before anything
runs. Each run is its own papermill process with its own environment; a failed
run does not stop the others; a run that succeeded is skipped by the next batch
unless its plan row changed (or ``force``). ``summary.csv`` and ``index.html``
(:mod:`lmreg_nb.batch.report`) give the overview.

The default executor is a thread pool: each run is already a child process
(papermill and its kernel), so a thread only waits on it and then scrubs the
record; threads start instantly, need no pickling, and let SIGINT or SIGTERM stop
every child. A distributed executor works too (the submitted function is
module-level and its argument plain data) when ``out_dir`` is on storage the
workers share.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import LmregError
from ..i18n import _, current_language, speaking
from ..runner import RunResult, run_notebook, write_atomic
from ..runner.runs import Interrupted, interruptible, resume_runs, stop_all_runs
from ..runner.scrub import secret_values
from ..secret import mask_text
from ..settings import ENV_FROM
from .plan import (
    DEFAULT_NOTEBOOK,
    PlannedRun,
    fingerprint,
    load_env_file,
    read_plan,
    resolve_notebook,
)
from .report import SUMMARY_COLUMNS, key_figures, write_index_html, write_summary_csv

__all__ = [
    "DEFAULT_NOTEBOOK",
    "SUMMARY_COLUMNS",
    "BatchResult",
    "PlannedRun",
    "RunResult",
    "RunTask",
    "execute_run",
    "key_figures",
    "read_plan",
    "resolve_notebook",
    "run_batch",
    "run_notebook",
    "write_index_html",
    "write_summary_csv",
]

log = logging.getLogger("lmreg_nb")


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

    @property
    def kernel_retries(self) -> int:
        """How many runs of this batch needed a second kernel start."""
        return sum(1 for r in self.runs if r.get("kernel_retried") and r["run_id"] in self.executed)


# ---------------------------------------------------------------- one run (the worker side)


def _outcome(outcome: RunResult) -> dict[str, Any]:
    return {
        "status": outcome.status,
        "error": outcome.error,
        "duration_s": outcome.duration_s,
        "kernel_retried": outcome.kernel_retried,
        "notebook": outcome.notebook.name if outcome.notebook else None,
        "html": outcome.html.name if outcome.html else None,
        "short_html": outcome.short_html.name if outcome.short_html else None,
        **{k: v for k, v in key_figures(outcome.summary).items() if v is not None},
    }


def execute_run(task: RunTask) -> dict[str, Any]:
    """Run one planned notebook and write ``<run_dir>/result.json``; never raises for a bad run.

    Module-level and fed plain data, so any executor (a process pool, dask) can run it.
    """
    run_dir = Path(task.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    # A run that fails before its summary is recorded still shows its school.
    result: dict[str, Any] = {"run_id": task.run_id, "fingerprint": task.fingerprint,
                              "school": task.parameters.get("school")}  # fmt: skip
    try:
        outcome = run_notebook(
            Path(task.notebook), run_dir, parameters=task.parameters, env=task.env,
            timeout=task.timeout,
        )  # fmt: skip
        result.update(_outcome(outcome))
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


def _tasks(
    runs: Sequence[PlannedRun], out: Path, common: dict[str, str], timeout: float | None,
    force: bool,
) -> tuple[list[RunTask], dict[str, dict[str, Any]]]:  # fmt: skip
    """The runs to do, and the earlier results of the runs to skip."""
    tasks: list[RunTask] = []
    kept: dict[str, dict[str, Any]] = {}
    for run in runs:
        run_dir = out / run.run_id
        print_ = fingerprint(run)
        previous = _previous(run_dir)
        if (
            not force and previous and previous.get("status") == "ok"
            and previous.get("fingerprint") == print_
            and (run_dir / str(previous.get("notebook"))).is_file()  # its record is still there
        ):  # fmt: skip
            kept[run.run_id] = previous
            continue
        env = dict(common)
        if run.env_file:
            env.update(load_env_file(run.env_file, _("run {run_id}").format(run_id=run.run_id)))
            env[ENV_FROM] = str(run.env_file)  # the record's configuration names it
        if run.lang:
            env["LMREG_LANG"] = run.lang  # every sentence of the run in the row's language
        tasks.append(
            RunTask(run.run_id, str(run.notebook), str(run_dir), run.parameters, env,
                    timeout, print_)
        )  # fmt: skip
    return tasks, kept


def _result(future: Future[dict[str, Any]], task: RunTask) -> dict[str, Any]:
    try:
        return future.result()
    except Exception as exc:  # the executor itself failed (a lost dask worker)
        error = _("the executor lost the run: {kind}").format(kind=type(exc).__name__)
        return {"run_id": task.run_id, "status": "failed", "error": error,
                "school": task.parameters.get("school")}  # fmt: skip


def _drive(
    pool: Executor,
    futures: dict[Future[dict[str, Any]], RunTask],
    tasks: Sequence[RunTask],
    results: dict[str, dict[str, Any]],
    progress: bool,
) -> None:
    """Submit every task (into ``futures``) and collect the results as they come."""
    from tqdm.auto import tqdm

    # The bar's words in the batch's language: "runs: … ok=1, failed=0" read as English.
    bar = tqdm(
        total=len(tasks), unit=_("run"), desc=_("runs"),
        disable=not progress or not tasks,
    )  # fmt: skip
    ok = failed = 0
    try:
        futures.update({pool.submit(execute_run, task): task for task in tasks})
        for future in as_completed(futures):
            result = results[futures[future].run_id] = _result(future, futures[future])
            ok, failed = (ok + 1, failed) if result.get("status") == "ok" else (ok, failed + 1)
            bar.set_postfix_str(_("{ok} ok, {failed} failed").format(ok=ok, failed=failed))
            bar.update()
    finally:
        bar.close()


def _run_all(
    executor: Executor | None,
    jobs: int,
    futures: dict[Future[dict[str, Any]], RunTask],
    tasks: Sequence[RunTask],
    results: dict[str, dict[str, Any]],
    progress: bool,
) -> Interrupted | None:
    """Drive the tasks on ``executor`` (else a pool of our own); the interruption, if one came."""
    own = executor is None
    pool = executor or ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="lmreg-run")
    with interruptible():
        try:
            _drive(pool, futures, tasks, results, progress)
        except BaseException as exc:
            # Stop what has started (their kernels too), cancel what has not.
            reason = exc.reason if isinstance(exc, Interrupted) else _("interrupted")
            if own:
                pool.shutdown(wait=False, cancel_futures=True)
            stop_all_runs(reason)
            if not isinstance(exc, Interrupted):
                raise
            return exc
        finally:
            if own:
                pool.shutdown(wait=True)  # the stopped runs write their records first
            resume_runs()
    return None


def _in_plan_order(
    runs: Sequence[PlannedRun],
    futures: dict[Future[dict[str, Any]], RunTask],
    results: dict[str, dict[str, Any]],
) -> list[dict[str, Any]]:
    """Every run's result in plan order, those stopped by an interruption included."""
    for future, task in futures.items():  # the runs stopped by an interruption
        if task.run_id not in results and future.done() and not future.cancelled():
            results[task.run_id] = _result(future, task)
    return [
        results.get(r.run_id)
        or {"run_id": r.run_id, "status": "not run", "school": r.parameters.get("school")}
        for r in runs
    ]


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
    lang: str | None = None,
) -> BatchResult:
    """Run every row of ``plan`` (a CSV path, or rows from :func:`read_plan`) into ``out_dir``.

    ``executor`` (any concurrent.futures.Executor, e.g. a dask client's
    ``get_executor()``) is used as given and not shut down; by default a thread
    pool of ``jobs`` workers drives the papermill processes. On SIGINT or SIGTERM
    the runs are stopped (their records name the interruption), summary.csv and
    index.html are written, then :class:`~lmreg_nb.runner.runs.Interrupted` is raised.
    ``lang``: the language of every run without a ``lang`` of its own, and of
    summary.csv and index.html (default: the current language).
    """
    lang = lang or current_language()
    if isinstance(plan, str | Path):
        runs = read_plan(plan, env_file=env_file, lang=lang, check_contacts=True)
    else:
        runs = list(plan)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    common = load_env_file(env_file, "--env-file") if env_file else {}
    tasks, results = _tasks(runs, out, common, timeout, force)
    skipped = list(results)
    futures: dict[Future[dict[str, Any]], RunTask] = {}
    interrupted = _run_all(executor, jobs, futures, tasks, results, progress)
    ordered = _in_plan_order(runs, futures, results)
    summary_csv, index_html = out / "summary.csv", out / "index.html"
    with speaking(lang):
        write_summary_csv(summary_csv, ordered)
        write_index_html(index_html, ordered)
    if interrupted is not None:
        raise interrupted
    return BatchResult(
        out_dir=out, runs=ordered, executed=[t.run_id for t in tasks], skipped=skipped,
        summary_csv=summary_csv, index_html=index_html,
    )  # fmt: skip
