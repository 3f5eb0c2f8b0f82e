"""The client checks itself: a stall of the toolkit's own loop is seen, timed and placed."""

from __future__ import annotations

import asyncio
import time

from lmreg_nb.probe.loop_lag import LoopLag
from lmreg_nb.summary import ClientLag


def test_a_blocked_loop_is_one_stall_at_least_as_long_as_the_block() -> None:
    async def run() -> tuple[ClientLag, float, float]:
        async with LoopLag() as lag:
            await asyncio.sleep(0.05)  # the watcher is asleep: the block makes it late
            start = time.perf_counter()
            time.sleep(0.3)  # what a busy machine, or our own parsing, does to the loop
            end = time.perf_counter()
            await asyncio.sleep(0.05)
        return lag.result(), start, end

    found, start, end = asyncio.run(run())
    assert found.stalls >= 1
    # Load can only make a wake later, never earlier: the bound holds on a busy machine.
    assert found.worst_stall_ms >= 300 - 10 - 1
    assert found.overlaps(start, end)
    assert found.stalled_ms(start, end) >= 300 - 10 - 1
    assert 0.0 < found.stalled_share <= 1.0
    assert not found.overlaps(end + 10, end + 11)


def test_the_json_is_the_contracts_and_reads_back_tolerantly() -> None:
    lag = ClientLag(stalls=3, worst_stall_ms=812.345, stalled_share=0.123456)
    assert lag.to_json() == {"stalls": 3, "worst_stall_ms": 812.3, "stalled_share": 0.1235}
    assert ClientLag.from_json(lag.to_json()) == ClientLag(3, 812.3, 0.1235)
    assert ClientLag.from_json(None) is None  # a record made before it was measured
    odd = ClientLag.from_json({"stalls": -4, "worst_stall_ms": "x", "stalled_share": 7})
    assert odd == ClientLag(0, 0.0, 1.0)
