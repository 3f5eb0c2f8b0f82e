"""Our load generator against a plain loop over the official openai AsyncOpenAI client.

Both drive the same mock school model, served by separate uvicorn worker
processes with ttft 0 ms and itl 0 ms (64 tokens per streamed reply), so the
load generator, not the mock, is the bottleneck. Measured in the generator's
own process: achieved requests/s and CPU seconds per request
(``time.process_time``), at concurrency 32 and 128. Rounds alternate between
the clients so a change in the machine's load hits all alike.
Goal: ours >= 1.5x the openai loop's requests/s.

``--baseline DIR`` also runs the load test of the lmreg_nb found in DIR (e.g.
``git archive`` of an earlier commit), in the same rounds: the change's cost
or gain, side by side. Each load test runs in a child process
(``--generate TREE URL C N``) with that tree first on ``sys.path``.

    python bench/bench_load.py [--baseline DIR]

Prints one JSON object per line (``"bench": "load"``).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

KEY = "sk-bench-load-0123456789"
TOKENS = 64
REQUESTS = 400  # per round and client
ROUNDS = 2
CONCURRENCY = (32, 128)
MOCK_WORKERS = 2
GOAL = 1.5
HERE = Path(__file__).resolve().parents[1]


def emit(**fields: object) -> None:
    print(json.dumps({"bench": "load", **fields}), flush=True)


async def ours(url: str, concurrency: int, requests: int) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and errors of ``requests`` requests with our generator."""
    from lmreg_nb.probe.load.fixed import run_load
    from lmreg_nb.probe.target import Target

    target = Target(url + "/v1/chat/completions", KEY, "bench-model", timeout=60)
    await run_load(target, concurrency, concurrency)  # warm up
    wall, cpu = time.perf_counter(), time.process_time()
    result = await run_load(target, requests, concurrency, max_duration=300)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert all(r["output_tokens"] == TOKENS for r in result.rows if r["ok"])
    return wall, cpu, sum(1 for r in result.rows if not r["ok"])


async def openai_loop(url: str, concurrency: int, requests: int) -> tuple[float, float, int]:
    """The same with AsyncOpenAI: asyncio.gather under a semaphore."""
    from openai import AsyncOpenAI

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    gate = asyncio.Semaphore(concurrency)
    errors = 0
    http = httpx.AsyncClient(limits=limits, timeout=60)
    async with (
        http,
        AsyncOpenAI(base_url=url + "/v1", api_key=KEY, http_client=http, max_retries=0) as client,
    ):

        async def one() -> None:
            nonlocal errors
            async with gate:
                try:
                    stream = await client.chat.completions.create(
                        model="bench-model",
                        messages=[{"role": "user", "content": "hi"}],
                        stream=True,
                        stream_options={"include_usage": True},
                        max_tokens=256,
                    )
                    pieces, usage = [], None
                    async for chunk in stream:
                        if chunk.usage is not None:
                            usage = chunk.usage.completion_tokens
                        if chunk.choices and chunk.choices[0].delta.content:
                            pieces.append(chunk.choices[0].delta.content)
                    assert usage == TOKENS and len(pieces) == TOKENS
                except Exception:
                    errors += 1

        await asyncio.gather(*(one() for _ in range(concurrency)))  # warm up
        errors = 0
        wall, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(one() for _ in range(requests)))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall, cpu, errors


def generate(tree: str, url: str, concurrency: int, requests: int) -> tuple[float, float, int]:
    """One load test of the lmreg_nb in ``tree``, in a child process."""
    env = {**os.environ, "PYTHONPATH": tree}
    argv = [sys.executable, __file__, "--generate", url, str(concurrency), str(requests)]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True, timeout=600)
    wall, cpu, errors = json.loads(out.stdout.strip().splitlines()[-1])
    return wall, cpu, errors


def main(baseline: str | None) -> None:
    from lmreg_nb.sandbox.school_model import MockModelConfig, serving_process

    config = MockModelConfig(api_key=KEY, ttft_ms=0, itl_ms=0, tokens=TOKENS)
    trees = {"lmreg_nb": str(HERE)}
    if baseline:
        trees["lmreg_nb_baseline"] = str(Path(baseline).resolve())
    with serving_process(config, workers=MOCK_WORKERS) as url:
        for concurrency in CONCURRENCY:
            totals = {name: [0.0, 0.0, 0] for name in [*trees, "openai"]}
            for _ in range(ROUNDS):
                for name in totals:
                    if name == "openai":
                        run = asyncio.run(openai_loop(url, concurrency, REQUESTS))
                    else:
                        run = generate(trees[name], url, concurrency, REQUESTS)
                    for k in range(3):
                        totals[name][k] += run[k]
            stats = {}
            for name, (wall, cpu, errors) in totals.items():
                n = REQUESTS * ROUNDS
                stats[name] = {"rps": n / wall, "cpu": cpu / n}
                emit(
                    client=name,
                    concurrency=concurrency,
                    requests=n,
                    errors=errors,
                    requests_per_s=round(n / wall, 1),
                    cpu_s_per_request=round(cpu / n, 6),
                )
            ratio = stats["lmreg_nb"]["rps"] / stats["openai"]["rps"]
            extra = {}
            if baseline:
                base = stats["lmreg_nb_baseline"]
                extra["rps_vs_baseline"] = round(stats["lmreg_nb"]["rps"] / base["rps"], 2)
            emit(
                concurrency=concurrency,
                rps_ratio=round(ratio, 2),
                cpu_ratio=round(stats["openai"]["cpu"] / stats["lmreg_nb"]["cpu"], 2),
                goal=GOAL,
                **{"pass": ratio >= GOAL},
                **extra,
            )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--generate"]:
        url, conc, n = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        print(json.dumps(asyncio.run(ours(url, conc, n))))
    else:
        main(sys.argv[sys.argv.index("--baseline") + 1] if "--baseline" in sys.argv else None)
