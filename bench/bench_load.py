"""Our load generator beside the openai client, aiohttp and GuideLLM, on one mock, in one run.

Every client drives the same mock school model, served by separate uvicorn worker
processes, in closed loops (each chat sends its next request when its last one
ends), rounds alternating between the clients so a change in the machine's load
hits all alike. Two phases:

- ``throughput``: a mock with no delays (ttft 0, itl 0, 64 tokens), so the load
  generator is the bottleneck: requests/s and CPU seconds per request
  (``time.process_time``) at concurrency 32 and 128, for our load test (the lean
  HTTP/1.1 client, :mod:`lmreg_nb.probe.wire.stream_client`), a plain loop over the
  official ``AsyncOpenAI`` client and a plain loop over ``aiohttp``'s streaming
  client. Goal: ours >= 1.5x the openai loop's requests/s, and ahead of aiohttp (the
  hand-written client stays only where it is measured clearly ahead).
- ``accuracy``: a mock with a known truth (ttft 100 ms, itl 10 ms, 64 tokens):
  first-token and inter-token p50/p90 and their error against the truth, at 32 and
  128 chats, for the capacity search's level (time counted from when a request was
  due, as a student waits), our load test, aiohttp and GuideLLM (its
  ``concurrent`` profile, the same closed loop). For ours, the share of the
  first-token error spent between a request's due time and its send (``due_to_send``):
  the client's own part of the error. Goal: our first-token error no worse than
  GuideLLM's at 32 and 128.

``--baseline DIR`` also runs the load test of the lmreg_nb found in DIR (an export
of an earlier commit) in the same rounds, in a child process (``--generate TREE URL
C N``) with that tree first on ``sys.path``. GuideLLM and aiohttp are not
dependencies: GuideLLM is looked for as ``$GUIDELLM``, on PATH, then in
``bench/.guidellm-venv`` (``--install`` creates it), given a local tokenizer
(``$GUIDELLM_TOKENIZER``, or a tiny Llama's tokenizer in
``~/.cache/lmreg-peers/models``) and run offline; aiohttp is imported if installed
(``pip install aiohttp``). Without one, the bench says so and goes on.

    python bench/bench_load.py [--baseline DIR] [--install] [--phase throughput|accuracy]

Prints one JSON object per line (``"bench": "load"``), each with the 1-minute load
average.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

KEY = "sk-bench-load-0123456789"
TOKENS = 64
REQUESTS = 400  # per round and client (throughput)
ACCURACY_REQUESTS = {32: 600, 128: 1200}
ROUNDS = 2
CONCURRENCY = (32, 128)
MOCK_WORKERS = 2
GOAL = 1.5
TRUTH = {"ttft_ms": 100.0, "itl_ms": 10.0}
HERE = Path(__file__).resolve().parents[1]
PEER_MODELS = Path.home() / ".cache" / "lmreg-peers" / "models"


def emit(**fields: object) -> None:
    load = round(os.getloadavg()[0], 1)
    print(json.dumps({"bench": "load", **fields, "load_avg_1m": load}), flush=True)


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


# -- throughput ------------------------------------------------------------------------------
async def ours(url: str, concurrency: int, requests: int) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and errors of ``requests`` requests with our generator."""
    from lmreg_nb.probe.load.fixed import run_load
    from lmreg_nb.probe.target import Target

    target = Target(url + "/v1/chat/completions", KEY, "bench-model", timeout=60)
    await run_load(target, concurrency, concurrency)  # warm up
    wall, cpu = time.perf_counter(), time.process_time()
    result = await run_load(target, requests, concurrency, max_duration=300)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert all(r.output_tokens == TOKENS for r in result.rows if r.ok)
    return wall, cpu, sum(1 for r in result.rows if not r.ok)


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


async def aiohttp_loop(
    url: str, concurrency: int, requests: int
) -> tuple[float, float, int, list[dict[str, float]]]:
    """aiohttp's streaming client in the same closed loop: wall, CPU, errors, and per
    request (due, sent, first token, end, tokens) for the accuracy phase."""
    import aiohttp

    body = json.dumps(
        {"model": "bench-model", "messages": [{"role": "user", "content": "hi"}], "stream": True,
         "stream_options": {"include_usage": True}, "max_tokens": 256}
    ).encode()  # fmt: skip
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    spans: list[dict[str, float]] = []
    errors = 0
    left = [requests]
    connector = aiohttp.TCPConnector(limit=concurrency)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def one(due: float, keep: bool) -> float:
            nonlocal errors
            times: list[float] = []
            tokens = 0
            try:
                async with session.post(
                    url + "/v1/chat/completions", data=body, headers=headers
                ) as resp:
                    async for line in resp.content:
                        if not line.startswith(b"data:"):
                            continue
                        data = line[5:].strip()
                        if data == b"[DONE]":
                            break
                        chunk = json.loads(data)
                        choices = chunk.get("choices") or []
                        if choices and (choices[0].get("delta") or {}).get("content"):
                            times.append(time.perf_counter())
                        if chunk.get("usage"):
                            tokens = chunk["usage"].get("completion_tokens") or 0
                assert resp.status == 200 and len(times) == TOKENS == tokens
            except Exception:
                errors += 1
                return time.perf_counter()
            end = time.perf_counter()
            if keep:
                spans.append({"due": due, "first": times[0], "last": times[-1], "end": end,
                              "tokens": len(times)})  # fmt: skip
            return end

        async def worker(keep: bool, budget: list[int]) -> None:
            due = time.perf_counter()
            while budget[0] > 0:
                budget[0] -= 1
                due = await one(due, keep)

        await asyncio.gather(*(worker(False, [1]) for _ in range(concurrency)))  # warm up
        errors = 0
        wall, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(worker(True, left) for _ in range(concurrency)))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall, cpu, errors, spans


def generate(tree: str, url: str, concurrency: int, requests: int) -> tuple[float, float, int]:
    """One load test of the lmreg_nb in ``tree``, in a child process."""
    env = {**os.environ, "PYTHONPATH": tree}
    argv = [sys.executable, __file__, "--generate", url, str(concurrency), str(requests)]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True, timeout=600)
    wall, cpu, errors = json.loads(out.stdout.strip().splitlines()[-1])
    return wall, cpu, errors


def has_aiohttp() -> bool:
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        emit(client="aiohttp", skipped="aiohttp not installed: pip install aiohttp")
        return False
    return True


def throughput(baseline: str | None) -> None:
    from lmreg_nb.sandbox.school_model import MockModelConfig, serving_process

    config = MockModelConfig(api_key=KEY, ttft_ms=0, itl_ms=0, tokens=TOKENS)
    trees = {"lmreg_nb": str(HERE)}
    if baseline:
        trees["lmreg_nb_baseline"] = str(Path(baseline).resolve())
    clients = [*trees, "openai"] + (["aiohttp"] if has_aiohttp() else [])
    with serving_process(config, workers=MOCK_WORKERS) as url:
        for concurrency in CONCURRENCY:
            totals = {name: [0.0, 0.0, 0] for name in clients}
            for _ in range(ROUNDS):
                for name in totals:
                    if name == "openai":
                        run = asyncio.run(openai_loop(url, concurrency, REQUESTS))
                    elif name == "aiohttp":
                        run = asyncio.run(aiohttp_loop(url, concurrency, REQUESTS))[:3]
                    else:
                        run = generate(trees[name], url, concurrency, REQUESTS)
                    for k in range(3):
                        totals[name][k] += run[k]
            stats = {}
            for name, (wall, cpu, errors) in totals.items():
                n = REQUESTS * ROUNDS
                stats[name] = {"rps": n / wall, "cpu": cpu / n}
                emit(
                    phase="throughput",
                    client=name,
                    concurrency=concurrency,
                    requests=n,
                    errors=errors,
                    requests_per_s=round(n / wall, 1),
                    cpu_s_per_request=round(cpu / n, 6),
                )
            ours_ = stats["lmreg_nb"]
            extra: dict[str, Any] = {}
            if baseline:
                base = stats["lmreg_nb_baseline"]
                extra["rps_vs_baseline"] = round(ours_["rps"] / base["rps"], 2)
            if "aiohttp" in stats:
                extra["rps_vs_aiohttp"] = round(ours_["rps"] / stats["aiohttp"]["rps"], 2)
                extra["cpu_vs_aiohttp"] = round(stats["aiohttp"]["cpu"] / ours_["cpu"], 2)
            ratio = ours_["rps"] / stats["openai"]["rps"]
            emit(
                phase="throughput",
                concurrency=concurrency,
                rps_ratio=round(ratio, 2),
                cpu_ratio=round(stats["openai"]["cpu"] / ours_["cpu"], 2),
                goal=GOAL,
                **{"pass": ratio >= GOAL},
                **extra,
            )


# -- accuracy --------------------------------------------------------------------------------
async def ours_level(
    url: str, concurrency: int, requests: int
) -> tuple[list[dict[str, float]], dict[str, Any]]:
    """One capacity level of ``requests`` requests (the search's closed loop and client):
    per request (due, sent, first token, last token, end, tokens)."""
    from lmreg_nb.probe.load.level_run import run_level
    from lmreg_nb.probe.load.levels import SLO, LevelPlan
    from lmreg_nb.probe.loop_lag import LoopLag
    from lmreg_nb.probe.target import Target
    from lmreg_nb.probe.wire.exchange import Exchange, chat_body
    from lmreg_nb.probe.wire.stream_client import ChatConnection

    spans: list[dict[str, float]] = []

    class Timed(ChatConnection):
        """The lean client, noting each request's due time (its previous one's end)."""

        last_end: float | None = None

        async def send(self) -> Exchange:
            ex = await super().send()
            if self.last_end is not None and ex.ok and ex.times:
                spans.append({"due": self.last_end, "sent": ex.t_start, "first": ex.times[0],
                              "last": ex.times[-1], "end": ex.t_end,
                              "tokens": len(ex.times)})  # fmt: skip
            self.last_end = ex.t_end
            return ex

    target = Target(url + "/v1/chat/completions", KEY, "bench-model", timeout=60)
    payload = json.dumps(chat_body("bench-model", "hi", stream=True, max_tokens=256)).encode()
    slo = SLO(ttft_ms=600_000, pause_ms=None)
    warm = LevelPlan(requests_per_worker=1, max_seconds=60)
    await run_level(target, payload, concurrency, slo, warm, connect=Timed)
    spans.clear()
    per = -(-requests // concurrency) + 1  # the first request of each chat has no due time
    plan = LevelPlan(requests_per_worker=per, max_requests_per_worker=per, max_seconds=300)
    async with LoopLag() as lag:
        await run_level(target, payload, concurrency, slo, plan, connect=Timed)
    return spans, lag.result().to_json()


async def ours_load(url: str, concurrency: int, requests: int) -> dict[str, Any]:
    """Our load test (check's): TTFT from the request's write, ITL per request."""
    from lmreg_nb.probe.load.fixed import run_load
    from lmreg_nb.probe.target import Target

    target = Target(url + "/v1/chat/completions", KEY, "bench-model", timeout=60)
    await run_load(target, concurrency, concurrency)
    result = await run_load(target, requests, concurrency, max_duration=300)
    good = [r for r in result.rows if r.ok]
    return {
        "ttft": [r.ttft_ms for r in good],
        "itl": [r.itl_mean_ms for r in good if r.itl_mean_ms is not None],
        "errors": len(result.rows) - len(good),
        "client": result.client.to_json() if result.client else None,
    }


def from_spans(spans: list[dict[str, float]], errors: int = 0) -> dict[str, Any]:
    """TTFT from due, ITL per request, and the time from due to send (ms)."""
    return {
        "ttft": [(s["first"] - s["due"]) * 1000 for s in spans],
        "itl": [(s["last"] - s["first"]) / (s["tokens"] - 1) * 1000 for s in spans],
        "due_to_send": [(s["sent"] - s["due"]) * 1000 for s in spans if "sent" in s],
        "errors": errors,
    }


def tokenizer() -> str | None:
    """A local tokenizer for GuideLLM (no hub): $GUIDELLM_TOKENIZER, or a peer's model."""
    found = os.environ.get("GUIDELLM_TOKENIZER")
    if found:
        return found
    models = sorted(PEER_MODELS.glob("*/tokenizer.json")) if PEER_MODELS.exists() else []
    return str(models[0].parent) if models else None


def guidellm_run(exe: str, url: str, concurrency: int, requests: int, data: Path) -> dict:
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
    local = tokenizer()
    if local:
        cmd += ["--tokenizer", f"kind=huggingface_auto,model={local}"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env["OPENAI_API_KEY"] = KEY  # through the environment, never argv
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0 or not out.exists():
        raise RuntimeError(f"guidellm failed ({done.returncode}): {done.stderr[-800:]}")
    bench = json.loads(out.read_text())["benchmarks"][0]
    metrics = bench["metrics"]

    def stat(key: str, q: str) -> float | None:
        found = (metrics.get(key) or {}).get("successful") or {}
        if q == "median":
            return found.get("median")
        return (found.get("percentiles") or {}).get(q)

    made = bench["scheduler_metrics"]["requests_made"]
    return {
        "ttft_p50": stat("time_to_first_token_ms", "median"),
        "ttft_p90": stat("time_to_first_token_ms", "p90"),
        "itl_p50": stat("inter_token_latency_ms", "median"),
        "errors": made["errored"] + made["incomplete"],
    }


def _data_file() -> Path:
    path = Path(tempfile.mkdtemp(prefix="bench-load-")) / "prompts.jsonl"
    with path.open("w") as out:
        for i in range(4000):
            out.write(json.dumps({"prompt": f"hi, question {i}", "output_tokens_count": TOKENS}))
            out.write("\n")
    return path


def _figures(found: dict[str, Any]) -> dict[str, Any]:
    """p50/p90 and their errors against the truth; for ours the due-to-send share."""
    if "ttft_p50" in found:  # GuideLLM's own report
        p50, p90, itl = found["ttft_p50"], found["ttft_p90"], found["itl_p50"]
    else:
        p50, p90, itl = pct(found["ttft"], 50), pct(found["ttft"], 90), pct(found["itl"], 50)
    out: dict[str, Any] = {"errors": found["errors"]}
    truth = TRUTH["ttft_ms"]
    for name, value, base in (("ttft_p50", p50, truth), ("ttft_p90", p90, truth),
                              ("itl_p50", itl, TRUTH["itl_ms"])):  # fmt: skip
        out[f"{name}_ms"] = None if value is None else round(value, 2)
        out[f"{name}_error_ms"] = None if value is None else round(value - base, 2)
    if found.get("due_to_send"):
        own = statistics.median(found["due_to_send"])
        out["due_to_send_p50_ms"] = round(own, 3)
        out["due_to_send_p90_ms"] = round(pct(found["due_to_send"], 90) or 0.0, 3)
        error = (p50 or truth) - truth
        out["due_to_send_share"] = round(own / error, 3) if error > 0 else None
    if found.get("client"):  # our own loop's stalls while it measured
        out["client_lag"] = found["client"]
    return out


def accuracy(install: bool) -> None:
    from bench_capacity import find_guidellm

    from lmreg_nb.sandbox.school_model import MockModelConfig, serving_process

    exe = find_guidellm(install)
    if exe is None:
        emit(client="guidellm", skipped="guidellm not found: set GUIDELLM or run with --install")
    aio = has_aiohttp()
    data = _data_file()
    config = MockModelConfig(
        api_key=KEY, ttft_ms=TRUTH["ttft_ms"], itl_ms=TRUTH["itl_ms"], tokens=TOKENS,
        quirks=frozenset({"any-key"}),
    )  # fmt: skip
    with serving_process(config, workers=MOCK_WORKERS) as url:
        for c in CONCURRENCY:
            n = ACCURACY_REQUESTS[c]
            runs: dict[str, list[dict[str, Any]]] = {}
            for _round in range(ROUNDS):
                spans, lag = asyncio.run(ours_level(url, c, n))
                level = {**from_spans(spans), "client": lag}
                runs.setdefault("lmreg_nb_level", []).append(level)
                runs.setdefault("lmreg_nb_load", []).append(asyncio.run(ours_load(url, c, n)))
                if aio:
                    _w, _c, failed, spans = asyncio.run(aiohttp_loop(url, c, n))
                    runs.setdefault("aiohttp", []).append(from_spans(spans, failed))
                if exe is not None:
                    try:
                        runs.setdefault("guidellm", []).append(guidellm_run(exe, url, c, n, data))
                    except (RuntimeError, subprocess.TimeoutExpired, KeyError) as exc:
                        emit(phase="accuracy", client="guidellm", error=str(exc)[-300:])
            summary: dict[str, float | None] = {}
            for client, rounds in runs.items():
                for k, found in enumerate(rounds):
                    figures = _figures(found)
                    emit(phase="accuracy", client=client, concurrency=c, round=k + 1, **figures)
                found_errors = [_figures(f)["ttft_p50_error_ms"] for f in rounds]
                summary[client] = statistics.mean(e for e in found_errors if e is not None)
            if "guidellm" in summary:
                ours_error = summary["lmreg_nb_level"] or 0.0
                emit(
                    phase="accuracy",
                    concurrency=c,
                    ttft_p50_error_ms={k: round(v or 0, 2) for k, v in summary.items()},
                    goal="ours <= guidellm",
                    **{"pass": ours_error <= (summary["guidellm"] or 0.0)},
                )


def main() -> None:
    args = sys.argv[1:]
    phase = args[args.index("--phase") + 1] if "--phase" in args else None
    baseline = args[args.index("--baseline") + 1] if "--baseline" in args else None
    if phase in (None, "throughput"):
        throughput(baseline)
    if phase in (None, "accuracy"):
        accuracy("--install" in args)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--generate"]:
        url, conc, n = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        print(json.dumps(asyncio.run(ours(url, conc, n))))
    else:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        main()
