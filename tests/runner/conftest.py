"""Shared fixtures of the runner room's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fakes.hostile import hostile_server


@pytest.fixture(scope="module")
def echo_server() -> Iterator[str]:
    """A hostile endpoint (in this process): ``/disguise/NAME/`` streams the key it is sent
    back disguised, two characters per event."""
    with hostile_server() as base:
        yield base
