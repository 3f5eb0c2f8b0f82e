"""The capacity search against mock school models with a known knee, and its bad inputs.

Each mock reply takes about one service time S = ttft + (tokens - 1) * itl
(310 ms for the capacity mock). With a slot limit K, chat K + 1 waits a whole S for a
slot, so a TTFT SLO well under S (150 ms) breaks just past K: the capacity found must
lie between K - 1 and 1.5 K (tests/probe/test_capacity_knees.py: the slot-limited
mock runs in its own process there, so that its pacing does not share our GIL on a
busy machine). Here the mock is served in this process; levels are kept short (a
ceiling of 8 requests at level 1, 4 where only the kind of level matters), and the
tests that need no long reply get replies of 8 tokens 5 ms apart (S 45 ms).
"""

from __future__ import annotations

import asyncio
import json
import signal
import threading
import time
from collections.abc import Iterator

import pytest
from click.testing import CliRunner
from fakes import hosts
from fakes.capacity_mock import KEY, mock
from fakes.hostile import closing_server
from fakes.hosts import mock_served

from lmreg_nb.cli import main
from lmreg_nb.probe import Target
from lmreg_nb.probe.load.capacity import SLO, LevelPlan, find_capacity
from lmreg_nb.probe.load.fixed import run_load
from lmreg_nb.probe.text.capacity_text import format_capacity, verdict
from lmreg_nb.probe.text.plots import capacity_figure

pytestmark = pytest.mark.timeout(90)

FAST = LevelPlan(max_requests=8, max_seconds=5)
#: Levels whose figures no test reads, only their kind (met, cut, failed): 4 requests.
SHORT = LevelPlan(max_requests=4, max_requests_per_worker=4, max_seconds=5)
#: The saturated search's levels: 6 requests a chat (level 4, 24 whole replies through 2
#: slots, measures the flat throughput for 3.7 s; 4 a chat made its ratio to level 2's
#: land nearer the 10 % that tells "flat").
FLAT = LevelPlan(max_requests=6, max_requests_per_worker=6, max_seconds=5)
#: The replies of :func:`plain`: short, since those tests judge whole replies by their kind.
PLAIN_TOKENS = 8


@pytest.fixture(scope="module")
def plain() -> Iterator[str]:
    """A mock without a slot limit (quirks by path prefix), replies of 45 ms (8 tokens)."""
    with mock_served(mock(ttft_ms=10.0, itl_ms=5.0, tokens=PLAIN_TOKENS)) as base:
        yield base


@pytest.fixture(scope="module")
def long_replies() -> Iterator[str]:
    """The capacity mock as it is: replies of 310 ms (30 tokens)."""
    with mock_served(mock()) as base:
        yield base


def _url(base: str, quirks: str = "") -> str:
    return (
        f"{base}/quirks/{quirks}/v1/chat/completions" if quirks else f"{base}/v1/chat/completions"
    )


@pytest.mark.slow  # a real search or process: CI's lane, not the inner loop
def test_a_saturated_mock_within_a_generous_slo_is_reported_as_saturation() -> None:
    # Every level meets the SLO, but throughput stops rising at the 2 slots. A stall of this
    # loop (the mock shares it) during the level at 2 lowers its throughput, so that 4 seems
    # to rise (a clean-clone CI run said "max-concurrency" once); it never makes a level
    # look flat. So up to 3 searches, until the flat is seen; a search that never sees it
    # still fails. A mock of its own for each search: its slots' queue belongs to the event
    # loop of the search that first waited on it (each search runs a loop of its own), so a
    # second search against the same one failed every request.
    for _attempt in range(3):
        with mock_served(mock(slots=2)) as base:
            result = find_capacity(
                Target(_url(base), KEY, "m"), slo=SLO(ttft_ms=10_000), max_concurrency=4, plan=FLAT
            )
        assert result.capacity.concurrency == 4
        if result.capacity.limited_by == "saturation":
            break
    assert result.capacity.limited_by == "saturation" and result.saturation == 2
    assert "Throughput stops rising past 2 chats at once" in verdict(result)
    fig = capacity_figure(result)
    assert [ax.get_title() for ax in fig.axes[:3]] == [
        "Time to first token",
        "Inter-token latency",
        "Throughput",
    ]
    assert "Capacity: 4 chats at once" in fig.get_suptitle()


def test_an_endpoint_failing_alone_has_capacity_0_and_the_reason(plain: str) -> None:
    result = find_capacity(
        Target(_url(plain, "status-500"), KEY, "m"), max_concurrency=8, plan=FAST
    )
    assert [lv.concurrency for lv in result.levels] == [1]
    assert result.capacity.concurrency == 0 and result.capacity.limited_by == "errors"
    sentence = verdict(result, class_size=20)
    assert "serves no chat" in sentence and "status 500" in sentence
    assert KEY not in json.dumps(result.to_json()) + sentence


def test_a_server_cutting_streams_is_named_with_the_fix(plain: str) -> None:
    # llama.cpp's interrupt_requests: a new request ends the running one with [DONE].
    result = find_capacity(
        Target(_url(plain, "interrupt"), KEY, "m"), max_concurrency=4, plan=SHORT
    )
    assert result.capacity.concurrency == 1
    assert result.capacity.limited_by == "cut-streams"
    assert result.cut_streams > 0
    sentence = verdict(result)
    assert "interrupt_requests" in sentence and "--interrupt_requests False" in sentence
    assert "OLLAMA_NUM_PARALLEL" in sentence


def test_the_load_test_names_cut_streams_too(plain: str) -> None:
    target = Target(_url(plain, "interrupt"), KEY, "m")
    result = asyncio.run(run_load(target, 8, 4))
    assert result.errors_by_kind.get("cut stream", 0) >= 4
    from lmreg_nb.probe.report import _load_row
    from lmreg_nb.probe.text.checks import worded

    said = worded(_load_row(result, 8, 300.0)).detail
    assert "--interrupt_requests False" in said and "OLLAMA_NUM_PARALLEL" in said


def test_no_usage_says_tokens_are_counted_from_chunks(plain: str) -> None:
    result = find_capacity(Target(_url(plain, "no-usage"), KEY, "m"), max_concurrency=1, plan=SHORT)
    assert result.capacity.concurrency == 1
    assert result.capacity.limited_by == "max-concurrency"
    assert "token figures are counted from chunks" in verdict(result)
    assert result.levels[0].output_tokens_per_s == pytest.approx(
        result.levels[0].requests_per_s * PLAIN_TOKENS, rel=1e-3
    )


class _Cutting(asyncio.Protocol):
    """A server whose stream closes the connection mid-reply (no [DONE], no last chunk)."""

    CHUNK = 'data: {"choices":[{"index":0,"delta":{"content":"hi "},"finish_reason":null}]}\n\n'

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: asyncio.Transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        head = (
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            "transfer-encoding: chunked\r\n\r\n"
        )
        body = self.CHUNK * 3
        self.transport.write(head.encode() + f"{len(body):x}\r\n{body}\r\n".encode())
        self.transport.close()


def test_a_connection_closed_mid_reply_is_a_cut_stream() -> None:
    # Served in the client's event loop over a socketpair (tests/fakes/hosts.py).
    port = hosts.serve(_Cutting)
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    try:
        result = find_capacity(Target(url, KEY, "m", timeout=2), max_concurrency=2, plan=FAST)
    finally:
        hosts.stop(port)
    level = result.levels[0]
    # Every request that ended was cut (one still running at the level's end is not counted).
    assert level.errors_by_kind == {"cut stream": level.requests - level.unfinished}
    assert "closed mid-reply after 3 chunks" in level.first_error
    # Alone, no new request cut them: failed requests, never "cut off by new requests".
    assert result.capacity.concurrency == 0 and result.capacity.limited_by == "errors"
    text = format_capacity(result)
    assert "limited by failed requests" in text and "new requests" not in text
    assert "Replies ended early even with one chat at a time" in text


def test_a_server_refusing_connections_gives_errors_not_a_hang() -> None:
    started = time.monotonic()
    with closing_server() as port:  # every connection closed at once, in this process
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        result = find_capacity(Target(url, KEY, "m", timeout=1), max_concurrency=8, plan=FAST)
    assert time.monotonic() - started < 15
    # A reset reads as refused ("closed the connection at once") or, when the reset comes
    # after the request was written, as a connection closed before answering: the search
    # stops either way, before any level or after its first one.
    assert result.capacity.concurrency == 0
    assert result.capacity.limited_by in ("unreachable", "errors")
    assert len(result.levels) <= 1
    if result.levels:
        assert result.levels[0].errors == result.levels[0].requests > 0


def test_the_search_stops_within_its_budget(long_replies: str) -> None:
    # Every level meets the SLO, so only the budget ends the search: the level running
    # when it runs out is cut there, and no new one starts. Level 1 starts while 1 s of the
    # budget is left: the warm-up (one reply of 0.3 s) has 2 s. (With a budget of 1.2 s and
    # 0.2 s for the level, a busy CI machine's warm-up once took the whole budget.)
    started = time.monotonic()
    plan = LevelPlan(max_seconds=10)  # level 1 wants 22 requests of 0.3 s: more than 3 s
    result = find_capacity(
        Target(_url(long_replies), KEY, "m"), max_concurrency=1024, plan=plan, budget_s=3.0
    )
    elapsed = time.monotonic() - started
    assert result.stopped == "time" and result.capacity.limited_by == "time"
    assert [lv.concurrency for lv in result.levels] == [1]
    # Cut, not run out: the level alone would take 22 x 0.3 s. (Not "budget + 1 s": with both
    # cores busy the warm-up and the teardown alone have taken more than a second.)
    assert elapsed < 22 * 0.3, elapsed
    # And cut at the budget, not at its own 10 s cap (the elapsed time alone would not tell).
    assert result.levels[0].duration_s < 10 / 2, result.levels[0]
    assert "time limit" in verdict(result)


def test_the_default_search_is_bounded_to_about_two_minutes() -> None:
    from lmreg_nb.probe.load.capacity import BUDGET_S, DEFAULT_PLAN

    # The budget holds the warm-up, every level and the requests cut at their end.
    assert BUDGET_S <= 120 < 3 * 60
    assert DEFAULT_PLAN.max_seconds < BUDGET_S


@pytest.mark.slow  # a real search or process: CI's lane, not the inner loop
def test_ctrl_c_returns_what_was_measured_so_far(plain: str) -> None:
    def interrupt_after_two(level: object) -> None:
        if len(seen) == 1:
            # Ctrl-C: SIGINT to the main thread, waiting for the search's thread.
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
        seen.append(level)

    seen: list[object] = []
    # Python's own Ctrl-C (KeyboardInterrupt), as in a terminal or a kernel. pytest started
    # in the background of a non-interactive shell inherits SIGINT ignored, and Python then
    # installs no handler (the search ran to its end): this test installs it.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        result = find_capacity(
            Target(_url(plain), KEY, "m"), max_concurrency=64, plan=FAST,
            on_level=interrupt_after_two,
        )  # fmt: skip
    finally:
        signal.signal(signal.SIGINT, previous)
    assert result.stopped == "interrupted"
    assert 2 <= len(result.levels) < 7
    assert result.capacity.limited_by == "interrupted"
    assert "interrupted" in verdict(result)


def test_bad_arguments_are_one_line_errors(plain: str) -> None:
    from lmreg_nb.errors import ValidationError

    with pytest.raises(ValidationError, match="max_concurrency"):
        find_capacity(Target(_url(plain), KEY, "m"), max_concurrency=4, need=8)
    with pytest.raises(ValidationError, match="apiKey"):
        find_capacity(Target(_url(plain), " ", "m"))


def _env(url: str) -> dict[str, str]:
    return {"LMREG_MODEL_URL": url, "LMREG_MODEL_API_KEY": KEY, "LMREG_MODEL_NAME": "m"}


def test_cli_json_and_exit_codes(plain: str) -> None:
    args = ["capacity", "--json", "--slo-ttft-ms", "1000", "--level-seconds", "0.2"]
    ok = CliRunner().invoke(
        main, [*args, "--max-concurrency", "2", "--need", "2"], env=_env(_url(plain))
    )
    assert ok.exit_code == 0, ok.output
    out = json.loads(ok.stdout)
    assert out["need"] == 2 and out["capacity"]["concurrency"] == 2
    assert out["slo"] == {
        "ttft_ms": 1000.0,
        "itl_ms": 150.0,
        "pause_ms": 2000.0,
        "max_error_rate": 0.01,
    }
    assert set(out["client"]) == {"stalls", "worst_stall_ms", "stalled_share", "may_read_longer_ms"}
    assert KEY not in ok.output

    failed = CliRunner().invoke(
        main, [*args, "--max-concurrency", "2"], env=_env(_url(plain, "status-500"))
    )
    assert failed.exit_code == 1
    assert json.loads(failed.stdout)["capacity"]["concurrency"] == 0

    usage = CliRunner().invoke(
        main, [*args, "--max-concurrency", "4", "--need", "8"], env=_env(_url(plain))
    )
    assert usage.exit_code == 2
    assert (
        usage.stderr == "error: --need: 8 is above --max-concurrency 4: raise --max-concurrency\n"
    )
    assert "Traceback" not in usage.output


@pytest.mark.slow  # a real search or process: CI's lane, not the inner loop
def test_cli_text_table_verdict_and_figure(plain: str, tmp_path) -> None:
    fig = tmp_path / "cap.png"
    result = CliRunner().invoke(
        main,
        ["capacity", "--max-concurrency", "1", "--level-seconds", "0.3", "--figure", str(fig)],
        env=_env(_url(plain)),
    )
    assert result.exit_code == 0, result.output
    assert "chats at once  requests  errors" in result.stdout
    assert "capacity: 1 (limited by the most chats tried)" in result.stdout
    assert "verdict: The model serves at least 1 chat at once within the SLO" in result.stdout
    assert fig.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow  # a real search or process: CI's lane, not the inner loop
def test_cli_registered_measures_the_registered_model(sandbox) -> None:
    env = {k: v for k, v in sandbox.env().items() if k != "LMREG_MODEL_NAME"}
    env["LMREG_MODEL_API_KEY"] = sandbox.model_api_key
    runner = CliRunner()
    reg = runner.invoke(
        main, ["register", "--name", "capacity-model", "--url", sandbox.model_url], env=env
    )
    assert reg.exit_code == 0, reg.output
    env["LMREG_MODEL_URL"] = "http://127.0.0.1:9/v1/chat/completions"  # must not be used
    result = runner.invoke(
        main,
        ["capacity", "--registered", "capacity-model", "--max-concurrency", "1",
         "--level-seconds", "0.3", "--max-tokens", "4", "--json"],
        env=env,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["capacity"]["concurrency"] == 1
    missing = runner.invoke(main, ["capacity", "--registered", "nope", "--json"], env=env)
    assert missing.exit_code == 1 and "no model named 'nope'" in missing.stderr


def test_the_load_test_row_of_check_names_cut_streams_and_the_fix(plain: str) -> None:
    from lmreg_nb.probe import check_endpoint

    report = check_endpoint(Target(_url(plain, "interrupt"), KEY, "m"), requests=8, concurrency=4)
    row = next(c for c in report.checks if c.name == "load-test")
    assert not row.passed and "cut stream" in row.detail
    assert "--interrupt_requests False" in row.detail and "OLLAMA_NUM_PARALLEL" in row.detail


@pytest.mark.slow  # a real search or process: CI's lane, not the inner loop
def test_works_inside_a_running_event_loop_like_jupyter(plain: str) -> None:
    from lmreg_nb.probe.load.capacity import find_capacity_async

    async def cell() -> tuple[int, int]:
        # Jupyter runs cells inside a loop: the sync API must not call asyncio.run there.
        sync = find_capacity(Target(_url(plain), KEY, "m"), max_concurrency=1, plan=FAST)
        awaited = await find_capacity_async(
            Target(_url(plain), KEY, "m"), max_concurrency=1, plan=FAST
        )
        return sync.capacity.concurrency, awaited.capacity.concurrency

    assert asyncio.run(cell()) == (1, 1)
