"""A scripted registration platform on loopback (a real HTTP server), for CLI tests.

It answers the token operation and query-models with whatever a test puts in
:class:`Script`: hostile model fields, an env holding escape sequences, an
error body, a 429 with an absurd Retry-After. :func:`run_cli` runs ``lmreg-nb``
as a real process against it (optionally on a pseudo-terminal, where click
strips nothing), so what reaches a person's terminal is what the test reads.
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

ROOT = Path(__file__).resolve().parents[1]
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


class _Handler(http.server.BaseHTTPRequestHandler):
    script: Script

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(min(length, 1 << 20))
        script = self.server.script  # type: ignore[attr-defined]
        script.requests.append(self.path)
        if self.path.endswith("/token"):
            data = {
                "token": script.token,
                "env": script.env,
                "expireTime": int(time.time() * 1000) + 86_400_000,
            }
            self._send(200, _envelope(data))
        elif self.path.endswith("/query-models"):
            if script.query_error is not None and script.query_errors_left != 0:
                if script.query_errors_left is not None:
                    script.query_errors_left -= 1
                status, body, headers = script.query_error
                self._send(status, body, headers)
            else:
                self._send(200, _envelope({"models": script.models}))
        else:
            self._send(404, _envelope({}, code=40400, message="no such path"))

    def _send(self, status: int, body: bytes, headers: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def _envelope(data: dict[str, Any], *, code: int = 0, message: str = "ok") -> bytes:
    return json.dumps({"code": code, "message": message, "data": data}).encode()


def envelope_error(code: int, message: str) -> bytes:
    """An error envelope's bytes (the message may hold anything a hostile server sends)."""
    return _envelope({}, code=code, message=message)


@contextlib.contextmanager
def loopback_platform() -> Iterator[tuple[str, Script]]:
    """A platform on a free loopback port for the block: its base URL and its script."""
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
    """A finished ``lmreg-nb`` process: its exit code, raw output bytes and duration."""

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
