"""The load test, its summary (the contract's JSON), rows, figure and the CLI around it."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner

from lmreg_nb.cli import main
from lmreg_nb.probe import Target, check_endpoint
from lmreg_nb.probe.load.fixed import run_load

if TYPE_CHECKING:
    from tests.probe.conftest import Mock

pytestmark = pytest.mark.timeout(60)
PCT = {"p50", "p90", "p99"}
SUMMARY = {
    "requests",
    "errors",
    "ttft_ms",
    "first_answer_ms",
    "itl_ms",
    "latency_ms",
    "requests_per_s",
    "output_tokens_per_s",
    "client",  # the client's own stalls while the load test ran
}


def test_load_test_rows_summary_and_figure(mock: Mock) -> None:
    report = check_endpoint(Target(mock.url(), mock.key, mock.model), requests=12, concurrency=6)
    s = report.performance.to_json()
    assert set(s) == SUMMARY and report.performance.load_test
    assert set(s["client"]) == {"stalls", "worst_stall_ms", "stalled_share"}
    assert all(set(s[k]) == PCT for k in ("ttft_ms", "first_answer_ms", "itl_ms", "latency_ms"))
    assert s["requests"] == 12 and s["errors"] == 0
    # The mock cannot answer before its schedule: measured times are at least the knobs
    # (the clock starts just before our request is written; the 10% margin dates from
    # when it started after the write, and a busy machine recorded it a moment late).
    assert s["ttft_ms"]["p50"] >= 0.9 * mock.ttft_ms
    assert s["latency_ms"]["p50"] >= 0.9 * (mock.ttft_ms + (mock.tokens - 1) * mock.itl_ms)
    assert s["itl_ms"]["p50"] > 0
    assert s["output_tokens_per_s"] == pytest.approx(s["requests_per_s"] * mock.tokens, rel=1e-3)

    rows = report.rows
    assert rows is not None and len(rows) == 12 and rows["ok"].all()
    assert (rows["output_tokens"] == mock.tokens).all() and (rows["tokens_source"] == "usage").all()
    assert (rows["ttft_ms"] < rows["latency_ms"]).all()
    assert (rows["start_s"] < rows["end_s"]).all()
    load_row = next(c for c in report.checks if c.name == "load-test")
    assert load_row.passed and "12 of 12 requests at concurrency 6" in load_row.detail

    fig = report.figure()
    assert fig is not None
    titles = [ax.get_title() for ax in fig.axes[:4]]
    assert titles == [
        "Latency (whole reply)",
        "Time to first token",
        "Inter-token latency (per request)",
        "Throughput over time",
    ]
    assert all(ax.get_xlabel() for ax in fig.axes[:4])
    assert "12 requests at concurrency 6, 0 failed" in fig.get_suptitle()
    # Both throughput series are drawn, each on its own axis (twin axes).
    assert len(fig.axes[3].get_lines()) == 1 and len(fig.axes[4].get_lines()) == 1
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    assert buf.getvalue()[:4] == b"\x89PNG"

    payload = json.dumps(report.to_json())
    assert set(json.loads(payload)) == {"checks", "summary", "workload", "client", "server"}
    assert mock.key not in payload


def test_without_a_load_test_the_summary_is_the_streamed_check_request(mock: Mock) -> None:
    report = check_endpoint(Target(mock.url(), mock.key, mock.model))
    s = report.performance.to_json()
    assert s["requests"] == 1 and s["errors"] == 0 and not report.performance.load_test
    assert s["ttft_ms"]["p50"] == s["ttft_ms"]["p99"] == report.metrics.ttft_ms  # type: ignore[union-attr]
    assert s["latency_ms"]["p50"] == report.metrics.latency_ms  # type: ignore[union-attr]
    assert report.rows is None and report.figure() is None


def test_the_load_test_uses_the_capacity_search_s_lean_client(
    mock: Mock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One streaming client for both: it kept time at 128 chats where httpx fell behind.
    from lmreg_nb.probe.wire.stream_client import ChatConnection

    sent: list[int] = []
    real = ChatConnection.send

    async def counted(self: ChatConnection) -> object:
        sent.append(1)
        return await real(self)

    monkeypatch.setattr(ChatConnection, "send", counted)
    result = asyncio.run(run_load(Target(mock.url(), mock.key, mock.model), 6, 3))
    assert len(sent) == 6 and result.performance().errors == 0
    # Timed per chunk (an ITL of 0 when a busy machine read the reply in one go).
    assert all(r.ttft_ms and r.itl_mean_ms is not None for r in result.rows)


def test_the_deadline_bounds_the_load_test(mock: Mock) -> None:
    target = Target(mock.url(), mock.key, mock.model, timeout=5)
    result = asyncio.run(run_load(target, 500, 2, max_duration=0.4))
    assert 0 < len(result.rows) < 500
    assert set(result.errors_by_kind) <= {"deadline"}
    assert result.performance().requests == len(result.rows)


@pytest.mark.parametrize(
    ("quirk", "timeout", "kind"),
    [
        ("status-500", 5.0, "status 500"),
        ("status-429", 5.0, "status 429"),
        ("slow", 0.3, "timeout"),
    ],
)
def test_errors_by_kind(mock: Mock, quirk: str, timeout: float, kind: str) -> None:
    target = Target(mock.url(quirk), mock.key, mock.model, timeout=timeout)
    result = asyncio.run(run_load(target, 4, 4))
    assert result.errors_by_kind == {kind: 4}
    summary = result.performance()
    assert summary.errors == 4 and summary.latency_ms.p50 is None


def test_a_bad_stream_counts_as_an_error(mock: Mock) -> None:
    target = Target(mock.url("error-in-stream"), mock.key, mock.model)
    result = asyncio.run(run_load(target, 3, 3))
    assert result.errors_by_kind == {"bad stream": 3}


def test_progress_bar_goes_to_stderr(mock: Mock, capsys: pytest.CaptureFixture[str]) -> None:
    check_endpoint(
        Target(mock.url(), mock.key, mock.model), requests=3, concurrency=3, progress=True
    )
    assert "load test" in capsys.readouterr().err


def _env(mock: Mock, url: str) -> dict[str, str]:
    return {
        "LMREG_MODEL_URL": url,
        "LMREG_MODEL_API_KEY": mock.key,
        "LMREG_MODEL_NAME": mock.model,
    }


def test_cli_json_is_the_contract(mock: Mock) -> None:
    result = CliRunner().invoke(
        main, ["check", "--json", "-n", "4", "-c", "2"], env=_env(mock, mock.url())
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert set(out) == {"checks", "summary", "workload", "client", "server"}
    # The client watched itself (contract: "The client checks itself"); the mock
    # publishes no figures of its own.
    assert set(out["client"]) == {"stalls", "worst_stall_ms", "stalled_share"}
    assert out["server"] is None
    assert all(set(c) == {"name", "passed", "severity", "detail"} for c in out["checks"])
    assert set(out["summary"]) == SUMMARY and out["summary"]["requests"] == 4
    assert mock.key not in result.output


def test_cli_text_table_and_figure(mock: Mock, tmp_path: Path) -> None:
    chart = tmp_path / "check.png"
    result = CliRunner().invoke(
        main, ["check", "-n", "4", "-c", "2", "--plot", str(chart)], env=_env(mock, mock.url())
    )
    assert result.exit_code == 0, result.output
    assert "[ ok ] required    stream-done" in result.stdout
    assert "verdict: OK" in result.stdout
    assert f"figure: {chart}" in result.stdout
    assert chart.read_bytes()[:4] == b"\x89PNG"


def test_cli_exit_1_when_an_error_check_fails(mock: Mock) -> None:
    result = CliRunner().invoke(main, ["check"], env=_env(mock, mock.url("no-done")))
    assert result.exit_code == 1
    assert result.stderr.startswith("error: stream-done: the stream ended without data: [DONE]")
    assert "[FAIL] required    stream-done" in result.stdout


def test_works_inside_a_running_event_loop_like_jupyter(mock: Mock) -> None:
    from lmreg_nb.probe import check_endpoint_async

    async def cell() -> tuple[bool, bool]:
        # Jupyter runs cells inside a loop: the sync API must not call asyncio.run there.
        sync = check_endpoint(Target(mock.url(), mock.key, mock.model))
        awaited = await check_endpoint_async(Target(mock.url(), mock.key, mock.model))
        return sync.ok, awaited.ok

    assert asyncio.run(cell()) == (True, True)


def test_throughput_counts_tokens_when_they_arrive() -> None:
    import numpy as np
    import pandas as pd

    from lmreg_nb.probe.text.plots import peak_concurrency, token_arrivals

    # First token after 1 s, 20 tokens until the end at 3 s: 10 per second from 1 s to 3 s,
    # not 20 at 3 s; a second request overlaps the first from 2 s.
    rows = pd.DataFrame(
        {
            "ok": [True, True, False],
            "start_s": [0.0, 2.0, 0.0],
            "end_s": [3.0, 4.0, 0.5],
            "ttft_ms": [1000.0, 0.0, None],
            "output_tokens": [20, 8, 0],
        }
    )
    per_bin = token_arrivals(rows, np.array([0.0, 1.0, 2.0, 3.0, 4.0]))
    assert per_bin.tolist() == pytest.approx([0.0, 10.0, 14.0, 4.0])
    assert peak_concurrency(rows) == 2
