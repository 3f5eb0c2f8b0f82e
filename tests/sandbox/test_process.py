"""The `lmreg-nb sandbox` process: start, announce, serve, stop on a signal, restart, refuse.

Processes and sockets are the point here (the contract's one JSON line, SIGINT and
SIGTERM, a database kept across a restart, a port already taken, the compute flags
reaching the mock of a real process). What the platform and the mock answer is
tested in-process in the other files of this folder.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import openai
import pytest
from click.testing import CliRunner
from sbx_helpers import model

from lmreg_nb.cli import main
from lmreg_nb.errors import LmregError
from lmreg_nb.sandbox.process import running_sandbox
from lmreg_nb.sandbox.school_model.compute import tokenize
from lmreg_nb.sandbox.server import bind_socket

pytestmark = pytest.mark.slow  # each test starts a sandbox process or binds a socket

KEYS = {"base_url", "token_path", "model_url", "app_id", "app_secret", "model_api_key"}
LESSON = "图书馆每天早上八点开门，同学们可以在这里安静地读书。" * 40  # 1,040 CJK tokens


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_prints_one_json_line_serves_and_stops_cleanly(tmp_path: Path, sig: int) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "lmreg_nb", "sandbox", "--port", "0", "--model-port", "0",
         "--db", str(tmp_path / "s.sqlite3")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        info = json.loads(proc.stdout.readline())
        assert set(info) == KEYS
        assert info["base_url"].startswith("http://127.0.0.1:")
        assert info["token_path"] == "/openapi/v1/token"
        assert info["model_url"].endswith("/v1/chat/completions")
        r = httpx.post(
            info["base_url"] + info["token_path"],
            json={"appId": info["app_id"], "appSecret": info["app_secret"]},
            timeout=10,
        )
        assert r.json()["code"] == 0
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert out == "", "exactly one line on stdout"
    assert info["app_secret"] not in err


def test_a_port_in_use_is_a_one_line_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(
            main,
            ["sandbox", "--port", str(port), "--model-port", "0", "--db", str(tmp_path / "s")],
        )
    assert result.exit_code == 2
    assert "--port" in result.output
    assert "Traceback" not in result.output


def test_restart_keeps_accounts_tokens_models_and_demo_secrets(tmp_path: Path) -> None:
    db = tmp_path / "keep.sqlite3"
    with running_sandbox(db=db) as first, httpx.Client(timeout=10.0) as client:
        other = first.add_app("school-b")
        tok = client.post(
            first.base_url + first.token_path,
            json={"appId": first.app_id, "appSecret": first.app_secret},
        ).json()["data"]
        headers = {"Authorization": f"Bearer {tok['token']}", "X-ENV": tok["env"]}
        made = client.post(
            first.base_url + "/openapi/v1/registry-model", json=model("kept"), headers=headers
        ).json()["data"]
    with running_sandbox(db=db) as second, httpx.Client(timeout=10.0) as client:
        assert (second.app_id, second.app_secret, second.model_api_key) == (
            first.app_id,
            first.app_secret,
            first.model_api_key,
        )
        r = client.post(second.base_url + "/openapi/v1/query-models", json={}, headers=headers)
        assert r.json()["data"]["models"] == [made], "the old token and the model survived"
        r = client.post(
            second.base_url + second.token_path,
            json={"appId": other["app_id"], "appSecret": other["app_secret"]},
        )
        assert r.json()["data"]["env"] == other["env"], "the added account survived"
        # The demo model key works against the mock model of the new process.
        r = client.post(
            second.model_url,
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
            headers={"Authorization": f"Bearer {second.model_api_key}"},
        )
        assert r.status_code == 200


def test_bound_socket_is_tcp_so_asyncio_sets_nodelay() -> None:
    # asyncio enables TCP_NODELAY only on sockets whose proto is IPPROTO_TCP;
    # with proto 0 every answer on a kept-alive connection stalled ~40 ms.
    sock = bind_socket("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
        assert sock.getsockname()[1] != 0
    finally:
        sock.close()


def test_a_sandbox_that_cannot_start_is_one_line_error_not_a_traceback() -> None:
    with (
        pytest.raises(LmregError, match="the sandbox did not start") as info,
        running_sandbox(args=["--error-style", "no-such-style"], startup_timeout=20),
    ):
        pass
    assert isinstance(info.value, RuntimeError) and "\n" not in str(info.value)


def _ttft(client: openai.OpenAI, text: str) -> float:
    start = time.monotonic()
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": text}], stream=True, max_tokens=2
    )
    ttft = None
    for chunk in stream:
        if ttft is None and chunk.choices and chunk.choices[0].delta.content:
            ttft = time.monotonic() - start
    assert ttft is not None
    return ttft


def test_the_sandbox_command_takes_the_compute_flags() -> None:
    args = ["--prefill-tokens-per-s", "2000", "--prefix-cache", "--kv-tokens", "100000"]
    with running_sandbox(args=args) as sandbox:
        base = sandbox.model_url.rsplit("/chat/completions", 1)[0]
        with openai.OpenAI(base_url=base, api_key=sandbox.model_api_key, max_retries=0) as client:
            first = _ttft(client, LESSON + "第一个问题？")
            second = _ttft(client, LESSON + "第二个问题？")
    assert first >= len(tokenize(LESSON)) / 2000  # 0.52 s of prefill before the first token
    assert second < first / 3  # the shared lesson was cached
