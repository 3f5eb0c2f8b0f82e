"""Canary: endpoints that echo the apiKey everywhere they can; no secret may come out.

A small hostile school model (tests/fakes/hostile.py's ``/canary/`` paths) puts the
Authorization header it receives into a 500 JSON error body, an HTML error
page and the reply itself, in raw, JSON-escaped, URL-encoded and base64 forms
and in pieces. `lmreg-nb check` runs against it in this process (CliRunner: what it
prints and what it logs; the server is served in this process too, tests/fakes/hosts.py);
every byte it prints or logs is searched with the leak detector of tests/leaks.py,
written independently of the toolkit's own masker. (`lmreg-nb onboard` and `lmreg-nb
batch` against the same echoes, as real processes whose notebook runs are processes:
tests/commands/test_cli_processes.py.)
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakes.hostile import echoes, hostile_server
from leaks import CANARY_KEY, leaks_in

from lmreg_nb.cli import main


@pytest.fixture(scope="module")
def echo_base() -> Iterator[str]:
    """The hostile server's /canary/ paths echo the Authorization header everywhere."""
    with hostile_server() as base:
        yield f"{base}/canary"


@pytest.mark.parametrize("where", ["e500", "ehtml", "ereply"])
def test_check_never_prints_an_echoed_key(
    echo_base: str,
    tmp_path: Path,
    where: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    env = {
        "LMREG_MODEL_URL": f"{echo_base}/{where}/v1/chat/completions",
        "LMREG_MODEL_API_KEY": CANARY_KEY,
        "LMREG_MODEL_NAME": "echo-llm",
        "LMREG_TIMEOUT": "5",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)  # where the load test's figure goes
    for args in (
        ["check"],
        ["check", "--json"],
        ["check", "--requests", "4", "--concurrency", "2"],
    ):
        caplog.clear()
        done = CliRunner().invoke(main, args)
        assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
        assert "Traceback" not in done.stderr, done.stderr[-2000:]
        assert done.exit_code in (0, 1), done.stderr[-2000:]
        out = done.stdout + done.stderr
        assert out.strip(), "check printed nothing"
        # What a process prints of its logs: warnings and worse (Python's last resort).
        out += "".join(r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)
        assert leaks_in(out, {"apiKey": CANARY_KEY}) == [], f"{args} leaked the key:\n{out[-3000:]}"


def test_the_detector_finds_each_form() -> None:
    # The detector must itself catch what it is meant to catch.
    for text in echoes(f"Bearer {CANARY_KEY}").split(" | "):
        assert leaks_in(text, {"k": CANARY_KEY}) == ["k"], text
    assert leaks_in("key …Wd2 masked", {"k": CANARY_KEY}) == []
