"""Start `lmreg-nb sandbox` as a child process for tests, notebooks and `lmreg-nb demo`."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import httpx

from ..errors import LmregError
from ..i18n import _

__all__ = ["SandboxError", "SandboxInfo", "running_sandbox"]


class SandboxError(LmregError, RuntimeError):
    """The sandbox process did not start or answer (one line; the CLI prints it, exit 1)."""


_GRACE_S = 10.0


@dataclass(frozen=True)
class SandboxInfo:
    """Where a running sandbox listens and its demo credentials (plain: test use only)."""

    base_url: str
    token_path: str
    model_url: str
    app_id: str
    app_secret: str
    model_api_key: str
    db: Path
    pid: int | None = None  # the sandbox process

    def __repr__(self) -> str:
        # Never show the secrets, even in a test failure report.
        return (
            f"SandboxInfo(base_url={self.base_url!r}, model_url={self.model_url!r},"
            f" app_id={self.app_id!r}, db={str(self.db)!r})"
        )

    def env(self) -> dict[str, str]:
        """The LMREG_* variables that point the toolkit at this sandbox."""
        return {
            "LMREG_BASE_URL": self.base_url,
            "LMREG_TOKEN_PATH": self.token_path,
            "LMREG_APP_ID": self.app_id,
            "LMREG_APP_SECRET": self.app_secret,
            "LMREG_MODEL_URL": self.model_url,
            "LMREG_MODEL_API_KEY": self.model_api_key,
            "LMREG_MODEL_NAME": "sandbox-model",
        }

    def add_app(self, name: str) -> dict[str, str]:
        """A new account in this sandbox's database: {"app_id", "app_secret", "env"}."""
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "lmreg_nb",
                "sandbox",
                "add-app",
                "--db",
                str(self.db),
                "--name",
                name,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if done.returncode != 0:
            raise SandboxError(
                _("sandbox add-app failed: {error}").format(error=done.stderr.strip()[-500:])
            )
        value: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
        return value


def _read_first_line(stream: IO[str], out: queue.Queue[str | None]) -> None:
    try:
        out.put(stream.readline() or None)
    except (OSError, ValueError):
        out.put(None)


@contextmanager
def running_sandbox(
    *,
    db: Path | None = None,
    args: Sequence[str] = (),
    startup_timeout: float = 30.0,
) -> Iterator[SandboxInfo]:
    """Run `lmreg-nb sandbox` on free loopback ports; yield its SandboxInfo; stop it.

    ``db`` None uses a temporary database removed afterwards. Raises SandboxError
    (a RuntimeError and an LmregError: one line, with the tail of the child's
    stderr) when it does not come up in time.
    """
    tmpdir = None
    if db is None:
        tmpdir = tempfile.mkdtemp(prefix="lmreg-sandbox-")
        db = Path(tmpdir) / "sandbox.sqlite3"
    db = Path(db)
    # A file, not a pipe: nobody drains the child's stderr while tests run.
    stderr_file = tempfile.TemporaryFile(mode="w+", prefix="lmreg-sandbox-stderr-")  # noqa: SIM115
    cmd = [
        sys.executable, "-m", "lmreg_nb", "sandbox",
        "--host", "127.0.0.1", "--port", "0", "--model-port", "0", "--db", str(db), *args,
        "--parent-pid", str(os.getpid()),  # it stops when this process dies, even by SIGKILL
    ]  # fmt: skip
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=stderr_file, stdin=subprocess.DEVNULL,
        text=True, env=env,
    )  # fmt: skip
    try:
        info = _wait_until_up(proc, db, startup_timeout, stderr_file)
        yield info
    finally:
        _stop(proc)
        stderr_file.close()
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)


def _stderr_tail(stderr_file: IO[str]) -> str:
    stderr_file.seek(0)
    return " ".join(stderr_file.read().strip().splitlines()[-5:])[-800:]


def _wait_until_up(
    proc: subprocess.Popen[str], db: Path, timeout: float, stderr_file: IO[str]
) -> SandboxInfo:
    deadline = time.monotonic() + timeout
    lines: queue.Queue[str | None] = queue.Queue()
    assert proc.stdout is not None
    threading.Thread(target=_read_first_line, args=(proc.stdout, lines), daemon=True).start()
    try:
        line = lines.get(timeout=timeout)
    except queue.Empty:
        line = None
    if not line:
        raise SandboxError(
            _("the sandbox did not start (exit code {code}): {error}").format(
                code=proc.poll(), error=_stderr_tail(stderr_file)
            )
        )
    try:
        fields = json.loads(line)
    except ValueError:
        raise SandboxError(
            _("the sandbox printed {line} instead of its JSON line").format(
                line=repr(line.strip()[:200])
            )
        ) from None
    keys = ("base_url", "token_path", "model_url", "app_id", "app_secret", "model_api_key")
    info = SandboxInfo(db=db, pid=proc.pid, **{k: fields[k] for k in keys})
    model_root = info.model_url.rsplit("/v1/", 1)[0] + "/"
    for url in (info.base_url + "/openapi.json", model_root):
        while True:
            try:
                # Any HTTP answer means it is serving: so not a proxy's (loopback, directly).
                httpx.get(url, timeout=2.0, trust_env=False)
                break
            except httpx.TransportError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SandboxError(
                        _("the sandbox does not answer at {url}: {error}").format(
                            url=url, error=_stderr_tail(stderr_file)
                        )
                    ) from None
                time.sleep(0.05)
    return info


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        if os.name == "nt":  # pragma: no cover - no SIGINT to send to a child there
            proc.terminate()
        else:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=_GRACE_S)
    if proc.stdout is not None:
        proc.stdout.close()
