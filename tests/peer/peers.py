"""A real model server of the peer lane, named by the environment (see conftest.py)."""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class Peer:
    """A real server: its base address (no path), Bearer key and served model name."""

    name: str
    base_url: str
    key: str
    model: str

    @property
    def chat_url(self) -> str:
        return self.base_url.rstrip("/") + "/v1/chat/completions"


def peer_from_env(prefix: str, name: str) -> Peer:
    """The peer ``PREFIX_URL``/``_KEY``/``_MODEL`` name, or a skip saying what to set."""
    wanted = [f"{prefix}_URL", f"{prefix}_KEY", f"{prefix}_MODEL"]
    missing = [v for v in wanted if not os.environ.get(v)]
    if missing:
        pytest.skip(f"{name} not given: set {', '.join(missing)}")
    url, key, model = (os.environ[v] for v in wanted)
    return Peer(name, url, key, model)
