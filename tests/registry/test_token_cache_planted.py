"""A planted or corrupted token cache never hangs or crashes a command (issue 20, item 5).

Each case plants something at LMREG_TOKEN_CACHE and runs `lmreg-nb token`
(in-process, CliRunner) against the in-memory platform of tests/fakes/registry_fakes.py:
the cache is ignored (one warning line), a token is exchanged, and the cache is
written again as a regular file.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakes.registry_fakes import TOKEN_PATH, FakePlatform, platform_env, route_clients

from lmreg_nb.cli import main
from lmreg_nb.registry import token_cache
from lmreg_nb.registry.tokens import TokenCache


@pytest.fixture
def platform(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakePlatform:
    """The fake platform, reached by every client the command makes; its settings in LMREG_*."""
    fake = FakePlatform()
    route_clients(monkeypatch, fake.transport)
    platform_env(monkeypatch, tmp_path / "tokens.json")
    return fake


def _fifo(path: Path) -> None:
    os.mkfifo(path)  # opening it for reading waits for a writer: forever


def _deep(path: Path) -> None:
    path.write_text("[" * 200_000)  # json.loads: RecursionError


def _not_utf8(path: Path) -> None:
    path.write_bytes(b'{"tokens": ["\xff\xfe"]}')


PLANTED: dict[str, Callable[[Path], None]] = {"fifo": _fifo, "deep": _deep, "not-utf8": _not_utf8}


@pytest.mark.timeout(30)  # a fifo opened for reading would wait for a writer forever
@pytest.mark.parametrize("plant", list(PLANTED), ids=list(PLANTED))
def test_a_planted_cache_is_ignored_and_replaced(
    platform: FakePlatform, tmp_path: Path, plant: str, caplog: pytest.LogCaptureFixture
) -> None:
    cache = tmp_path / "tokens.json"
    PLANTED[plant](cache)
    ran = CliRunner().invoke(main, ["token", "--json"])
    assert ran.exit_code == 0, ran.stderr
    assert ran.exception is None, ran.exception
    assert "Traceback" not in ran.stderr
    assert json.loads(ran.stdout)["source"] == "exchange"
    assert platform.count(TOKEN_PATH) == 1
    # At most one warning line: printed, or logged (a process prints its log's warnings
    # on stderr; in this one pytest catches them).
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(ran.stderr.strip().splitlines() + warned) <= 1, (ran.stderr, warned)
    assert plant == "fifo" or len(warned) == 1, "the ignored file was named"
    assert stat.S_ISREG(cache.stat().st_mode)  # written again, as a regular file
    assert "tokens" in json.loads(cache.read_text())


def test_a_cache_over_the_size_bound_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(token_cache, "MAX_CACHE_BYTES", 1024)
    cache = tmp_path / "tokens.json"
    cache.write_text(json.dumps({"version": 1, "tokens": [], "pad": "x" * 2000}))
    reads: list[int] = []
    real_read = os.read

    def counting_read(fd: int, n: int) -> bytes:
        reads.append(n)
        return real_read(fd, n)

    monkeypatch.setattr(os, "read", counting_read)
    assert TokenCache(cache).load("https://p.example", "app") is None
    assert sum(reads) <= 1025  # bounded, not the whole file
