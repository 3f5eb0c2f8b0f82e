"""Run the sandbox platform and the mock school model in one process.

Two uvicorn servers share one asyncio loop. Their sockets are bound before
anything starts, so port 0 works (the OS picks, the announcement reports the
real port). SIGINT/SIGTERM ask both to finish their requests and stop; a
second SIGINT stops at once. Started with a parent pid (``running_sandbox``,
``lmreg-nb demo``), the sandbox also stops when that process dies, even by SIGKILL.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn

from .platform.app import PlatformConfig, create_app
from .platform.store import Store

__all__ = [
    "SandboxOptions",
    "bind_socket",
    "is_loopback",
    "sandbox_apps",
    "serve_sandbox",
    "watch_parent",
]

log = logging.getLogger("lmreg_nb")


@dataclass(frozen=True)
class SandboxOptions:
    """Everything `lmreg-nb sandbox` was asked for."""

    db: Path
    host: str = "127.0.0.1"
    port: int = 8765
    model_port: int = 8766
    platform: PlatformConfig = field(default_factory=PlatformConfig)
    ttft_ms: float = 50.0
    itl_ms: float = 10.0
    tokens: int = 32
    quirks: frozenset[str] = frozenset()
    slots: int = 0  # mock model: requests served at once (0: no limit)
    slowdown: float = 0.0  # mock model: decode slowdown per extra stream in progress
    served: tuple[str, ...] = ()  # mock model: the model names served (empty: any)
    parent_pid: int | None = None  # stop when this process dies (a demo, a test run)
    context_window: int = 0  # mock model: prompt + max_tokens accepted (0: no limit)
    prefill_tokens_per_s: float = 0.0  # mock model: one FCFS prefill queue (0: free)
    prefix_cache: bool = False  # mock model: a prompt's start seen before costs no prefill
    kv_tokens: int = 0  # mock model: prompt + reply tokens in flight at once (0: no limit)


def is_loopback(host: str) -> bool:
    """Whether ``host`` names the loopback interface only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind_socket(host: str, port: int) -> socket.socket:
    """A bound TCP socket on host:port (port 0: the OS picks a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio turns TCP_NODELAY on only for sockets that say
    # so, and without it Nagle + delayed ACK add ~40 ms to every reused connection.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError:
        sock.close()
        raise
    return sock


_PARENT_POLL_S = 0.25
#: After the parent died: time for a clean stop before the process ends anyway.
_ORPHAN_GRACE_S = 10.0


def _parent_alive(pid: int, started: float | None) -> bool:
    if os.name == "posix":
        # Reparented (to init or a subreaper) exactly when the parent died; no pid reuse race.
        return os.getppid() == pid
    import psutil  # pragma: no cover - Windows keeps the dead parent's id in getppid

    try:  # pragma: no cover
        return psutil.Process(pid).create_time() == started
    except psutil.Error:  # pragma: no cover
        return False


def watch_parent(pid: int, stop: Callable[[], None]) -> threading.Thread:
    """Call ``stop`` once process ``pid`` (this one's parent) has died, even by SIGKILL;
    end this process if it has not stopped :data:`_ORPHAN_GRACE_S` later.

    A daemon thread polling, not a signal: works on every system and whatever way
    the parent ended (PR_SET_PDEATHSIG is Linux only, and fires when the parent's
    *thread* ends).
    """
    import psutil

    try:
        started: float | None = psutil.Process(pid).create_time()
    except psutil.Error:
        started = None

    def run() -> None:
        while _parent_alive(pid, started):
            time.sleep(_PARENT_POLL_S)
        log.warning("the process that started this sandbox (pid %s) is gone; stopping", pid)
        stop()
        time.sleep(_ORPHAN_GRACE_S)
        os._exit(1)

    thread = threading.Thread(target=run, name="lmreg-parent-watch", daemon=True)
    thread.start()
    return thread


class _Server(uvicorn.Server):
    """A uvicorn server that leaves signal handling to us (two servers, one loop)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}"


def sandbox_apps(options: SandboxOptions, store: Store) -> tuple[Any, Any]:
    """The platform's app over ``store`` and the mock school model's app (the demo
    account's key), as `lmreg-nb sandbox` serves them."""
    from .school_model import MockModelConfig
    from .school_model import create_app as create_model_app

    demo = store.demo()
    model = MockModelConfig(
        api_key=demo.model_api_key,
        ttft_ms=options.ttft_ms,
        itl_ms=options.itl_ms,
        tokens=options.tokens,
        quirks=options.quirks,
        slots=options.slots,
        slowdown=options.slowdown,
        served=options.served,
        context_window=options.context_window,
        prefill_tokens_per_s=options.prefill_tokens_per_s,
        prefix_cache=options.prefix_cache,
        kv_tokens=options.kv_tokens,
    )
    return create_app(store, options.platform), create_model_app(model)


def serve_sandbox(options: SandboxOptions, announce: Callable[[dict[str, str]], None]) -> None:
    """Serve until SIGINT/SIGTERM; call ``announce`` with the JSON line's fields once up.

    Raises OSError when a port cannot be bound.
    """
    store = Store(options.db)
    try:
        demo = store.demo()
        platform_sock = bind_socket(options.host, options.port)
        try:
            model_sock = bind_socket(options.host, options.model_port)
        except OSError:
            platform_sock.close()
            raise
        platform_app, model_app = sandbox_apps(options, store)
        base_url = _url(options.host, platform_sock.getsockname()[1])
        model_base = _url(options.host, model_sock.getsockname()[1])
        info = {
            "base_url": base_url,
            "token_path": options.platform.token_path,
            "model_url": model_base + "/v1/chat/completions",
            "app_id": demo.app_id,
            "app_secret": demo.app_secret,
            "model_api_key": demo.model_api_key,
        }
        servers = [_server(platform_app), _server(model_app)]
        asyncio.run(
            _serve_both(
                servers, [platform_sock, model_sock], lambda: announce(info), options.parent_pid
            )
        )
    finally:
        store.close()


def _server(app: Any) -> _Server:
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        backlog=2048,
        timeout_graceful_shutdown=2,
        # The mock may hold streams open; keep-alive sockets close quickly on stop.
        timeout_keep_alive=5,
    )
    return _Server(config)


async def _serve_both(
    servers: list[_Server],
    sockets: list[socket.socket],
    on_started: Callable[[], None],
    parent_pid: int | None = None,
) -> None:
    loop = asyncio.get_running_loop()

    def stop(sig: int) -> None:
        for server in servers:
            if server.should_exit and sig == signal.SIGINT:
                server.force_exit = True
            server.should_exit = True

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop, sig)
    if parent_pid is not None:

        def stop_from_thread() -> None:
            loop.call_soon_threadsafe(stop, signal.SIGTERM)

        watch_parent(parent_pid, stop_from_thread)

    async def announce_when_up() -> None:
        while not all(s.started for s in servers):
            if any(s.should_exit for s in servers):
                return
            await asyncio.sleep(0.01)
        on_started()

    tasks = [
        asyncio.create_task(server.serve(sockets=[sock]))
        for server, sock in zip(servers, sockets, strict=True)
    ]
    watcher = asyncio.create_task(announce_when_up())
    try:
        # If one server dies (e.g. its startup fails), stop the other too.
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for server in servers:
            server.should_exit = True
        await asyncio.gather(*tasks, return_exceptions=True)
        for task in done:
            if task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
    finally:
        watcher.cancel()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        for sock in sockets:
            sock.close()
