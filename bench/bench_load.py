"""Our load generator against a plain loop over the official openai AsyncOpenAI client.

Both drive the same mock school model, served by separate uvicorn worker
processes with ttft 0 ms and itl 0 ms (64 tokens per streamed reply), so the
load generator, not the mock, is the bottleneck. Measured in this (the
generator's) process: achieved requests/s and CPU seconds per request
(``time.process_time``), at concurrency 32 and 128. Rounds alternate between
the two clients so a change in the machine's load hits both alike.
Goal: ours >= 1.5x the openai loop's requests/s. For information, the openai
loop also runs over our sharded connection pool (``openai_over_our_pool``),
which splits the gain between the pool and the parsing.

    /work/venv/bin/python bench/bench_load.py

Prints one JSON object per line (``"bench": "load"``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable

import httpx
from openai import AsyncOpenAI

from lmreg_nb.probe.load import make_client, run_load
from lmreg_nb.probe.target import Target
from lmreg_nb.sandbox.school_model import MockModelConfig, serving_process

KEY = "sk-bench-load-0123456789"
TOKENS = 64
REQUESTS = 400  # per round and client
ROUNDS = 2
CONCURRENCY = (32, 128)
MOCK_WORKERS = 2
GOAL = 1.5


def emit(**fields: object) -> None:
    print(json.dumps({"bench": "load", **fields}), flush=True)


async def ours(url: str, concurrency: int, requests: int) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and errors of ``requests`` requests with our generator."""
    target = Target(url + "/v1/chat/completions", KEY, "bench-model", timeout=60)
    async with make_client(concurrency, 60) as client:
        await run_load(target, concurrency, concurrency, client=client)  # warm up
        wall, cpu = time.perf_counter(), time.process_time()
        result = await run_load(target, requests, concurrency, client=client, max_duration=300)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    errors = sum(result.errors_by_kind.values())
    assert all(r["output_tokens"] == r["chunks"] == TOKENS for r in result.rows if r["ok"])
    return wall, cpu, errors


async def openai_loop(
    url: str, concurrency: int, requests: int, *, sharded: bool = False
) -> tuple[float, float, int]:
    """The same with AsyncOpenAI: asyncio.gather under a semaphore.

    ``sharded`` gives it our connection pool, to tell the pool's share of the
    difference from the share of parsing.
    """
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    gate = asyncio.Semaphore(concurrency)
    errors = 0
    http = make_client(concurrency, 60) if sharded else httpx.AsyncClient(limits=limits, timeout=60)
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


async def openai_sharded(url: str, concurrency: int, requests: int) -> tuple[float, float, int]:
    """The openai loop over our sharded pool (for information)."""
    return await openai_loop(url, concurrency, requests, sharded=True)


Runner = Callable[[str, int, int], Awaitable[tuple[float, float, int]]]


def main() -> None:
    config = MockModelConfig(api_key=KEY, ttft_ms=0, itl_ms=0, tokens=TOKENS)
    clients: dict[str, Runner] = {
        "lmreg_nb": ours,
        "openai": openai_loop,
        "openai_over_our_pool": openai_sharded,
    }
    with serving_process(config, workers=MOCK_WORKERS) as url:
        for concurrency in CONCURRENCY:
            totals = {name: [0.0, 0.0, 0] for name in clients}
            for _ in range(ROUNDS):
                for name, runner in clients.items():
                    wall, cpu, errors = asyncio.run(runner(url, concurrency, REQUESTS))
                    totals[name][0] += wall
                    totals[name][1] += cpu
                    totals[name][2] += errors
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
            emit(
                concurrency=concurrency,
                rps_ratio=round(ratio, 2),
                cpu_ratio=round(stats["openai"]["cpu"] / stats["lmreg_nb"]["cpu"], 2),
                rps_ratio_same_pool=round(
                    stats["lmreg_nb"]["rps"] / stats["openai_over_our_pool"]["rps"], 2
                ),
                goal=GOAL,
                **{"pass": ratio >= GOAL},
            )


if __name__ == "__main__":
    main()
