"""The papermill child's waits on its kernel: a missed ZeroMQ wake-up costs one slice.

pyzmq's asyncio poll can miss the wake-up of a message that has arrived; it then sees
the message only when its own timeout ends. nbclient waits for a cell's reply with the
cell's whole timeout, so a cell showing widgets once took 120 s instead of 66 ms and
then went on as if nothing happened (jupyter/nbclient#312). The fake channel below
misses every wake-up the same way.
"""

from __future__ import annotations

import asyncio
import time
from queue import Empty
from typing import Any

import pytest

from lmreg_nb.runner.kernels import sliced, sliced_polls


class MissedWakeups:
    """A channel whose message is there after ``ready_in`` s, seen only when a poll times out."""

    def __init__(self, ready_in: float | None) -> None:
        self.ready_at = None if ready_in is None else time.monotonic() + ready_in
        self.polls: list[float | None] = []

    async def get_msg(self, timeout: float | None = None) -> dict[str, Any]:
        self.polls.append(timeout)
        await asyncio.sleep(3600 if timeout is None else timeout)
        if self.ready_at is not None and time.monotonic() >= self.ready_at:
            return {"msg_type": "execute_reply"}
        raise Empty


def _wait(channel: MissedWakeups, timeout: float | None, slice_s: float) -> tuple[Any, float]:
    get_msg = sliced(MissedWakeups.get_msg, slice_s)
    started = time.monotonic()
    try:
        got: Any = asyncio.run(asyncio.wait_for(get_msg(channel, timeout), 60))
    except Empty as exc:
        got = exc
    return got, time.monotonic() - started


@pytest.mark.parametrize("timeout", [30.0, None], ids=["a-cell-timeout", "no-timeout"])
def test_a_reply_whose_wake_up_was_missed_is_seen_within_a_slice(timeout: float | None) -> None:
    channel = MissedWakeups(ready_in=0.01)
    got, waited = _wait(channel, timeout, slice_s=0.05)
    assert got == {"msg_type": "execute_reply"}
    assert waited < 10  # unsliced: the whole 30 s (or for ever)
    assert all(p is not None and p <= 0.05 for p in channel.polls)


def test_the_slices_keep_the_callers_timeout() -> None:
    channel = MissedWakeups(ready_in=None)  # nothing ever comes
    got, waited = _wait(channel, 0.3, slice_s=0.05)
    assert isinstance(got, Empty)
    assert waited >= 0.3
    assert len(channel.polls) >= 6 and max(p for p in channel.polls if p is not None) <= 0.05


def test_a_zero_timeout_looks_once() -> None:
    channel = MissedWakeups(ready_in=None)
    got, _waited = _wait(channel, 0, slice_s=0.05)
    assert isinstance(got, Empty) and channel.polls == [0]


def test_the_kernel_clients_polls_are_sliced_once() -> None:
    from jupyter_client.channels import AsyncZMQSocketChannel

    sliced_polls()
    patched = AsyncZMQSocketChannel.get_msg
    sliced_polls()  # a second call (in-process runs one after another) wraps nothing again
    assert AsyncZMQSocketChannel.get_msg is patched
    assert getattr(patched, "__wrapped__", None) is not None
