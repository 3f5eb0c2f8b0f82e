"""Wall time of `lmreg-nb batch` runs next to plain papermill, in one process run.

Prints JSON lines (one object per line, each with a "bench" name):

- ``papermill_baseline``: ``python -m papermill`` on an empty notebook, N times in a row
  (what any papermill-based batch pays: interpreter start, kernel start, save), once
  before and once after the batches (the machine's load moves), reported as their mean;
- ``batch_empty`` at ``--jobs 1`` and ``--jobs 2``: the same empty notebook through
  run_batch (clean environment, scrub, HTML copy, atomic writes, state files), with
  ``overhead_vs_papermill`` = wall time / baseline's;
- ``batch_onboarding`` at ``--jobs 2``: the onboarding notebook (check_requests=0)
  against a sandbox process, the realistic case (skip with --no-onboarding);
- ``kernel_starts``: 16 runs of the empty notebook at ``--jobs 4``, 3 times, counting
  the kernels that failed to start (each retried once) and the runs that failed, with
  the ipc transport (the default where ZeroMQ has it) and with TCP for comparison
  (``--kernel-starts`` runs only this one).

Usage: python bench/bench_batch.py [--runs 8] [--no-onboarding] [--kernel-starts]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lmreg_nb.batch import read_plan, run_batch

EMPTY = Path(__file__).resolve().parent.parent / "tests" / "data" / "empty.ipynb"


def emit(**fields: object) -> None:
    """One JSON line on stdout."""
    print(json.dumps(fields), flush=True)


def papermill_baseline(runs: int, work: Path) -> float:
    """Seconds for ``runs`` sequential `python -m papermill` runs of the empty notebook."""
    started = time.perf_counter()
    for i in range(runs):
        subprocess.run(
            [sys.executable, "-m", "papermill", str(EMPTY), str(work / f"pm-{i}.ipynb"),
             "--no-progress-bar", "--log-level", "WARNING"],
            check=True, stdin=subprocess.DEVNULL, capture_output=True,
        )  # fmt: skip
    return time.perf_counter() - started


def batch(plan_text: str, runs_dir: Path, jobs: int) -> tuple[float, int]:
    """Seconds for one run_batch of the plan, and how many runs failed."""
    runs_dir.mkdir(parents=True)
    plan = runs_dir / "plan.csv"
    plan.write_text(plan_text)
    started = time.perf_counter()
    result = run_batch(read_plan(plan), runs_dir / "out", jobs=jobs, timeout=300, progress=False)
    return time.perf_counter() - started, len(result.failed)


def kernel_starts(work: Path, runs: int, jobs: int, reps: int) -> None:
    """Kernel-start failures of parallel runs, over ipc and over TCP (JSON line each)."""
    import lmreg_nb.runner

    ipc = lmreg_nb.runner.ipc_prefix
    plan_text = "run_id,notebook\n" + "".join(f"k{i},{EMPTY}\n" for i in range(runs))
    for transport in ("ipc", "tcp"):
        # TCP: what plain papermill does (ports picked, then bound by the kernel: a race).
        lmreg_nb.runner.ipc_prefix = ipc if transport == "ipc" else (lambda folder: None)
        retried = failed = 0
        walls = []
        try:
            for rep in range(reps):
                folder = work / f"kernels-{transport}-{rep}"
                folder.mkdir()
                (folder / "plan.csv").write_text(plan_text)
                started = time.perf_counter()
                result = run_batch(read_plan(folder / "plan.csv"), folder / "out", jobs=jobs,
                                   timeout=300, progress=False)  # fmt: skip
                walls.append(time.perf_counter() - started)
                retried += result.kernel_retries
                failed += len(result.failed)
        finally:
            lmreg_nb.runner.ipc_prefix = ipc
        if transport == "ipc" and ipc(work) is None:
            transport = "tcp (ipc unavailable here)"
        emit(bench="kernel_starts", transport=transport, runs=runs, jobs=jobs, repetitions=reps,
             kernel_start_failures=retried, failed_runs=failed,
             wall_s=[round(w, 1) for w in walls], load_1m=round(os.getloadavg()[0], 2))  # fmt: skip


def main() -> None:
    """Run the benchmarks and print their JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--no-onboarding", action="store_true")
    parser.add_argument("--kernel-starts", action="store_true", help="only the kernel bench")
    args = parser.parse_args()
    n = args.runs
    if args.kernel_starts:
        with tempfile.TemporaryDirectory(prefix="bench-kernels-") as tmp:
            kernel_starts(Path(tmp), runs=16, jobs=4, reps=3)
        return
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
        work = Path(tmp)
        # The machine is shared and its load moves: the baseline runs before and
        # after the batches, and the overhead is taken against their mean.
        before = papermill_baseline(n, work)
        empty_plan = "run_id,notebook\n" + "".join(f"r{i},{EMPTY}\n" for i in range(n))
        walls = {jobs: batch(empty_plan, work / f"empty-j{jobs}", jobs) for jobs in (1, 2)}
        after = papermill_baseline(n, work)
        base = (before + after) / 2
        emit(bench="papermill_baseline", notebook="empty", runs=n, wall_s=round(base, 2),
             wall_before_s=round(before, 2), wall_after_s=round(after, 2),
             per_run_s=round(base / n, 2), load_1m=round(os.getloadavg()[0], 2))  # fmt: skip
        for jobs, (wall, failed) in walls.items():
            emit(bench="batch_empty", notebook="empty", runs=n, jobs=jobs, wall_s=round(wall, 2),
                 per_run_s=round(wall / n, 2), failed=failed,
                 overhead_vs_papermill=round(wall / base, 2))  # fmt: skip
        if args.no_onboarding:
            return
        from lmreg_nb.sandbox.process import running_sandbox

        with running_sandbox() as sandbox:
            env_file = work / "school.env"
            env_file.write_text("".join(f"{k}={v}\n" for k, v in sandbox.env().items()))
            rows = "".join(
                f"o{i},onboarding,{env_file},School {i},Li Hua,13812345678,ai@school.example,"
                f"bench-{i},0\n"
                for i in range(n)
            )
            plan = (
                "run_id,notebook,env_file,school,contact_name,contact_mobile,contact_email,"
                "model_name,check_requests\n" + rows
            )
            wall, failed = batch(plan, work / "onboarding-j2", 2)
            emit(bench="batch_onboarding", notebook="onboarding", runs=n, jobs=2,
                 wall_s=round(wall, 2), per_run_s=round(wall / n, 2), failed=failed,
                 ratio_vs_papermill_empty=round(wall / base, 2),
                 load_1m=round(os.getloadavg()[0], 2))  # fmt: skip


if __name__ == "__main__":
    main()
