"""The sandbox's listening sockets."""

from __future__ import annotations

import socket

import pytest

from lmreg_nb.errors import LmregError
from lmreg_nb.sandbox.process import running_sandbox
from lmreg_nb.sandbox.server import bind_socket


def test_bound_socket_is_tcp_so_asyncio_sets_nodelay() -> None:
    # asyncio enables TCP_NODELAY only on sockets whose proto is IPPROTO_TCP;
    # with proto 0 every answer on a kept-alive connection stalled ~40 ms.
    sock = bind_socket("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
        assert sock.getsockname()[1] != 0
    finally:
        sock.close()


def test_a_sandbox_that_cannot_start_is_one_line_error_not_a_traceback() -> None:
    with (
        pytest.raises(LmregError, match="the sandbox did not start") as info,
        running_sandbox(args=["--error-style", "no-such-style"], startup_timeout=20),
    ):
        pass
    assert isinstance(info.value, RuntimeError) and "\n" not in str(info.value)
