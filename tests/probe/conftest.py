"""One mock school model per test module, served in the test's own event loop
(tests/fakes/hosts.py: no port, no thread); quirks by path prefix."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from fakes import hosts

from lmreg_nb.sandbox.school_model import MockModelConfig, create_app


@dataclass(frozen=True)
class Mock:
    """A running mock school model and its knobs."""

    base: str
    key: str = "sk-school-0123456789abcdef"
    model: str = "school-llm"
    # Small knobs keep the suite fast, yet a reply spreads over 125 ms: even on a busy
    # machine the mock does not stall long enough to send it in one burst.
    ttft_ms: float = 20.0
    itl_ms: float = 15.0
    tokens: int = 8

    def url(self, quirks: str = "") -> str:
        """The chat URL, with quirks switched on by the path prefix."""
        prefix = f"/quirks/{quirks}" if quirks else ""
        return f"{self.base}{prefix}/v1/chat/completions"


@pytest.fixture(scope="module")
def mock() -> Iterator[Mock]:
    """The mock school model, served in this process (uvicorn's protocol over a socketpair)."""
    knobs = Mock(base="")
    config = MockModelConfig(
        api_key=knobs.key, ttft_ms=knobs.ttft_ms, itl_ms=knobs.itl_ms, tokens=knobs.tokens
    )
    with hosts.served(create_app(config)) as base:
        yield Mock(base=base)
