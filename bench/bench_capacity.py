"""Our closed-loop load generator (the capacity search's levels) against GuideLLM 0.8.

Ours: :func:`lmreg_nb.probe.load.level_run.run_level` with the lean client
(:mod:`lmreg_nb.probe.wire.stream_client`, one connection per chat), as the
capacity search runs it.

Both drive the same mock school model (a separate uvicorn process, 2 workers)
in the same run, at concurrency 32 and 128, in GuideLLM's own mode for this
("concurrent" profile: N streams, each sending its next request when the last
ends), alternating between the two:

- phase ``throughput``: a mock with no delays (ttft 0, itl 0, 64 tokens), so
  the load generator is the bottleneck: requests/s and CPU seconds per
  request (ours: ``time.process_time`` around the level; GuideLLM: CPU of its
  process tree from ``RUSAGE_CHILDREN``, the difference of a long and a short
  run over the difference of their requests, so its start-up is not counted);
- phase ``accuracy``: a mock with a known truth (ttft 50 ms, itl 10 ms, 64
  tokens): TTFT and ITL medians and their error against the truth.

Goal: ours >= 1.2x GuideLLM's requests/s at 128, >= 1x at 32, less CPU per
request.

Phase ``search`` (first; ``--search-only`` runs only it): ``lmreg-nb capacity
--need 40`` and the knee search (no ``--need``) of the same sandbox (``lmreg-nb
sandbox --slots 64``: the mock's default latency, slots for the need's margin
level of 60), each run as the command a school engineer types, timed from start
to exit. ``--baseline DIR`` runs the same two commands with the lmreg_nb found
in DIR (e.g. an export of the previous commit) against the same sandbox in the
same run, for a before/after. GuideLLM is not a dependency of the project: it is looked for as
``$GUIDELLM`` (a path to its ``guidellm`` command), then on PATH, then in
``bench/.guidellm-venv``; ``--install`` creates that venv (``pip install
guidellm==0.8.1``). Without it the bench says so and prints our side only.
It runs offline: prompts come from a JSON-lines file with
``output_tokens_count`` (no dataset or tokenizer download).

    /work/main/.venv/bin/python bench/bench_capacity.py [--install] [--search-only]
        [--baseline DIR]

Prints one JSON object per line (``"bench": "capacity"``).
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lmreg_nb.probe.load.level_run import run_level
from lmreg_nb.probe.load.levels import SLO, LevelPlan
from lmreg_nb.probe.target import Target
from lmreg_nb.probe.wire.exchange import chat_body
from lmreg_nb.sandbox.school_model import MockModelConfig, serving_process

KEY = "sk-bench-capacity-0123456789"
TOKENS = 64
CONCURRENCY = (32, 128)
REQUESTS = {32: 600, 128: 1200}
MOCK_WORKERS = 2
TRUTH = {"ttft_ms": 50.0, "itl_ms": 10.0}
GOAL = {32: 1.0, 128: 1.2}
VERSION = "0.8.1"
VENV = Path(__file__).resolve().parent / ".guidellm-venv"


def emit(**fields: Any) -> None:
    # The load average says how contended the machine was: a single-process generator
    # gets one share of the CPU, GuideLLM's worker processes several.
    load = round(os.getloadavg()[0], 1)
    print(json.dumps({"bench": "capacity", **fields, "load_avg_1m": load}), flush=True)


def find_guidellm(install: bool) -> str | None:
    """The guidellm command: $GUIDELLM, PATH, bench/.guidellm-venv (created with --install)."""
    candidates = [os.environ.get("GUIDELLM"), shutil.which("guidellm"), str(VENV / "bin/guidellm")]
    for path in candidates:
        if path and Path(path).exists():
            return path
    if not install:
        return None
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    pip = [str(VENV / "bin/python"), "-m", "pip", "install", "-q", f"guidellm=={VERSION}"]
    subprocess.run(pip, check=True)
    return str(VENV / "bin/guidellm")


async def ours(url: str, concurrency: int, requests: int) -> dict[str, Any]:
    """One closed-loop level of ``requests`` requests (the capacity search's lean client)."""
    target = Target(url + "/v1/chat/completions", KEY, "bench-model", timeout=60)
    payload = json.dumps(chat_body("bench-model", "hi", stream=True, max_tokens=256)).encode()
    slo = SLO(ttft_ms=600_000)
    warm = LevelPlan(min_seconds=0, requests_per_worker=1, max_seconds=60)
    await run_level(target, payload, concurrency, slo, warm)
    plan = LevelPlan(min_seconds=0, requests_per_worker=requests // concurrency, max_seconds=300)
    wall, cpu = time.perf_counter(), time.process_time()
    level = await run_level(target, payload, concurrency, slo, plan)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    good = level.requests - level.errors - level.unfinished  # requests cut at the end: not done
    return {
        "requests": level.requests,
        "errors": level.errors,
        "requests_per_s": good / wall,
        "cpu_s_per_request": cpu / max(level.requests, 1),
        "ttft_p50_ms": level.ttft_ms.get("p50"),
        "itl_p50_ms": level.itl_ms.get("p50"),
    }


def _guidellm_run(exe: str, url: str, concurrency: int, requests: int, data: Path) -> tuple:
    """One guidellm run: (its JSON report, CPU seconds of its process tree)."""
    out = Path(tempfile.mkdtemp(prefix="bench-guidellm-")) / "report.json"
    cmd = [
        exe, "run",
        "--backend", f"kind=openai_http,target={url},model=bench-model",
        "--profile", f"kind=concurrent,streams={concurrency}",
        "--data", f"kind=json_file,path={data}",
        "--constraint", f"kind=max_requests,count={requests}",
        "--output", f"kind=json,path={out}",
        "--disable-console",
    ]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env["OPENAI_API_KEY"] = KEY  # through the environment, never argv
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0 or not out.exists():
        raise RuntimeError(f"guidellm failed ({done.returncode}): {done.stderr[-800:]}")
    return json.loads(out.read_text()), cpu


def _median(metrics: dict[str, Any], key: str) -> float | None:
    value = (metrics.get(key) or {}).get("successful") or {}
    return value.get("median")


def guidellm(exe: str, url: str, concurrency: int, requests: int, data: Path) -> dict[str, Any]:
    """GuideLLM's figures; CPU per request from a long and a short run (start-up cancels)."""
    report, cpu_long = _guidellm_run(exe, url, concurrency, requests, data)
    _, cpu_short = _guidellm_run(exe, url, concurrency, concurrency, data)
    bench = report["benchmarks"][0]
    sched = bench["scheduler_metrics"]
    made = sched["requests_made"]
    window = sched["measure_end_time"] - sched["measure_start_time"]
    metrics = bench["metrics"]
    return {
        "requests": made["total"],
        "errors": made["errored"] + made["incomplete"],
        "requests_per_s": made["successful"] / window,
        "cpu_s_per_request": (cpu_long - cpu_short) / (requests - concurrency),
        "ttft_p50_ms": _median(metrics, "time_to_first_token_ms"),
        "itl_p50_ms": _median(metrics, "inter_token_latency_ms"),
    }


def _data_file() -> Path:
    path = Path(tempfile.mkdtemp(prefix="bench-capacity-")) / "prompts.jsonl"
    with path.open("w") as out:
        for i in range(4000):
            row = {"prompt": f"hi, question {i}", "output_tokens_count": TOKENS}
            out.write(json.dumps(row) + "\n")
    return path


def _rounded(figures: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 6) if isinstance(v, float) else v for k, v in figures.items()}


def phase(name: str, config: MockModelConfig, exe: str | None, data: Path) -> dict:
    results: dict[tuple[str, int], dict[str, Any]] = {}
    with serving_process(config, workers=MOCK_WORKERS) as url:
        for c in CONCURRENCY:
            n = REQUESTS[c]
            results["lmreg_nb", c] = asyncio.run(ours(url, c, n))
            if exe is not None:
                try:
                    results["guidellm", c] = guidellm(exe, url, c, n, data)
                except (RuntimeError, subprocess.TimeoutExpired, KeyError) as exc:
                    emit(phase=name, client="guidellm", concurrency=c, error=str(exc)[-500:])
            for (client, cc), figures in results.items():
                if cc != c:
                    continue
                extra: dict[str, Any] = {}
                if name == "accuracy":
                    for key, truth in (("ttft", TRUTH["ttft_ms"]), ("itl", TRUTH["itl_ms"])):
                        got = figures[f"{key}_p50_ms"]
                        extra[f"{key}_p50_error_ms"] = (
                            None if got is None else round(got - truth, 3)
                        )
                emit(phase=name, client=client, concurrency=c, **_rounded(figures), **extra)
    return results


def _capacity_command(env: dict[str, str], args: list[str], tree: str | None) -> dict[str, Any]:
    """``lmreg-nb capacity --json ARGS`` as a command: its wall time, exit code and answer."""
    # `python -m` puts the working folder first on sys.path: run in the tree measured.
    here = tree or str(Path(__file__).resolve().parents[1])
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "lmreg_nb", "capacity", "--json", *args],
        env={**env, "PYTHONPATH": here}, cwd=here, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    try:
        out = json.loads(done.stdout)
    except ValueError:
        return {"seconds": round(seconds, 2), "exit": done.returncode, "error": done.stderr[-300:]}
    return {
        "seconds": round(seconds, 2),
        "exit": done.returncode,
        "capacity": out["capacity"]["concurrency"],
        "limited_by": out["capacity"]["limited_by"],
        "workload": out.get("workload"),
        # concurrency, requests, first-token p90 (ms) of each level measured
        "levels": [
            [lv["concurrency"], lv["requests"], lv["ttft_ms"].get("p90")] for lv in out["levels"]
        ],
    }


def search_phase(baseline: str | None) -> None:
    """The class's search (--need 40) and the knee search of one sandbox, timed as commands."""
    from lmreg_nb.sandbox.process import running_sandbox

    trees: list[tuple[str, str | None]] = [("this", None)]
    if baseline:
        trees.insert(0, ("baseline", str(Path(baseline).resolve())))
    with running_sandbox(args=["--slots", "64"]) as sandbox:
        env = {**os.environ, **sandbox.env(), "LMREG_LANG": "en"}
        for name, tree in trees:
            seconds: dict[str, float] = {}
            for search, args in (("need-40", ["--need", "40"]), ("knee", [])):
                figures = _capacity_command(env, args, tree)
                seconds[search] = figures["seconds"]
                emit(phase="search", tree=name, search=search, **figures)
            # The class's question answers in a third or less of the knee search's time.
            ratio = seconds["need-40"] / seconds["knee"] if seconds["knee"] else None
            emit(
                phase="search", tree=name, need_over_knee=ratio and round(ratio, 3),
                goal=round(1 / 3, 3), **{"pass": ratio is not None and ratio <= 1 / 3},
            )  # fmt: skip


def main() -> None:
    baseline = sys.argv[sys.argv.index("--baseline") + 1] if "--baseline" in sys.argv else None
    search_phase(baseline)
    if "--search-only" in sys.argv:
        return
    exe = find_guidellm("--install" in sys.argv)
    if exe is None:
        emit(
            client="guidellm",
            skipped="guidellm not found: set GUIDELLM, put it on PATH, or run with --install "
            f"(pip install guidellm=={VERSION} into {VENV})",
        )
    data = _data_file()
    fast = MockModelConfig(
        api_key=KEY, ttft_ms=0, itl_ms=0, tokens=TOKENS, quirks=frozenset({"any-key"})
    )
    timed = MockModelConfig(
        api_key=KEY, ttft_ms=TRUTH["ttft_ms"], itl_ms=TRUTH["itl_ms"], tokens=TOKENS,
        quirks=frozenset({"any-key"}),
    )  # fmt: skip
    speed = phase("throughput", fast, exe, data)
    phase("accuracy", timed, exe, data)
    if exe is None:
        return
    for c in CONCURRENCY:
        a, b = speed.get(("lmreg_nb", c)), speed.get(("guidellm", c))
        if not a or not b:
            continue
        ratio = a["requests_per_s"] / b["requests_per_s"]
        cpu_ratio = b["cpu_s_per_request"] / a["cpu_s_per_request"]
        emit(
            concurrency=c,
            rps_ratio=round(ratio, 2),
            cpu_ratio=round(cpu_ratio, 2),
            goal=GOAL[c],
            **{"pass": ratio >= GOAL[c] and cpu_ratio > 1},
        )


if __name__ == "__main__":
    main()
