"""What a class asking about one lesson at once costs on the compute-bound mock school model.

A class of 40 sends, all at once, a system message (~150 tokens), a shared
Chinese lesson (~1,500 tokens) and each student's own question, to the mock
served in its own uvicorn process with ``--prefill-tokens-per-s 3000`` (a small
GPU with a mid-size model), without and with the prefix cache; then, for
comparison, 40 one-line questions without the cache. Measured: the time to
first token (p50, p90, max) over streamed replies, and what the physics says
the last of the class waits (the mock's own queue model, :class:`Prefill`, on a
clock of its own: prompt tokens x class / rate without the cache). Goal: the lesson
without cache makes the last student wait about 40 x 1,650 / 3,000 = 22 s; the
prefix cache brings that under 2 s; one-liners stay under 1 s.

    /work/venv/bin/python bench/bench_mock_compute.py [--class-size 40] [--rate 3000]

Prints one JSON object per line (``"bench": "mock_compute"``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

import httpx

from lmreg_nb.sandbox.school_model import MockModelConfig, prompt_tokens, serving_process
from lmreg_nb.sandbox.school_model.compute import Prefill

KEY = "sk-bench-mock-compute-0123456789"
SYSTEM = (
    "你是一位耐心的中学老师。请根据下面的课文回答学生的问题，"
    "用简单清楚的中文，每次回答不超过三百字。"
) * 3
LESSON = "光合作用是绿色植物利用光能，把二氧化碳和水合成有机物，并且释放氧气的过程。" * 40
ONE_LINER = "In two sentences, what is a language model?"


def emit(**fields: object) -> None:
    print(json.dumps({"bench": "mock_compute", **fields}), flush=True)


async def ttft(client: httpx.AsyncClient, url: str, messages: list[dict[str, str]]) -> float:
    """Seconds to the first content chunk of one streamed reply."""
    body = {"model": "m", "messages": messages, "stream": True, "max_tokens": 8}
    start, first = time.perf_counter(), None
    async with client.stream("POST", url, json=body) as resp:
        resp.raise_for_status()
        async for line in resp.aiter_lines():
            if first is None and '"content":"' in line and '"content":""' not in line:
                first = time.perf_counter() - start
    if first is None:
        raise RuntimeError("no content in the stream")
    return first


async def wave(base: str, prompts: list[list[dict[str, str]]]) -> list[float]:
    headers = {"Authorization": f"Bearer {KEY}"}
    limits = httpx.Limits(max_connections=len(prompts))
    async with httpx.AsyncClient(headers=headers, timeout=120, limits=limits) as client:
        url = base + "/v1/chat/completions"
        return list(await asyncio.gather(*(ttft(client, url, p) for p in prompts)))


def lesson_prompts(size: int) -> list[list[dict[str, str]]]:
    return [
        [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"{LESSON}\n\n第{k + 1}位同学的问题：为什么叶子是绿色的？"},
        ]
        for k in range(size)
    ]


def run(name: str, rate: float, cache: bool, prompts: list[list[dict[str, str]]]) -> None:
    config = MockModelConfig(
        api_key=KEY, ttft_ms=50, itl_ms=10, tokens=8, prefill_tokens_per_s=rate, prefix_cache=cache
    )
    asks = [prompt_tokens([m["content"] for m in p]) for p in prompts]
    model = Prefill(rate, cache)  # the mock's own model of the queue, on a clock of its own
    expected = max(model.schedule(a, now=0.0) for a in asks) + config.ttft_ms / 1000
    with serving_process(config) as base:
        times = sorted(asyncio.run(wave(base, prompts)))
    emit(
        workload=name,
        class_size=len(prompts),
        prefill_tokens_per_s=rate,
        prefix_cache=cache,
        prompt_tokens=len(asks[0]),
        ttft_p50_s=round(statistics.median(times), 3),
        ttft_p90_s=round(times[int(0.9 * (len(times) - 1))], 3),
        ttft_max_s=round(times[-1], 3),
        expected_max_s=round(expected, 3),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--class-size", type=int, default=40)
    parser.add_argument("--rate", type=float, default=3000.0)
    args = parser.parse_args()
    lessons = lesson_prompts(args.class_size)
    run("lesson", args.rate, False, lessons)
    run("lesson", args.rate, True, lessons)
    one_liners = [[{"role": "user", "content": ONE_LINER}]] * args.class_size
    run("short", args.rate, False, one_liners)


if __name__ == "__main__":
    main()
