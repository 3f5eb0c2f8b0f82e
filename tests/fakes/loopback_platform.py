"""A scripted registration platform, for the CLI's and the watch's tests.

It answers the token operation and query-models with whatever a test puts in
:class:`Script`: hostile model fields, an env holding escape sequences, an
error body, a 429 with an absurd Retry-After. :func:`loopback_platform` serves it
in this process (an address of tests/fakes/hosts.py: every client of the code under
test reaches it, no port is bound). Where a real ``lmreg-nb`` process is the point,
:func:`tcp_platform` serves it on a loopback port and :func:`run_cli` runs the
command (optionally on a pseudo-terminal, where click strips nothing), so what
reaches a person's terminal is what the test reads.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import pty
import select
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
APP_ID = "app-loopback"
APP_SECRET = "APPSECRET-loopback-4b8d2f6a1c"
TOKEN = "TOKEN-loopback-9c7e5a3b1d"


@dataclass
class Script:
    """What the platform answers; a test changes it before (or between) CLI runs."""

    env: str = "env-loopback"
    token: str = TOKEN
    models: list[dict[str, Any]] = field(default_factory=list)
    #: Instead of the models: (HTTP status, body bytes, headers), for query-models.
    query_error: tuple[int, bytes, dict[str, str]] | None = None
    #: How many query-models requests get ``query_error`` (then the models); None: all.
    query_errors_left: int | None = None
    requests: list[str] = field(default_factory=list)


def answer(script: Script, path: str) -> tuple[int, bytes, dict[str, str]]:
    """(HTTP status, body, headers) of the platform's answer to a POST of ``path``."""
    script.requests.append(path)
    if path.endswith("/token"):
        data = {
            "token": script.token,
            "env": script.env,
            "expireTime": int(time.time() * 1000) + 86_400_000,
        }
        return 200, _envelope(data), {}
    if path.endswith("/query-models"):
        if script.query_error is not None and script.query_errors_left != 0:
            if script.query_errors_left is not None:
                script.query_errors_left -= 1
            return script.query_error
        return 200, _envelope({"models": script.models}), {}
    return 404, _envelope({}, code=40400, message="no such path"), {}


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(min(length, 1 << 20))
        status, body, headers = answer(self.server.script, self.path)  # type: ignore[attr-defined]
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def _app(script: Script) -> Any:
    """The script as an ASGI app."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        more = True
        while more:  # the request's body, read and dropped
            message = await receive()
            more = message.get("more_body", False)
        status, body, headers = answer(script, scope["path"])
        fields = [(b"content-type", b"application/json")]
        fields += [(k.lower().encode(), v.encode("latin-1")) for k, v in headers.items()]
        fields.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": fields})
        await send({"type": "http.response.body", "body": body})

    return app


def _envelope(data: dict[str, Any], *, code: int = 0, message: str = "ok") -> bytes:
    return json.dumps({"code": code, "message": message, "data": data}).encode()


def envelope_error(code: int, message: str) -> bytes:
    """An error envelope's bytes (the message may hold anything a hostile server sends)."""
    return _envelope({}, code=code, message=message)


@contextlib.contextmanager
def loopback_platform() -> Iterator[tuple[str, Script]]:
    """The platform served in this process for the block: its base URL and its script."""
    from fakes import hosts

    script = Script()
    with hosts.served(_app(script)) as base:
        yield base, script


@contextlib.contextmanager
def tcp_platform() -> Iterator[tuple[str, Script]]:
    """A platform on a free loopback port (for a real ``lmreg-nb`` process): its base URL
    and its script."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.script = Script()  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.script  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


def cli_env(base_url: str, home: Path, **extra: str) -> dict[str, str]:
    """A clean environment for ``lmreg-nb`` against ``base_url`` (English, a private cache)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LMREG_", "PYTHONIO"))}
    env.update(
        PYTHONPATH=str(ROOT),
        HOME=str(home),
        LMREG_LANG="en",
        LMREG_BASE_URL=base_url,
        LMREG_APP_ID=APP_ID,
        LMREG_APP_SECRET=APP_SECRET,
        LMREG_TOKEN_CACHE=str(home / "tokens.json"),
        LMREG_TIMEOUT="5",
    )
    env.update(extra)
    return env


@dataclass
class Ran:
    """A finished ``lmreg-nb`` run (a process, or in this process): its exit code, raw
    output bytes and duration."""

    returncode: int
    stdout: bytes
    stderr: bytes
    seconds: float


def run_cli(args: list[str], env: Mapping[str, str], cwd: Path, *, timeout: float = 120) -> Ran:
    """``python -m lmreg_nb ARGS`` with stdout and stderr captured as bytes."""
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "lmreg_nb", *args],
        env=dict(env),
        cwd=cwd,
        capture_output=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    return Ran(proc.returncode, proc.stdout, proc.stderr, time.monotonic() - started)


def start_cli(args: list[str], env: Mapping[str, str], cwd: Path) -> subprocess.Popen[str]:
    """``python -m lmreg_nb ARGS`` started, its output piped (for runs that wait side by side:
    :func:`finish_cli` waits for each)."""
    return subprocess.Popen(
        [sys.executable, "-m", "lmreg_nb", *args], env=dict(env), cwd=cwd, text=True,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def finish_cli(proc: subprocess.Popen[str], timeout: float = 240) -> tuple[str, str]:
    """A :func:`start_cli` run's stdout and stderr once it ended (killed after ``timeout`` s,
    or when the caller is interrupted)."""
    try:
        return proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def run_cli_on_tty(
    args: list[str], env: Mapping[str, str], cwd: Path, *, timeout: float = 120
) -> Ran:
    """Like :func:`run_cli`, but stdout and stderr are one pseudo-terminal (read as bytes).

    On a terminal click strips no escape sequence, so this is what a person sees.
    """
    started = time.monotonic()
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "lmreg_nb", *args],
        env=dict(env),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
    )
    os.close(slave)
    out = b""
    try:
        while time.monotonic() - started < timeout:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
        proc.wait(timeout=max(1.0, timeout - (time.monotonic() - started)))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return Ran(proc.returncode, out, b"", time.monotonic() - started)
