"""Platforms for the platform tests: the FastAPI app in this process, over a real SQLite file.

The platform's HTTP behaviour is what these tests check, so they talk to
``create_app(...)`` through Starlette's TestClient (an httpx.Client): no
process, no port. The process contract itself (start, announce, restart,
stop, bad options) is tested with real processes in test_process.py; the mock
school model in-process too (Starlette's TestClient, tests/fakes/asgi_stream.py).

``platform`` is parametrised over both error styles, so every test that takes
it runs once against ``error_style="http"`` and once against ``"envelope"``.
The ``faulty`` platforms share their database with the plain ones (their own
Store on the same file, as two processes would), so a token from the plain one
works there even though ``fail_rate=1`` fails every request, the token
exchange included.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import pytest
from sbx_helpers import STYLES, Platform, local_platform

from lmreg_nb.sandbox.platform.app import PlatformConfig


@pytest.fixture(scope="session")
def platforms(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Platform]]:
    """One plain platform per error style (kept for the session)."""
    with ExitStack() as stack:
        yield {
            style: local_platform(
                stack,
                tmp_path_factory.mktemp(f"sbx-{style}") / "platform.sqlite3",
                PlatformConfig(error_style=style),
            )
            for style in STYLES
        }


@pytest.fixture(params=STYLES)
def platform(request: pytest.FixtureRequest, platforms: dict[str, Platform]) -> Platform:
    """The plain platform of one error style."""
    return platforms[request.param]


@pytest.fixture(scope="session")
def faulty_platforms(platforms: dict[str, Platform]) -> Iterator[dict[str, Platform]]:
    """Per style: every request fails (50300) unless over the rate limit (42900)."""
    with ExitStack() as stack:
        yield {
            style: local_platform(
                stack,
                plain.info.db,
                PlatformConfig(error_style=style, fail_rate=1.0, rate_limit=2.0, latency_ms=50),
            )
            for style, plain in platforms.items()
        }


@pytest.fixture(params=STYLES)
def faulty(
    request: pytest.FixtureRequest,
    faulty_platforms: dict[str, Platform],
    platforms: dict[str, Platform],
) -> tuple[Platform, Platform]:
    """(the plain platform, the faulty one on the same database), one error style."""
    return platforms[request.param], faulty_platforms[request.param]
