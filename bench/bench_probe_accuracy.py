"""How exactly does the probe measure TTFT and ITL? Against the mock's known truth.

The mock school model runs in its own process (no shared GIL) with
ttft 200 ms, itl 20 ms and 64 tokens; the probe's load generator measures it at
concurrency 1 and 32. Goal: medians within 5 ms (TTFT) and 1 ms (ITL) of the
truth. Each run first warms its connection pool with one request per
connection. The probe's clock starts when a request is on the wire (see
lmreg_nb.probe.wire.exchange). The official openai client, timed from the call as a
user would, is printed alongside as a reference (no pass field).

    /work/venv/bin/python bench/bench_probe_accuracy.py

Prints one JSON object per line (``"bench": "probe_accuracy"``).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import statistics
import time

import httpx
from openai import AsyncOpenAI

from lmreg_nb.probe.load.fixed import make_client, run_load
from lmreg_nb.probe.target import Target
from lmreg_nb.sandbox.school_model import MockModelConfig, serving_process

KEY = "sk-bench-accuracy-0123456789"
TTFT_MS, ITL_MS, TOKENS = 200.0, 20.0, 64
TOLERANCE_MS = {"ttft_ms": 5.0, "itl_ms": 1.0}
# (concurrency, requests): each request takes ~1.5 s, so keep the counts small.
RUNS = [(1, 16), (32, 128)]


def emit(**fields: object) -> None:
    print(json.dumps({"bench": "probe_accuracy", **fields}), flush=True)


async def ours(url: str, concurrency: int, requests: int) -> tuple[list[float], list[float]]:
    target = Target(url + "/v1/chat/completions", KEY, "bench-model", timeout=30)
    async with make_client(concurrency, 30) as client:
        # Warm up: open the pool's connections so the first wave is not timing TCP set-up.
        await run_load(target, concurrency, concurrency, max_tokens=1, client=client)
        result = await run_load(target, requests, concurrency, max_duration=100, client=client)
    assert not result.errors_by_kind, result.errors_by_kind
    return [r.ttft_ms for r in result.rows], result.gaps_ms


async def openai_reference(
    url: str, concurrency: int, requests: int
) -> tuple[list[float], list[float]]:
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    ttfts: list[float] = []
    gaps: list[float] = []
    gate = asyncio.Semaphore(concurrency)
    async with (
        httpx.AsyncClient(limits=limits, timeout=30) as http,
        AsyncOpenAI(base_url=url + "/v1", api_key=KEY, http_client=http, max_retries=0) as client,
    ):

        async def one(max_tokens: int = 256) -> None:
            async with gate:
                start = time.perf_counter()
                times: list[float] = []
                stream = await client.chat.completions.create(
                    model="bench-model",
                    messages=[{"role": "user", "content": "hi"}],
                    stream=True,
                    max_tokens=max_tokens,
                )
                async for chunk in stream:
                    if chunk.choices and chunk.choices[0].delta.content:
                        times.append(time.perf_counter())
                ttfts.append((times[0] - start) * 1000)
                gaps.extend((b - a) * 1000 for a, b in itertools.pairwise(times))

        await asyncio.gather(*(one(1) for _ in range(concurrency)))  # warm up, as for ours
        ttfts.clear()
        gaps.clear()
        await asyncio.gather(*(one() for _ in range(requests)))
    return ttfts, gaps


def main() -> None:
    config = MockModelConfig(api_key=KEY, ttft_ms=TTFT_MS, itl_ms=ITL_MS, tokens=TOKENS)
    truth = {"ttft_ms": TTFT_MS, "itl_ms": ITL_MS}
    with serving_process(config) as url:
        for concurrency, requests in RUNS:
            for client, measure in (("lmreg_nb", ours), ("openai", openai_reference)):
                ttfts, gaps = asyncio.run(measure(url, concurrency, requests))
                for metric, values in (("ttft_ms", ttfts), ("itl_ms", gaps)):
                    median = statistics.median(values)
                    error = median - truth[metric]
                    line: dict[str, object] = {
                        "client": client,
                        "concurrency": concurrency,
                        "requests": requests,
                        "metric": metric,
                        "truth": truth[metric],
                        "measured_p50": round(median, 3),
                        "error": round(error, 3),
                        "tolerance": TOLERANCE_MS[metric],
                        "samples": len(values),
                    }
                    if client == "lmreg_nb":
                        line["pass"] = abs(error) <= TOLERANCE_MS[metric]
                    emit(**line)


if __name__ == "__main__":
    main()
