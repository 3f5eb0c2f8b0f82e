"""Canary: endpoints that echo the apiKey everywhere they can; no secret may come out.

A small hostile school model (stdlib HTTP server on loopback) puts the
Authorization header it receives into a 500 JSON error body, an HTML error
page and the reply itself, in raw, JSON-escaped, URL-encoded and base64 forms
and in pieces. `lmreg-nb check`, `lmreg-nb onboard` and `lmreg-nb batch` run
against it as real processes; every byte they print or write is searched with a
leak detector written here, independently of the toolkit's own masker.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote

import pytest

from lmreg_nb.sandbox.process import SandboxInfo

CANARY_KEY = "sk-canary-Zq81Lm3Xv9Tb6Wd2"
WINDOW = 8


def secret_forms(secret: str) -> set[str]:
    """What counts as a leak of ``secret``: its encodings, and every 8-character piece."""
    raw = secret.encode()
    forms = {secret, json.dumps(secret)[1:-1], quote(secret, safe=""), quote(secret)}
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        for pad in range(3):
            text = encode(b"\0" * pad + raw).decode().rstrip("=")
            # Characters mixing the secret's bits with its neighbours' are not the secret's.
            core = text[(0, 2, 3)[pad] : len(text) - 1]
            if len(core) >= WINDOW:
                forms.add(core)
    forms |= {secret[i : i + WINDOW] for i in range(len(secret) - WINDOW + 1)}
    return forms


def leaks_in(text: str, secrets: dict[str, str]) -> list[str]:
    """The labels of the secrets some form of which appears in ``text``."""
    return [
        label for label, value in secrets.items() if any(f in text for f in secret_forms(value))
    ]


def _echoes(auth: str) -> str:
    """The header in every form a careless server might use."""
    key = auth.removeprefix("Bearer ").strip()
    return " | ".join(
        [
            auth,
            json.dumps({"authorization": auth}),
            quote(key, safe=""),
            base64.b64encode(key.encode()).decode(),
            key[:10],
            key[-10:],
        ]
    )


class _EchoHandler(BaseHTTPRequestHandler):
    """/e500/..., /ehtml/..., /ereply/...: where to echo the Authorization header."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:  # keep the test output quiet
        pass

    def _send(self, status: int, ctype: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Echo", self.headers.get("Authorization", "")[:200])
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        auth = self.headers.get("Authorization", "")
        models = {
            "object": "list",
            "data": [{"id": "echo-llm", "object": "model", "note": _echoes(auth)}],
        }
        self._send(200, "application/json", json.dumps(models).encode())

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(min(length, 1 << 20)) or b"{}")
        auth = self.headers.get("Authorization", "")
        echoed = _echoes(auth)
        if self.path.startswith("/e500/"):
            error = {"error": {"message": f"rejected {echoed}", "type": "server_error"}}
            self._send(500, "application/json", json.dumps(error).encode())
        elif self.path.startswith("/ehtml/"):
            page = f"<html><head><title>502 {auth}</title></head><body>{echoed}</body></html>"
            self._send(502, "text/html", page.encode())
        elif body.get("stream"):
            self._stream(echoed)
        else:
            reply = {
                "id": "cmpl-echo",
                "object": "chat.completion",
                "model": body.get("model", ""),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": f"you sent {echoed}"},
                        "text": f"you sent {echoed}",
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6},
            }
            self._send(200, "application/json", json.dumps(reply).encode())

    def _stream(self, echoed: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        words = ["you", " sent ", echoed[:40], echoed[40:]]
        for word in words:
            chunk = {
                "id": "c",
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}],
            }
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        last = {"id": "c", "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}  # fmt: skip
        self.wfile.write(f"data: {json.dumps(last)}\n\ndata: [DONE]\n\n".encode())
        self.wfile.flush()
        self.close_connection = True


@pytest.fixture(scope="module")
def echo_base() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoHandler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _cli(
    args: list[str], env: dict[str, str], cwd: Path, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("LMREG_")} | env
    return subprocess.run(
        [sys.executable, "-m", "lmreg_nb", *args],
        env=full, cwd=cwd, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def _files_text(folder: Path) -> dict[Path, str]:
    return {p: p.read_bytes().decode("utf-8", "replace") for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("where", ["e500", "ehtml", "ereply"])
def test_check_never_prints_an_echoed_key(echo_base: str, tmp_path: Path, where: str) -> None:
    env = {
        "LMREG_MODEL_URL": f"{echo_base}/{where}/v1/chat/completions",
        "LMREG_MODEL_API_KEY": CANARY_KEY,
        "LMREG_MODEL_NAME": "echo-llm",
        "LMREG_TIMEOUT": "5",
    }
    for args in (
        ["check"],
        ["check", "--json"],
        ["check", "--requests", "4", "--concurrency", "2"],
    ):
        done = _cli(args, env, tmp_path, timeout=120)
        assert "Traceback" not in done.stderr, done.stderr[-2000:]
        assert done.returncode in (0, 1), done.stderr[-2000:]
        out = done.stdout + done.stderr
        assert out.strip(), "check printed nothing"
        assert leaks_in(out, {"apiKey": CANARY_KEY}) == [], f"{args} leaked the key:\n{out[-3000:]}"


def _sandbox_env(sandbox: SandboxInfo, echo_url: str) -> dict[str, str]:
    env = sandbox.env()
    env.update(
        {
            "LMREG_MODEL_URL": echo_url,
            "LMREG_MODEL_API_KEY": CANARY_KEY,
            "LMREG_MODEL_NAME": "echo-llm",
        }
    )
    return env


@pytest.mark.notebooks
def test_onboard_and_batch_leave_no_secret(
    echo_base: str, sandbox: SandboxInfo, tmp_path: Path
) -> None:
    secrets = {"apiKey": CANARY_KEY, "appSecret": sandbox.app_secret}
    env = _sandbox_env(sandbox, f"{echo_base}/ereply/v1/chat/completions")
    params = [
        "-p", "school", "Canary School", "-p", "contact_name", "Li Hua",
        "-p", "contact_mobile", "13800138000", "-p", "contact_email", "ops@canary.example",
        "-p", "model_name", "canary-model",
    ]  # fmt: skip
    onboard = _cli(["onboard", "--out", str(tmp_path / "one"), *params], env, tmp_path)
    assert "Traceback" not in onboard.stderr, onboard.stderr[-2000:]
    assert (tmp_path / "one").is_dir(), onboard.stdout + onboard.stderr

    (tmp_path / "school.env").write_text(
        "".join(
            f"{k}={v}\n"
            for k, v in _sandbox_env(sandbox, f"{echo_base}/e500/v1/chat/completions").items()
        ),
        encoding="utf-8",
    )
    (tmp_path / "plan.csv").write_text(
        "run_id,env_file,school,contact_name,contact_mobile,contact_email,model_name,check_requests\n"
        "canary-b,school.env,Canary B,Wang Fang,13900001111,ops@b.example,canary-b,0\n",
        encoding="utf-8",
    )
    batch = _cli(
        ["batch", "plan.csv", "--out", str(tmp_path / "batch"), "--jobs", "1"], {}, tmp_path
    )
    assert "Traceback" not in batch.stderr, batch.stderr[-2000:]
    assert (tmp_path / "batch").is_dir(), batch.stdout + batch.stderr

    printed = onboard.stdout + onboard.stderr + batch.stdout + batch.stderr
    assert leaks_in(printed, secrets) == [], printed[-3000:]
    written = _files_text(tmp_path / "one") | _files_text(tmp_path / "batch")
    assert written, "no file was written"
    leaked = {str(p): leaks_in(text, secrets) for p, text in written.items()}
    assert {p: labels for p, labels in leaked.items() if labels} == {}


def test_the_detector_finds_each_form() -> None:
    # The detector must itself catch what it is meant to catch.
    for text in _echoes(f"Bearer {CANARY_KEY}").split(" | "):
        assert leaks_in(text, {"k": CANARY_KEY}) == ["k"], text
    assert leaks_in("key …Wd2 masked", {"k": CANARY_KEY}) == []
