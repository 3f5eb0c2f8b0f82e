"""`lmreg-nb check` against real servers, as a school engineer runs it (peer lane)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from peers import Peer

pytestmark = pytest.mark.peer

#: Loopback and plain http are the address's findings, not the server's.
_ADDRESS_CHECKS = {"url-https", "url-public-host"}


def _check(peer: Peer, *args: str) -> tuple[int, dict]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LMREG_")}
    env |= {"LMREG_MODEL_API_KEY": peer.key, "LMREG_MODEL_NAME": peer.model, "LMREG_LANG": "en",
            "LMREG_MODEL_URL": peer.chat_url, "LMREG_TIMEOUT": "60"}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "lmreg_nb", "check", "--json", *args],
        env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    return done.returncode, json.loads(done.stdout)


@pytest.mark.parametrize("which", ["vllm", "llama_server"])
def test_every_required_check_but_the_address_passes(
    which: str, request: pytest.FixtureRequest
) -> None:
    peer: Peer = request.getfixturevalue(which)
    _, report = _check(peer, "--requests", "8", "--concurrency", "2", "--context-need", "3500")
    failed = {c["name"]: c["detail"] for c in report["checks"]
              if c["severity"] == "error" and c["passed"] is False}  # fmt: skip
    assert set(failed) <= _ADDRESS_CHECKS, failed
