"""The JupyterLab driver's own rules (tests/browser/lab_driver.py), without a browser."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from types import SimpleNamespace

import pytest
from lab_driver import KernelReaper


class _Unlisted(Mapping[str, str]):
    """An empty environment that fails whoever goes through it: a lookup by name is one
    step (``ssl`` asks for SSLKEYLOGFILE), a walk over every variable is what another
    thread's change broke."""

    def __getitem__(self, key: str) -> str:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("went through the environment")

    def __len__(self) -> int:
        raise AssertionError("went through the environment")


def test_the_kernel_reapers_client_goes_through_no_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Its threads make clients while the next test's fixtures change os.environ; httpx went
    # through it for proxies, and a key deleted meanwhile failed a module's teardown in a
    # full run (KeyError: 'XDG_CACHE_HOME'). The server is on loopback: it needs no proxy.
    reaper = KernelReaper(SimpleNamespace(url="http://127.0.0.1:9", token="t"))  # type: ignore[arg-type]
    monkeypatch.setattr(os, "environ", _Unlisted())
    try:
        client = reaper._client()
    finally:
        monkeypatch.undo()  # before pytest reports anything (it reads the environment)
    client.close()
    reaper.close()
