"""Where the headless onboarding's own time goes, inside the kernel (issue 34).

Runs the code cells of notebooks/onboarding.ipynb in an IPython shell in this
process (no kernel, no papermill: that side is timed apart below), with issue
34's parameters, against a sandbox started with ``--ttft-ms 50 --itl-ms 10
--tokens 32``, and a private LMREG_TOKEN_CACHE. Each cell's result is
formatted as a notebook would store it (text/plain and text/html), so display
work counts too.

Prints one JSON line per cell (``cell``, ``seconds``, the first source line),
then ``kernel_total``; then papermill's side: ``papermill_cell_floor``, a
notebook of as many ``pass`` cells as the onboarding has code cells, next to a
one-cell one (the per-cell cost papermill and the kernel add). With
``--profile FILE`` also pyinstrument's text report of the cells (pip install
pyinstrument) written to FILE.

    python bench/profile_onboarding.py [--profile /tmp/onboarding.txt] [--no-papermill]
        [--real N [--baseline DIR]]

``--real N``: N papermill runs of the onboarding as issue 34's A, each cell's time
in the kernel and the gap before it (papermill's saves), from papermill's own
cell metadata; with ``--baseline DIR`` an earlier tree's runs in turn.
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

ISSUE_PARAMETERS = {
    "school": "Bench", "contact_name": "Li", "contact_mobile": "13800000000",
    "contact_email": "li@school.example", "model_name": "bench-model",
    "check_requests": "0", "check_concurrency": "1", "class_size": "0",
}  # fmt: skip
PARAMETERS = """\
school = "Bench"
contact_name = "Li"
contact_mobile = "13800000000"
contact_email = "li@school.example"
model_name = "bench-model"
check_requests = 0
check_concurrency = 1
class_size = 0
"""
KNOBS = ("--ttft-ms", "50", "--itl-ms", "10", "--tokens", "32")


def _cells() -> list[str]:
    import nbformat

    from lmreg_nb.runner.shipped import notebook_path

    nb = nbformat.read(notebook_path("onboarding"), as_version=4)
    sources: list[str] = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        sources.append(cell.source)
        if "parameters" in cell.metadata.get("tags", []):
            sources.append(PARAMETERS)  # papermill's injected-parameters cell
    return sources


def kernel_side(cells: list[str], profile: Path | None) -> None:
    """Run the cells in an IPython shell in this process, one JSON line a cell.

    This runs in a child process that has imported nothing of the toolkit (nor
    httpx), as a kernel has not: the cells' imports are counted.
    """
    import contextlib
    import io

    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.display_formatter.active_types = ["text/plain", "text/html"]
    profiler = None
    if profile is not None:
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.0005)
        profiler.start()
    total = 0.0
    for number, source in enumerate(cells, 1):
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):  # the cells' shown results
            result = shell.run_cell(source, store_history=False, silent=False)
        took = time.perf_counter() - start
        total += took
        first = source.strip().splitlines()[0] if source.strip() else ""
        line = {"bench": "kernel_cell", "cell": number, "seconds": round(took, 3), "source": first}
        print(json.dumps({**line, "ok": result.success}), flush=True)
    print(json.dumps({"bench": "kernel_total", "seconds": round(total, 3)}), flush=True)
    if profiler is not None and profile is not None:
        profiler.stop()
        profile.write_text(profiler.output_text(unicode=True, show_all=False), encoding="utf-8")


def _papermill(notebook: Path, env: dict[str, str]) -> float:
    out = notebook.with_name("out-" + notebook.name)
    command = [str(Path(sys.executable).with_name("papermill")), "--no-progress-bar",
               "-k", "python3", str(notebook), str(out)]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def _passes(path: Path, count: int) -> Path:
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    nb = new_notebook(cells=[new_code_cell("pass") for _ in range(count)])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, path)
    return path


def papermill_side(tmp: Path, count: int, rounds: int = 3) -> None:
    """Papermill's per-cell cost: as many ``pass`` cells as the onboarding runs, next to one."""
    many, one = _passes(tmp / "many.ipynb", count), _passes(tmp / "one.ipynb", 1)
    env = dict(os.environ)
    _papermill(one, env)  # warm the disk cache
    diffs = []
    for _ in range(rounds):
        a, b = _papermill(many, env), _papermill(one, env)
        diffs.append(a - b)
        per_cell_ms = round((a - b) / (count - 1) * 1000, 1)
        line = {"bench": "papermill_cells", "cells": count, "many_s": round(a, 3),
                "one_s": round(b, 3), "per_cell_ms": per_cell_ms}  # fmt: skip
        print(json.dumps(line), flush=True)


def real_run(tmp: Path, env: dict[str, str], trees: dict[str, Path], rounds: int) -> None:
    """The onboarding through papermill, as issue 34's A: where each cell's wall time goes.

    One ``papermill_cell`` line per code cell of the last round (``run_s``: the
    cell in the kernel; ``gap_s``: from the previous cell's end, papermill's saves of
    the notebook and the markdown cells between), then ``papermill_phases``: start
    to first cell, the cells, the last cell to exit.
    """
    from datetime import datetime

    flags = [str(f) for k, v in ISSUE_PARAMETERS.items() for f in ("-p", k, v)]
    for number in range(rounds):
        for tree, notebook in trees.items():
            tree_env = env if tree == "this" else {**env, "PYTHONPATH": str(notebook.parents[1])}
            out = tmp / f"real-{tree}.ipynb"
            command = [str(Path(sys.executable).with_name("papermill")), "--no-progress-bar",
                       "-k", "python3", str(notebook), str(out), *flags]  # fmt: skip
            start = time.time()
            subprocess.run(command, env=tree_env, check=True, capture_output=True)
            end = time.time()
            nb = json.loads(out.read_text(encoding="utf-8"))
            cells = [(c, c["metadata"]["papermill"]) for c in nb["cells"]]
            stamp = datetime.fromisoformat
            first = stamp(cells[0][1]["start_time"]).timestamp()
            last = stamp(cells[-1][1]["end_time"]).timestamp()
            before = first
            for index, (cell, meta) in enumerate(cells):
                began, ended = (
                    stamp(meta["start_time"]).timestamp(),
                    stamp(meta["end_time"]).timestamp(),
                )
                if cell["cell_type"] == "code" and number == rounds - 1:
                    source = "".join(cell["source"]).strip().splitlines()[0][:60]
                    line = {"bench": "papermill_cell", "tree": tree, "cell": index,
                            "run_s": round(ended - began, 3), "gap_s": round(began - before, 3),
                            "source": source}  # fmt: skip
                    print(json.dumps(line), flush=True)
                if cell["cell_type"] == "code":
                    before = ended
            line = {"bench": "papermill_phases", "tree": tree, "round": number,
                    "wall_s": round(end - start, 3), "to_first_cell_s": round(first - start, 3),
                    "cells_s": round(last - first, 3),
                    "after_last_s": round(end - last, 3)}  # fmt: skip
            print(json.dumps(line), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", type=Path, help="write pyinstrument's report here")
    parser.add_argument("--no-papermill", action="store_true", help="only the kernel side")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)  # the cells, as JSON
    parser.add_argument(
        "--real", type=int, default=0, help="also this many papermill runs, cell by cell"
    )
    parser.add_argument("--baseline", type=Path, help="with --real: an earlier tree too")
    args = parser.parse_args()
    if args.child is not None:
        kernel_side(json.loads(args.child.read_text(encoding="utf-8")), args.profile)
        return
    from lmreg_nb.sandbox.process import running_sandbox

    with (
        tempfile.TemporaryDirectory(prefix="lmreg-profile-") as tmp_name,
        running_sandbox(args=KNOBS) as sandbox,
    ):
        tmp = Path(tmp_name)
        env = {k: v for k, v in os.environ.items() if not k.startswith("LMREG_")}
        env.update(sandbox.env(), LMREG_TOKEN_CACHE=str(tmp / "tokens.json"))
        cells = _cells()
        (tmp / "cells.json").write_text(json.dumps(cells), encoding="utf-8")
        child = [sys.executable, __file__, "--child", str(tmp / "cells.json")]
        if args.profile is not None:
            child += ["--profile", str(args.profile)]
        subprocess.run(child, env=env, check=True)
        if args.real:
            from lmreg_nb.runner.shipped import notebook_path

            trees = {"this": notebook_path("onboarding")}
            if args.baseline is not None:
                trees["baseline"] = args.baseline / "notebooks" / "onboarding.ipynb"
            real_run(tmp, env, trees, args.real)
        if not args.no_papermill:
            papermill_side(tmp, len(cells))


if __name__ == "__main__":
    main()
