"""Ways to run the mock school model: a uvicorn thread, a uvicorn process, an env factory."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

from starlette.applications import Starlette

from .app import create_app
from .config import MockModelConfig, parse_quirks

__all__ = ["app_from_env", "config_env", "serving", "serving_process"]


def app_from_env() -> Starlette:
    """An app configured by ``LMREG_MOCK_*`` variables (for ``uvicorn --factory --workers``).

    ``LMREG_MOCK_API_KEY`` (required), ``LMREG_MOCK_TTFT_MS``, ``LMREG_MOCK_ITL_MS``,
    ``LMREG_MOCK_TOKENS``, ``LMREG_MOCK_QUIRKS`` (comma-separated), ``LMREG_MOCK_SLOTS``,
    ``LMREG_MOCK_SLOWDOWN``, ``LMREG_MOCK_SERVED``, ``LMREG_MOCK_CONTEXT_WINDOW``,
    ``LMREG_MOCK_PREFILL_TOKENS_PER_S``, ``LMREG_MOCK_PREFIX_CACHE`` (1 or 0),
    ``LMREG_MOCK_KV_TOKENS``.
    """
    env = os.environ
    return create_app(
        MockModelConfig(
            api_key=env["LMREG_MOCK_API_KEY"],
            ttft_ms=float(env.get("LMREG_MOCK_TTFT_MS", 50)),
            itl_ms=float(env.get("LMREG_MOCK_ITL_MS", 10)),
            tokens=int(env.get("LMREG_MOCK_TOKENS", 32)),
            quirks=parse_quirks([env.get("LMREG_MOCK_QUIRKS", "")]),
            slots=int(env.get("LMREG_MOCK_SLOTS", 0)),
            slowdown=float(env.get("LMREG_MOCK_SLOWDOWN", 0)),
            served=tuple(n for n in env.get("LMREG_MOCK_SERVED", "").split(",") if n),
            context_window=int(env.get("LMREG_MOCK_CONTEXT_WINDOW", 0)),
            prefill_tokens_per_s=float(env.get("LMREG_MOCK_PREFILL_TOKENS_PER_S", 0)),
            prefix_cache=env.get("LMREG_MOCK_PREFIX_CACHE", "0") == "1",
            kv_tokens=int(env.get("LMREG_MOCK_KV_TOKENS", 0)),
        )
    )


@contextlib.contextmanager
def serving(
    config: MockModelConfig,
    host: str = "127.0.0.1",
    *,
    certfile: str | None = None,
    keyfile: str | None = None,
) -> Iterator[str]:
    """Serve the mock with uvicorn in a background thread; yields its base URL.

    For tests and notebooks; the sandbox command runs it in its own process.
    ``certfile`` (and ``keyfile``, PEM) serve https with that certificate.
    """
    import uvicorn

    # IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets that say so; without it
    # Nagle + delayed ACK hold a stream's chunks back by up to 40 ms.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(config),
            log_level="warning",
            timeout_graceful_shutdown=1,
            backlog=512,
            ssl_certfile=certfile,
            ssl_keyfile=keyfile,
        )
    )
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="mock-school-model", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the mock school model did not start")
        time.sleep(0.01)
    try:
        yield f"{'https' if certfile else 'http'}://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def config_env(config: MockModelConfig) -> dict[str, str]:
    return {
        "LMREG_MOCK_API_KEY": config.api_key,
        "LMREG_MOCK_TTFT_MS": repr(config.ttft_ms),
        "LMREG_MOCK_ITL_MS": repr(config.itl_ms),
        "LMREG_MOCK_TOKENS": str(config.tokens),
        "LMREG_MOCK_QUIRKS": ",".join(sorted(config.quirks)),
        "LMREG_MOCK_SLOTS": str(config.slots),
        "LMREG_MOCK_SLOWDOWN": repr(config.slowdown),
        "LMREG_MOCK_SERVED": ",".join(config.served),
        "LMREG_MOCK_CONTEXT_WINDOW": str(config.context_window),
        "LMREG_MOCK_PREFILL_TOKENS_PER_S": repr(config.prefill_tokens_per_s),
        "LMREG_MOCK_PREFIX_CACHE": "1" if config.prefix_cache else "0",
        "LMREG_MOCK_KV_TOKENS": str(config.kv_tokens),
    }


@contextlib.contextmanager
def serving_process(
    config: MockModelConfig, *, workers: int = 1, host: str = "127.0.0.1", timeout: float = 30
) -> Iterator[str]:
    """Serve the mock in a separate uvicorn process (``workers`` processes); yields its base URL.

    For benchmarks: the mock then shares no GIL with the load generator. The
    configuration (the key included) goes through the environment, not argv.
    Each worker has its own slots, prefill queue, prefix cache and KV room, as
    ``workers`` GPUs behind one address would: use one worker to model one GPU.
    """
    import httpx

    with socket.socket() as probe:
        probe.bind((host, 0))
        port = probe.getsockname()[1]
    cmd = [
        sys.executable, "-m", "uvicorn", "--factory", f"{__name__}:app_from_env",
        "--host", host, "--port", str(port), "--workers", str(workers),
        "--log-level", "warning", "--backlog", "2048", "--timeout-graceful-shutdown", "2",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, env={**os.environ, **config_env(config)})
    base = f"http://{host}:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the mock school model exited with code {proc.returncode}")
            try:
                if httpx.get(base + "/health", timeout=1, trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the mock school model did not start in time")
            time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
