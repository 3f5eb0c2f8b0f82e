"""Throughput of the sandbox platform next to a bare FastAPI endpoint on the same server.

A child process serves the platform app (real SQLite file, WAL) with one extra
route, ``POST /bench/bare``, that parses nothing and returns a constant: the
baseline is the same process, the same uvicorn, the same loop. This process
drives each scenario with httpx (asyncio, fixed concurrency) for a bounded time
and prints one JSON line per scenario, then stops the child.

    /work/venv/bin/python bench/bench_platform.py [--seconds 3] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

QUERY_MODELS = 10


def serve(db: Path) -> None:
    """Child mode: serve platform + bare route on a free port; print {port, token, env}."""
    import uvicorn
    from fastapi.responses import JSONResponse

    from lmreg_nb.sandbox.platform.app import PlatformConfig, create_app
    from lmreg_nb.sandbox.platform.store import Store
    from lmreg_nb.sandbox.server import bind_socket

    store = Store(db)
    demo = store.demo()
    issued = store.issue_token(demo.app_id, demo.app_secret, 3600)
    # query-models gets an account of its own with a fixed number of models, so its
    # figure does not depend on how many the register scenario added.
    reader = store.add_account("bench-query")
    assert reader.app_secret is not None
    reader_token = store.issue_token(reader.app_id, reader.app_secret, 3600)
    assert issued is not None and reader_token is not None
    for i in range(QUERY_MODELS):
        store.register(
            reader.id,
            {
                "modelName": f"listed-{i}",
                "registryUrl": "https://llm.school.example/v1/chat/completions",
                "apiKey": f"sk-listed-{i:04d}",
            },
        )
    app = create_app(store, PlatformConfig())

    async def bare() -> JSONResponse:
        return JSONResponse({"code": 0, "message": "OK", "data": {}})

    app.add_api_route("/bench/bare", bare, methods=["POST"])
    sock = bind_socket("127.0.0.1", 0)
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", backlog=2048)
    )
    print(
        json.dumps(
            {
                "port": sock.getsockname()[1],
                "token": issued.token,
                "env": issued.env,
                "query_token": reader_token.token,
                "query_env": reader_token.env,
            }
        ),
        flush=True,
    )
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the SIGINT it handled: we are done
        pass
    finally:
        store.close()


async def drive(
    url: str,
    make_body: Callable[[int], dict[str, Any]],
    headers: dict[str, str],
    *,
    seconds: float,
    concurrency: int,
    max_requests: int,
) -> dict[str, Any]:
    """Send requests from ``concurrency`` workers until time or count runs out."""
    counter = itertools.count()
    latencies: list[float] = []
    codes: dict[str, int] = {}
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=30.0, limits=limits, headers=headers) as client:
        deadline = time.perf_counter() + seconds

        async def worker() -> None:
            while time.perf_counter() < deadline:
                i = next(counter)
                if i >= max_requests:
                    return
                start = time.perf_counter()
                r = await client.post(url, json=make_body(i))
                latencies.append(time.perf_counter() - start)
                key = str(r.json().get("code"))
                codes[key] = codes.get(key, 0) + 1

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    latencies.sort()
    q = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else latencies * 99
    return {
        "requests": len(latencies),
        "seconds": round(elapsed, 3),
        "requests_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": round(q[49] * 1000, 2),
        "p99_ms": round(q[98] * 1000, 2),
        "codes": codes,
    }


def main() -> None:
    """Run the scenarios and print one JSON line each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="per scenario")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--max-requests", type=int, default=20000, help="per scenario")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return

    tmp = tempfile.mkdtemp(prefix="bench-platform-")
    db = Path(tmp) / "bench.sqlite3"
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(db)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert child.stdout is not None
        info = json.loads(child.stdout.readline())
        base = f"http://127.0.0.1:{info['port']}"
        auth = {"Authorization": f"Bearer {info['token']}", "X-ENV": info["env"]}
        reader = {"Authorization": f"Bearer {info['query_token']}", "X-ENV": info["query_env"]}
        run = f"{time.time_ns():x}"

        def model(i: int) -> dict[str, Any]:
            return {
                "modelName": f"bench-{run}-{i}",
                "registryUrl": "https://llm.school.example/v1/chat/completions",
                "apiKey": f"sk-bench-{i:08d}",
            }

        common = {
            "seconds": args.seconds,
            "concurrency": args.concurrency,
            "max_requests": args.max_requests,
        }
        scenarios: list[tuple[str, str, Callable[[int], dict[str, Any]], dict[str, str]]] = [
            ("bare_fastapi", "/bench/bare", lambda i: {}, {}),
            ("platform_register", "/openapi/v1/registry-model", model, auth),
            ("platform_query", "/openapi/v1/query-models", lambda i: {}, reader),
        ]
        # Warm up connections and code paths (and leave models for query to list).
        asyncio.run(
            drive(base + "/bench/bare", lambda i: {}, {}, **{**common, "max_requests": 200})
        )
        results: dict[str, dict[str, Any]] = {}
        for name, path, body, headers in scenarios:
            results[name] = asyncio.run(drive(base + path, body, headers, **common))
        listed = httpx.post(base + "/openapi/v1/query-models", json={}, headers=reader)
        stored = len(listed.json()["data"]["models"])
        baseline = results["bare_fastapi"]["requests_per_s"]
        for name, result in results.items():
            line = {
                "bench": name,
                **result,
                "concurrency": args.concurrency,
                "baseline": "bare_fastapi",
                "ratio_to_baseline": round(result["requests_per_s"] / baseline, 3),
            }
            if name == "platform_query":
                line["models_listed"] = stored
            print(json.dumps(line), flush=True)
    finally:
        child.send_signal(signal.SIGINT)
        try:
            child.wait(timeout=15)
        except subprocess.TimeoutExpired:
            child.kill()
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
