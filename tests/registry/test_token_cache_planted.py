"""A planted or corrupted token cache never hangs or crashes a command (issue 20, item 5).

Each case plants something at LMREG_TOKEN_CACHE and runs `lmreg-nb token`
against a platform on loopback: the cache is ignored (one warning line), a
token is exchanged, and the cache is written again as a regular file.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from loopback_platform import Script, cli_env, loopback_platform, run_cli

from lmreg_nb.registry import token_cache
from lmreg_nb.registry.tokens import TokenCache


@pytest.fixture
def platform() -> Iterator[tuple[str, Script]]:
    with loopback_platform() as running:
        yield running


def _fifo(path: Path) -> None:
    os.mkfifo(path)  # opening it for reading waits for a writer: forever


def _deep(path: Path) -> None:
    path.write_text("[" * 200_000)  # json.loads: RecursionError


def _not_utf8(path: Path) -> None:
    path.write_bytes(b'{"tokens": ["\xff\xfe"]}')


PLANTED: dict[str, Callable[[Path], None]] = {"fifo": _fifo, "deep": _deep, "not-utf8": _not_utf8}


@pytest.mark.parametrize("plant", list(PLANTED), ids=list(PLANTED))
def test_a_planted_cache_is_ignored_and_replaced(
    platform: tuple[str, Script], tmp_path: Path, plant: str
) -> None:
    base, script = platform
    cache = tmp_path / "tokens.json"
    PLANTED[plant](cache)
    ran = run_cli(["token", "--json"], cli_env(base, tmp_path), tmp_path, timeout=30)
    assert ran.returncode == 0, ran.stderr.decode()
    assert b"Traceback" not in ran.stderr
    assert json.loads(ran.stdout)["source"] == "exchange"
    assert script.requests.count("/openapi/v1/token") == 1
    assert len(ran.stderr.decode().strip().splitlines()) <= 1  # at most one warning line
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
