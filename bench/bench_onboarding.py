"""Wall time of a headless onboarding run next to papermill streaming one chat reply.

Prints JSON lines (one object per line, each with a "bench" name). By default
only issue 34's measure, exactly as the issue defines it:

- one sandbox with ``--ttft-ms 50 --itl-ms 10 --tokens 32``, the environment's
  LMREG_* pointing at it and a private LMREG_TOKEN_CACHE;
- A: ``papermill --no-progress-bar -k python3 notebooks/onboarding.ipynb OUT``
  with the issue's ``-p`` flags (no load test, no capacity);
- B: papermill of a one-cell notebook streaming one chat (model "m", "hi")
  with httpx from LMREG_MODEL_URL, read to the end;
- ``--rounds`` (4) alternating rounds of A then B, so load on the shared
  machine hits both; the first round is dropped; one ``issue34_round`` line a
  round (``ratio`` = A/B of that round), then ``issue34`` with the median of
  the kept rounds' A/B (goal <= 1.3, moonshot 1.15).

With ``--full``, also the older series, all from one run:

- ``papermill_empty``: ``python -m papermill`` on a one-cell notebook (interpreter
  start, kernel start, save): the floor of any papermill run;
- ``papermill_onboarding``: the same command on notebooks/onboarding.ipynb with
  check_requests=0 against a sandbox process (contact card, token, register or
  update, list, conformance checks, chat reply, summary record), with
  ``ratio_vs_empty`` = its median / the empty notebook's median (goal: <= 1.5).
  The mock school model answers with no added latency (``--ttft-ms 0 --itl-ms 0``):
  its sleeps are the school's time, not the toolkit's; ``--mock-latency`` keeps
  the sandbox's defaults instead;
- ``run_notebook_onboarding``: the same run through ``lmreg_nb.batch.run_notebook``
  (clean environment, scrub, HTML copy), repeated in one process as a batch does;
- ``cli_onboard``: ``lmreg-nb onboard`` in a fresh process each time (the CLI's
  start, the run, and a cold HTML exporter): what support pays for one school;
- then, against a second sandbox whose mock has the sandbox's default latency
  (50 ms to first token, 10 ms between tokens, 32 tokens), ``papermill_chat``:
  a one-cell notebook streaming one chat reply from that mock (the wait no
  toolkit can avoid), and ``papermill_onboarding_latency`` with
  ``ratio_vs_chat`` = its median / that baseline's (goal: <= 1.3);
- ``papermill_onboarding_class``: the same onboarding with a class of 40 (the
  notebook's default ``class_size``: the capacity step measures it), against
  that mock; with ``--baseline DIR`` also ``tree: baseline``, the same run with
  the lmreg_nb and notebooks found in DIR (e.g. ``git archive`` of an earlier
  commit), for a before/after in the same run.

Usage: python bench/bench_onboarding.py [--rounds 4] [--repeat 1]
       [--full [--runs 3] [--baseline DIR]]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import nbformat
import yaml
from nbformat.v4 import new_code_cell, new_notebook

import lmreg_nb
from lmreg_nb.batch import run_notebook
from lmreg_nb.runner.shipped import notebook_path
from lmreg_nb.sandbox.process import SandboxInfo, running_sandbox

PARAMETERS = {
    "school": "Bench School",
    "contact_name": "Li Hua",
    "contact_mobile": "13800138000",
    "contact_email": "ops@bench.example",
    "model_name": "bench-model",
    "check_requests": 0,
    "check_concurrency": 1,
    "class_size": 0,
}

#: The baseline with a real model's latency: one streamed chat reply, nothing else.
CHAT_CELL = """\
import os, httpx
with httpx.stream(
    "POST", os.environ["LMREG_MODEL_URL"], timeout=30,
    headers={"Authorization": "Bearer " + os.environ["LMREG_MODEL_API_KEY"]},
    json={"model": os.environ["LMREG_MODEL_NAME"], "stream": True,
          "messages": [{"role": "user", "content": "Hello"}]},
) as reply:
    text = "".join(reply.iter_text())
"""


#: Issue 34's B: one streamed chat with httpx, read to the end (the wait no toolkit avoids).
ISSUE_CHAT_CELL = """\
import os, httpx
with httpx.stream(
    "POST", os.environ["LMREG_MODEL_URL"], timeout=30,
    headers={"Authorization": "Bearer " + os.environ["LMREG_MODEL_API_KEY"]},
    json={"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True},
) as reply:
    for _ in reply.iter_bytes():
        pass
"""
#: Issue 34's sandbox: a real model's latency.
ISSUE_KNOBS = ("--ttft-ms", "50", "--itl-ms", "10", "--tokens", "32")
#: Issue 34's A, the -p flags exactly as the issue gives them.
ISSUE_FLAGS = (
    "-p", "school", "Bench", "-p", "contact_name", "Li", "-p", "contact_mobile", "13800000000",
    "-p", "contact_email", "li@school.example", "-p", "model_name", "bench-model",
    "-p", "check_requests", "0", "-p", "check_concurrency", "1", "-p", "class_size", "0",
)  # fmt: skip


def _papermill_cli(notebook: Path, out: Path, env: dict[str, str], flags: tuple[str, ...]) -> float:
    """Seconds one ``papermill`` command takes (the CLI next to this interpreter).

    Its CPU seconds (papermill and its kernel, both reaped) go to :data:`CPU`: on a
    shared machine they say what the wall time cannot.
    """
    papermill = Path(sys.executable).with_name("papermill")
    command = [str(papermill), "--no-progress-bar", "-k", "python3", str(notebook), str(out)]
    before = _children_cpu()
    start = time.perf_counter()
    subprocess.run(
        [*command, *flags], env=env, check=True, cwd=out.parent,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    took = time.perf_counter() - start
    CPU.append(_children_cpu() - before)
    return took


#: CPU seconds of each papermill run, in order.
CPU: list[float] = []


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def issue_measure(rounds: int, tmp: Path, repeat: int = 1, baseline: Path | None = None) -> None:
    """Issue 34's measure: alternating rounds of A and B, the first dropped, median of A/B.

    With ``baseline`` (a tree holding lmreg_nb/ and notebooks/, e.g. ``git archive`` of
    an earlier commit), each round also runs that tree's A next to this one's (in turn first).
    """
    with running_sandbox(args=ISSUE_KNOBS) as sandbox:
        env = _env(sandbox, tmp)
        chat = _one_cell(tmp / "issue-chat.ipynb", ISSUE_CHAT_CELL)
        trees = {"this": (notebook_path("onboarding"), env)}
        if baseline is not None:
            old_env = {**env, "PYTHONPATH": str(baseline)}
            trees["baseline"] = (baseline / "notebooks" / "onboarding.ipynb", old_env)
        for measure in range(1, repeat + 1):
            ratios: dict[str, list[float]] = {tree: [] for tree in trees}
            a_times: dict[str, list[float]] = {tree: [] for tree in trees}
            b_times: list[float] = []
            for number in range(1, rounds + 1):
                order = list(trees) if number % 2 else list(reversed(trees))  # neither always first
                took, cpu = {}, {}
                for tree in order:
                    notebook, tree_env = trees[tree]
                    took[tree] = _papermill_cli(
                        notebook, tmp / "issue-a.ipynb", tree_env, ISSUE_FLAGS
                    )
                    cpu[tree] = CPU[-1]
                b = _papermill_cli(chat, tmp / "issue-b.ipynb", env, ())
                b_cpu = CPU[-1]
                kept = number > 1
                for tree, a in took.items():
                    line = {"bench": "issue34_round", "tree": tree, "measure": measure,
                            "round": number, "a_s": round(a, 3), "b_s": round(b, 3),
                            "ratio": round(a / b, 3), "a_cpu_s": round(cpu[tree], 3),
                            "b_cpu_s": round(b_cpu, 3), "dropped": not kept}  # fmt: skip
                    print(json.dumps(line), flush=True)
                    if kept:
                        ratios[tree].append(a / b)
                        a_times[tree].append(a)
                if kept:
                    b_times.append(b)
            for tree in trees:
                ratio = statistics.median(ratios[tree])
                line = {"bench": "issue34", "tree": tree, "measure": measure,
                        "rounds_kept": len(ratios[tree]),
                        "ratios": [round(r, 3) for r in ratios[tree]],
                        "median_ratio": round(ratio, 3),
                        "median_a_s": round(statistics.median(a_times[tree]), 3),
                        "median_b_s": round(statistics.median(b_times), 3),
                        "goal": 1.3, "pass": ratio <= 1.3, "moonshot": ratio <= 1.15,
                        "dont_write_bytecode": bool(os.environ.get("PYTHONDONTWRITEBYTECODE")),
                        "pyc_files": _pyc_count(trees[tree][0])}  # fmt: skip
                print(json.dumps(line), flush=True)


def _pyc_count(notebook: Path) -> int:
    """Compiled modules of the lmreg_nb next to ``notebook``'s folder (else the one imported)."""
    package = notebook.parent.parent / "lmreg_nb"
    if not package.is_dir():
        package = Path(lmreg_nb.__file__).parent
    return sum(1 for _ in package.rglob("*.pyc"))


@contextlib.contextmanager
def _bytecode(packages: list[Path], state: str) -> Iterator[None]:
    """lmreg_nb's bytecode while measuring: ``on`` compiled (as a wheel install has it:
    pip compiles on install), ``off`` none (an editable install run with
    PYTHONDONTWRITEBYTECODE=1 compiles every module in every kernel), ``as-is`` untouched.
    Bytecode made here is removed after.
    """
    made = []
    for package in packages:
        if state == "off":
            for cache in package.rglob("__pycache__"):
                shutil.rmtree(cache, ignore_errors=True)
        elif state == "on":
            made.append(package)
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)
    try:
        yield
    finally:
        for package in made:
            for cache in package.rglob("__pycache__"):
                shutil.rmtree(cache, ignore_errors=True)


def _median_s(runs: int, action: Callable[[], None]) -> tuple[float, list[float]]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def _papermill(notebook: Path, out: Path, env: dict[str, str], params: dict[str, object]) -> None:
    params_file = out.with_suffix(".yaml")
    params_file.write_text(yaml.safe_dump(params), encoding="utf-8")
    subprocess.run(
        [sys.executable, "-m", "papermill", str(notebook), str(out), "-f", str(params_file),
         "--no-progress-bar", "--log-level", "WARNING", "--cwd", str(out.parent)],
        env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def _line(name: str, median: float, times: list[float], **extra: object) -> dict[str, object]:
    return {
        "bench": name,
        "runs": len(times),
        "median_s": round(median, 3),
        "min_s": round(min(times), 3),
        "max_s": round(max(times), 3),
        **extra,
    }


def _one_cell(path: Path, source: str) -> Path:
    cell = new_code_cell(source)
    cell.metadata["tags"] = ["parameters"]
    nb = new_notebook(cells=[cell])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, path)
    return path


def _env(sandbox: SandboxInfo, tmp: Path) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("LMREG_")},
        **sandbox.env(),
        "LMREG_TOKEN_CACHE": str(tmp / "tokens.json"),
    }


def with_latency(runs: int, tmp: Path, baseline: Path | None = None) -> None:
    """The onboarding against a mock with a real model's latency, next to one chat reply."""
    with running_sandbox() as sandbox:  # the sandbox's default latency knobs
        env = _env(sandbox, tmp)
        chat = _one_cell(tmp / "chat.ipynb", CHAT_CELL)
        onboarding = notebook_path("onboarding")
        _papermill(chat, tmp / "warm-chat.ipynb", env, {})
        _papermill(onboarding, tmp / "warm-onboarding-l.ipynb", env, PARAMETERS)
        base, base_times = _median_s(runs, lambda: _papermill(chat, tmp / "c.ipynb", env, {}))
        print(json.dumps(_line("papermill_chat", base, base_times)), flush=True)
        onb, onb_times = _median_s(
            runs, lambda: _papermill(onboarding, tmp / "ol.ipynb", env, PARAMETERS)
        )
        ratio = round(onb / base, 2)
        line = _line("papermill_onboarding_latency", onb, onb_times, ratio_vs_chat=ratio)
        print(json.dumps({**line, "goal": 1.3, "pass": ratio <= 1.3}), flush=True)
        # A class of 40: the capacity step too (the same tree, then the baseline's).
        trees = [("this", onboarding, env)]
        if baseline is not None:
            old_env = {**env, "PYTHONPATH": str(baseline)}
            trees.append(("baseline", baseline / "notebooks" / "onboarding.ipynb", old_env))
        for tree, notebook, tree_env in trees:
            params = {**PARAMETERS, "class_size": 40}
            took, took_times = _median_s(
                runs, lambda n=notebook, e=tree_env, p=params: _papermill(n, tmp / "oc.ipynb", e, p)
            )
            ratio = round(took / base, 2)
            line = _line("papermill_onboarding_class", took, took_times, ratio_vs_chat=ratio)
            print(json.dumps({**line, "tree": tree, "class_size": 40}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4, help="issue 34's rounds (first dropped)")
    parser.add_argument("--repeat", type=int, default=1, help="issue 34's measure, this many times")
    parser.add_argument("--full", action="store_true", help="also the older series (slow)")
    parser.add_argument(
        "--bytecode", choices=("as-is", "on", "off"), default="as-is",
        help="lmreg_nb's bytecode: compiled first (on, removed after), removed (off), or as-is",
    )  # fmt: skip
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--mock-latency", action="store_true", help="keep the mock's default latency"
    )
    parser.add_argument(
        "--baseline", type=Path, help="a tree (lmreg_nb/, notebooks/) to time next to this one"
    )
    args = parser.parse_args()
    knobs = () if args.mock_latency else ("--ttft-ms", "0", "--itl-ms", "0")
    if not args.full:
        trees = [Path(lmreg_nb.__file__).parent]
        if args.baseline is not None:
            trees.append(args.baseline / "lmreg_nb")
        with (
            tempfile.TemporaryDirectory(prefix="lmreg-bench-") as tmp_name,
            _bytecode(trees, args.bytecode),
        ):
            issue_measure(args.rounds, Path(tmp_name), args.repeat, args.baseline)
        return

    with (
        tempfile.TemporaryDirectory(prefix="lmreg-bench-") as tmp_name,
        running_sandbox(args=knobs) as sandbox,
    ):
        tmp = Path(tmp_name)
        empty = _one_cell(tmp / "empty.ipynb", "x = 1")
        env = _env(sandbox, tmp)
        onboarding = notebook_path("onboarding")

        # One warm-up of each, so the first kernel start's disk reads are not counted.
        _papermill(empty, tmp / "warm-empty.ipynb", env, {})
        _papermill(onboarding, tmp / "warm-onboarding.ipynb", env, PARAMETERS)

        base, base_times = _median_s(args.runs, lambda: _papermill(empty, tmp / "e.ipynb", env, {}))
        mock = {"mock_latency": bool(args.mock_latency)}
        print(json.dumps(_line("papermill_empty", base, base_times)), flush=True)

        onb, onb_times = _median_s(
            args.runs, lambda: _papermill(onboarding, tmp / "o.ipynb", env, PARAMETERS)
        )
        print(
            json.dumps(
                _line(
                    "papermill_onboarding",
                    onb,
                    onb_times,
                    ratio_vs_empty=round(onb / base, 2),
                    **mock,
                )
            ),
            flush=True,
        )

        def via_runner() -> None:
            result = run_notebook(
                onboarding, tmp / "runs", parameters=PARAMETERS, env=env, timeout=120
            )
            if not result.ok:
                raise SystemExit(f"onboarding failed: {result.error}")

        run, run_times = _median_s(args.runs, via_runner)
        print(
            json.dumps(
                _line(
                    "run_notebook_onboarding", run, run_times, ratio_vs_empty=round(run / base, 2)
                )
            ),
            flush=True,
        )

        pairs = [arg for name, value in PARAMETERS.items() for arg in ("-p", name, str(value))]
        command = [sys.executable, "-m", "lmreg_nb", "onboard", "--out", str(tmp / "cli"), *pairs]

        def via_cli() -> None:
            subprocess.run(
                command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )

        cli, cli_times = _median_s(args.runs, via_cli)
        print(
            json.dumps(_line("cli_onboard", cli, cli_times, ratio_vs_empty=round(cli / base, 2))),
            flush=True,
        )
        with_latency(args.runs, tmp, args.baseline)


if __name__ == "__main__":
    main()
