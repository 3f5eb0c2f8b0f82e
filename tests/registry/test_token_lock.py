"""Token exchanges while the platform hangs: callers never queue one exchange time each.

Issue 20 (6): threads queued behind the token cache's lock, each waiting for the
previous one's whole exchange (with retries) to time out: the last call took 151 s
at LMREG_TIMEOUT=3. Against a platform that never answers (a transport that waits for
the request's read timeout, then raises httpx.ReadTimeout, as httpx's own does against
a server that accepts and stays silent), the time for N threads is compared with the
time of one call measured in the same run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from lmreg_nb.errors import LmregError
from lmreg_nb.registry.client import RegistryClient
from lmreg_nb.settings import Settings

# A short timeout keeps the test quick; the bug it guards makes the calls queue, so
# enough threads that a queue (THREADS x one call) is far above every bound below.
THREADS = 32
TIMEOUT_S = 0.3


BASE_URL = "https://platform.test"


def _never_answers(request: httpx.Request) -> httpx.Response:
    """What httpx's transport does against a server that accepts and never answers."""
    timeout = request.extensions.get("timeout", {}).get("read")
    time.sleep(TIMEOUT_S if timeout is None else timeout)
    raise httpx.ReadTimeout("timed out", request=request)


def _client(settings: Settings) -> RegistryClient:
    return RegistryClient(settings, max_retries=1, transport=httpx.MockTransport(_never_answers))


def _settings(base_url: str, cache: Path) -> Settings:
    return Settings.load(
        environ={}, base_url=base_url, app_id="app-hang", app_secret="secret-hang-0123456789",
        timeout=TIMEOUT_S, token_cache=cache,
    )  # fmt: skip


def _timed(calls: list[Callable[[], object]]) -> tuple[float, list[BaseException | None]]:
    """Run the calls in threads at once; the seconds until the last ends, and each outcome."""
    outcomes: list[BaseException | None] = [None] * len(calls)
    barrier = threading.Barrier(len(calls))

    def work(i: int) -> None:
        barrier.wait()
        try:
            calls[i]()
        except BaseException as exc:  # collected and asserted by the test
            outcomes[i] = exc

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(calls))]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    return time.monotonic() - started, outcomes


def _one_line_errors(outcomes: list[BaseException | None]) -> None:
    for exc in outcomes:
        assert isinstance(exc, LmregError), repr(exc)
        assert "\n" not in str(exc) and "secret-hang" not in str(exc)


def _one_call(settings: Settings) -> float:
    """Seconds one token call takes alone against the hanging platform (its reference)."""
    with _client(settings) as alone:
        single, (outcome,) = _timed([alone.token])
    _one_line_errors([outcome])
    return single


def test_threads_of_one_client_share_one_exchange_while_the_platform_hangs(
    tmp_path: Path,
) -> None:
    settings = _settings(BASE_URL, tmp_path / "tokens.json")
    single = _one_call(settings)
    with _client(settings) as shared:
        total, outcomes = _timed([shared.token] * THREADS)
    _one_line_errors(outcomes)
    print(f"{THREADS} threads of one client: {total:.1f} s (one call alone: {single:.1f} s)")
    # Before: one exchange after another, THREADS x single.
    assert total < 2 * single + 3, f"{THREADS} threads took {total:.1f} s, one {single:.1f} s"


def test_clients_sharing_a_cache_file_stop_waiting_for_its_lock(tmp_path: Path) -> None:
    settings = _settings(BASE_URL, tmp_path / "tokens.json")
    single = _one_call(settings)
    clients = [_client(settings) for _ in range(THREADS)]
    try:
        total, outcomes = _timed([c.token for c in clients])
    finally:
        for c in clients:
            c.close()
    _one_line_errors(outcomes)
    print(f"{THREADS} clients, one cache file: {total:.1f} s (one call alone: {single:.1f} s)")
    # Each waits for the lock at most LMREG_TIMEOUT, then exchanges on its own.
    bound = 2 * single + TIMEOUT_S + 2
    assert total < bound, f"{THREADS} clients took {total:.1f} s, one {single:.1f} s"
