"""What RegistryClient costs over plain httpx, against a real sandbox process, in one run.

Prints JSON lines (one object per line, each with a "bench" name):

- ``query_httpx_baseline``: N POSTs of query-models with a bare ``httpx.Client``
  (same headers, a token fetched once): the floor any client pays;
- ``query_client``: N ``RegistryClient.query_models()`` calls (token from memory,
  envelope parsing, logging, RegisteredModel objects), with
  ``overhead_vs_httpx`` = median / baseline median;
- ``token_sources``: median microseconds for a token from memory, from the cache
  file (a new client each time) and from an exchange over HTTP;
- ``register_lost_answer``: median ms of a register whose answer is lost (the
  lookup that settles it), next to a plain register.

Usage: python bench/bench_client.py [--calls 200]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from lmreg_nb.models import ModelDraft
from lmreg_nb.registry.client import QUERY_PATH, REGISTER_PATH, RegistryClient
from lmreg_nb.sandbox.process import running_sandbox
from lmreg_nb.secret import Secret
from lmreg_nb.settings import Settings


def emit(**fields: object) -> None:
    """One JSON line on stdout."""
    print(json.dumps(fields), flush=True)


def timed(fn: Callable[[], object], runs: int) -> list[float]:
    """Seconds per call, ``runs`` times (after one warm-up call)."""
    fn()
    out = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        out.append(time.perf_counter() - started)
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class LoseFirstRegister(httpx.BaseTransport):
    """Forwards to the server; the answer of every other register is lost."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.count = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.url.path == REGISTER_PATH:
            self.count += 1
            if self.count % 2:
                response.read()
                response.close()
                raise httpx.ReadTimeout("lost", request=request)
        return response

    def close(self) -> None:
        self.inner.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    calls = parser.parse_args().calls
    with tempfile.TemporaryDirectory() as tmp, running_sandbox() as info:
        settings = Settings.load(environ=info.env(), token_cache=Path(tmp) / "tokens.json")
        with RegistryClient(settings) as client:
            for i in range(5):
                client.register_model(ModelDraft(f"bench-{i}", info.model_url, Secret("k" * 20)))
            token = client.token()
            headers = {"Authorization": f"Bearer {token.token.reveal()}", "X-ENV": token.env}
            with httpx.Client(base_url=info.base_url) as bare:
                base = timed(lambda: bare.post(QUERY_PATH, json={}, headers=headers).json(), calls)
            ours = timed(client.query_models, calls)
        b50, o50 = statistics.median(base), statistics.median(ours)
        emit(
            bench="query_httpx_baseline", calls=calls, p50_ms=b50 * 1e3, p90_ms=pct(base, 0.9) * 1e3
        )
        emit(
            bench="query_client",
            calls=calls,
            p50_ms=o50 * 1e3,
            p90_ms=pct(ours, 0.9) * 1e3,
            overhead_vs_httpx=o50 / b50,
        )

        with RegistryClient(settings) as client:
            memory = timed(client.token, calls)

        def from_file() -> None:
            with RegistryClient(settings) as fresh:
                fresh.token()

        cached = timed(from_file, min(calls, 50))
        exchange_settings = settings.with_(token_cache=Path(tmp) / "none" / "t.json")

        def exchange() -> None:
            with RegistryClient(exchange_settings) as fresh:
                fresh._tokens.cache = None  # no cache: a real exchange each time
                fresh.token()

        exchanged = timed(exchange, min(calls, 50))
        emit(
            bench="token_sources",
            memory_us=statistics.median(memory) * 1e6,
            cache_file_us=statistics.median(cached) * 1e6,
            exchange_us=statistics.median(exchanged) * 1e6,
        )

        n = 20
        counter = iter(range(10**6))
        with RegistryClient(settings) as plain:
            normal = timed(
                lambda: plain.register_model(
                    ModelDraft(f"plain-{next(counter)}", info.model_url, Secret("k" * 20))
                ),
                n,
            )
        with RegistryClient(settings, transport=LoseFirstRegister()) as lossy:
            lost = timed(
                lambda: lossy.register_model(
                    ModelDraft(f"lost-{next(counter)}", info.model_url, Secret("k" * 20))
                ),
                n,
            )
            models = lossy.query_models()
        names = [m.model_name for m in models]
        emit(
            bench="register_lost_answer",
            registers=n,
            plain_p50_ms=statistics.median(normal) * 1e3,
            lost_answer_p50_ms=statistics.median(lost) * 1e3,
            duplicates=len(names) - len(set(names)),
        )


if __name__ == "__main__":
    main()
