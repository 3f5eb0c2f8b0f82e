"""Sandboxes for the platform tests: real processes on free loopback ports.

``platform`` is parametrised over both error styles, so every test that takes
it runs once against ``--error-style http`` and once against ``envelope``.
The ``faulty`` sandboxes share their database with the plain ones (WAL lets two
processes use one file), so a token from the plain one works there even though
``--fail-rate 1`` fails every request, the token exchange included.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from sbx_helpers import Platform

from lmreg_nb.sandbox.process import SandboxInfo, running_sandbox

STYLES = ("http", "envelope")


@pytest.fixture(scope="session")
def sandboxes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, SandboxInfo]]:
    """One plain sandbox per error style (started lazily, kept for the session)."""
    from contextlib import ExitStack

    with ExitStack() as stack:
        out: dict[str, SandboxInfo] = {}
        for style in STYLES:
            db = tmp_path_factory.mktemp(f"sbx-{style}") / "platform.sqlite3"
            out[style] = stack.enter_context(running_sandbox(db=db, args=["--error-style", style]))
        yield out


@pytest.fixture(scope="session")
def http_client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=20.0) as client:
        yield client


@pytest.fixture(params=STYLES)
def platform(
    request: pytest.FixtureRequest, sandboxes: dict[str, SandboxInfo], http_client: httpx.Client
) -> Platform:
    """The plain sandbox of one error style."""
    return Platform(sandboxes[request.param], request.param, http_client)


@pytest.fixture(scope="session")
def faulty_sandboxes(sandboxes: dict[str, SandboxInfo]) -> Iterator[dict[str, SandboxInfo]]:
    """Per style: every request fails (50300) unless over the rate limit (42900)."""
    from contextlib import ExitStack

    with ExitStack() as stack:
        yield {
            style: stack.enter_context(
                running_sandbox(
                    db=info.db,
                    args=[
                        "--error-style",
                        style,
                        "--fail-rate",
                        "1",
                        "--rate-limit",
                        "2",
                        "--latency-ms",
                        "150",
                    ],
                )
            )
            for style, info in sandboxes.items()
        }


@pytest.fixture(params=STYLES)
def faulty(
    request: pytest.FixtureRequest,
    faulty_sandboxes: dict[str, SandboxInfo],
    sandboxes: dict[str, SandboxInfo],
    http_client: httpx.Client,
) -> tuple[Platform, Platform]:
    """(the plain sandbox, the faulty one on the same database), one error style."""
    style = request.param
    return (
        Platform(sandboxes[style], style, http_client),
        Platform(faulty_sandboxes[style], style, http_client),
    )
