"""The peer lane: tests against real model servers, run by `pytest -m peer` only.

Start a server (vLLM with a tiny model, llama.cpp's llama-server: any that speaks the
OpenAI chat API) and give its address, key and model name in the environment; a peer
whose address is not given is skipped with the variables to set (the only skip CI=1
allows, and `.ci/run` never selects them):

    PEER_VLLM_URL=http://127.0.0.1:8017 PEER_VLLM_KEY=... PEER_VLLM_MODEL=tiny-llama
    PEER_LLAMA_URL=http://127.0.0.1:8016 PEER_LLAMA_KEY=... PEER_LLAMA_MODEL=...

The names do not start with LMREG_: the suite's clean environment removes those.
"""

from __future__ import annotations

import pytest
from peers import Peer, peer_from_env


@pytest.fixture(scope="session")
def vllm() -> Peer:
    """vLLM's OpenAI server (`vllm.sh start`)."""
    return peer_from_env("PEER_VLLM", "vLLM")


@pytest.fixture(scope="session")
def llama_server() -> Peer:
    """llama.cpp's own server (`llama-server.sh start`)."""
    return peer_from_env("PEER_LLAMA", "llama-server")
