"""`lmreg-nb check` and `capacity` against real servers, as a school engineer runs them (peer lane).

vLLM (`vllm.sh start 8017`) has a 4096-token window (`--max-model-len 4096`);
`VLLM_TINY=random` serves random weights, whose replies hold U+FFFD the model
wrote itself. llama-server (`llama-server.sh start 8016`) splits `-c 8192` into
4 slots of 2048 tokens unless LS_NP/LS_CTX say otherwise.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import httpx
import pytest
from peers import Peer

from lmreg_nb.probe import Target
from lmreg_nb.probe.checks.golive import CHINESE_PROMPT, utf8_row
from lmreg_nb.probe.wire.exchange import chat_body, send
from lmreg_nb.probe.wire.shapes import reply_text

pytestmark = pytest.mark.peer

#: Loopback and plain http are the address's findings, not the server's.
_ADDRESS_CHECKS = {"url-https", "url-public-host"}


def _run(peer: Peer, command: str, *args: str) -> tuple[int, dict]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LMREG_")}
    env |= {"LMREG_MODEL_API_KEY": peer.key, "LMREG_MODEL_NAME": peer.model, "LMREG_LANG": "en",
            "LMREG_MODEL_URL": peer.chat_url, "LMREG_TIMEOUT": "60"}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "lmreg_nb", command, "--json", *args],
        env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    return done.returncode, json.loads(done.stdout)


def _check(peer: Peer, *args: str) -> tuple[int, dict]:
    return _run(peer, "check", *args)


def _failed(report: dict) -> dict[str, str]:
    return {c["name"]: c["detail"] for c in report["checks"]
            if c["severity"] == "error" and c["passed"] is False}  # fmt: skip


#: What each peer's window takes: vLLM 4096 tokens; the tiny GGUF was trained for 2048
#: (n_ctx_train), so llama-server caps every slot there whatever -c says.
_SIZES = {
    "vllm": ("--context-need", "3500"),
    "llama_server": ("--context-need", "2000", "--lesson-tokens", "800", "--max-tokens", "100"),
}


@pytest.mark.parametrize("which", ["vllm", "llama_server"])
def test_every_required_check_but_the_address_passes(
    which: str, request: pytest.FixtureRequest
) -> None:
    peer: Peer = request.getfixturevalue(which)
    _, report = _check(peer, "--requests", "8", "--concurrency", "2", *_SIZES[which])
    failed = _failed(report)
    assert set(failed) <= _ADDRESS_CHECKS, failed
    # The client watched itself over the whole run (contract: "The client checks itself").
    assert set(report["client"]) == {"stalls", "worst_stall_ms", "stalled_share"}
    prefix = next((c for c in report["checks"] if c["name"] == "prefix-cache"), None)
    assert prefix is None or "--enable-prefix-caching" not in prefix["detail"], prefix


def test_vllm_publishes_its_own_figures_beside_ours(vllm: Peer) -> None:
    _, report = _check(vllm, "--context-need", "1000")
    server = report["server"]
    assert server is not None and server["source"] == "vllm-metrics", report
    assert server["requests"] >= 5 and server["ttft_ms"]["p50"] is not None


def test_a_window_of_exactly_the_need_fails_on_vllm(vllm: Peer) -> None:
    # --max-model-len 4096: a prompt of 4096 tokens leaves no room for the answer.
    code, report = _check(vllm, "--context-need", "4096")
    assert code == 1
    failed = _failed(report)
    assert (
        "context-window" in failed and "maximum context length is 4096" in failed["context-window"]
    )


def test_capacity_serves_four_with_the_prefix_cache_not_denied(vllm: Peer) -> None:
    code, result = _run(vllm, "capacity", "--need", "4", "--context-need", "3500")
    assert code == 0, result["capacity"]
    assert result["capacity"]["concurrency"] >= 4
    prefix = result.get("prefix_cache")
    assert prefix is None or prefix["reused"] is not False, prefix


def test_u_fffd_the_model_wrote_is_never_a_failed_stream(vllm: Peer) -> None:
    # Sampled (temperature 1) and seeded: a random-weights model (VLLM_TINY=random) writes
    # U+FFFD; the stream and the same request unstreamed hold the same ones, so stream-utf8
    # is a warning about the model, never an error of the stream.
    target = Target(vllm.chat_url, vllm.key, vllm.model, timeout=60)

    async def both(seed: int) -> tuple:
        async with httpx.AsyncClient() as client:
            asked = {"max_tokens": 64, "temperature": 1.0, "seed": seed}
            body = chat_body(vllm.model, CHINESE_PROMPT, stream=True, **asked)
            streamed = await send(client, target, body, stream=True)
            body = chat_body(vllm.model, CHINESE_PROMPT, stream=False, **asked)
            whole = await send(client, target, body, stream=False)
        return streamed, whole

    severities = []
    for seed in (1, 2, 3, 4):
        streamed, whole = asyncio.run(both(seed))
        assert streamed.text == reply_text(whole.json_body)  # the same tokens both ways
        row = utf8_row(streamed, whole)
        assert row.passed or row.severity == "warning", row.detail
        severities.append(row.passed)
    if all(severities):
        pytest.fail("no reply held U+FFFD: serve the random-weights model (VLLM_TINY=random)")


def test_llama_server_shows_its_own_timings(llama_server: Peer) -> None:
    _, report = _check(llama_server, "--context-need", "1000")
    server = report["server"]
    assert server is not None and server["source"] == "llamacpp-timings", report
    assert server["requests"] >= 1 and server["ttft_ms"]["p50"] is not None
    buffered = next(c for c in report["checks"] if c["name"] == "stream-not-buffered")
    assert buffered["passed"], buffered["detail"]  # a fast server is no buffering proxy
