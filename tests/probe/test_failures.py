"""Failing servers give a clear verdict or a one-line error, never a crash or a traceback."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner

from lmreg_nb.cli import main
from lmreg_nb.errors import ConnectError, LmregError, RequestTimeout
from lmreg_nb.probe import ChatEndpointError, Target, check_endpoint, stream_chat
from lmreg_nb.sandbox.school_model import reply_tokens

if TYPE_CHECKING:
    from tests.probe.conftest import Mock

pytestmark = pytest.mark.timeout(60)


@pytest.fixture()
def refused_url() -> str:
    """A loopback URL whose port nobody listens on."""
    return "http://127.0.0.1:9/v1/chat/completions"  # discard's port: refused at once


def test_refused_connection_is_a_failed_check(refused_url: str) -> None:
    report = check_endpoint(Target(refused_url, "sk-anything-123", "m", timeout=2), requests=5)
    failed = [c for c in report.checks if not c.passed and c.severity == "error"]
    assert [c.name for c in failed] == ["reachable"]
    assert "nothing listens on" in failed[0].detail and "\n" not in failed[0].detail
    assert report.performance.requests == 1 and report.performance.errors == 1
    assert report.errors_by_kind == {"connect": 1}
    assert not report.ok and report.figure() is None
    assert any(c.name == "load-test" and "not run" in c.detail for c in report.checks)


def test_a_hanging_server_times_out(mock: Mock) -> None:
    report = check_endpoint(Target(mock.url("slow"), mock.key, mock.model, timeout=0.5))
    row = next(c for c in report.checks if c.name == "reachable")
    assert not row.passed and "no answer within 0.5 s" in row.detail
    assert report.errors_by_kind == {"timeout": 1}


@pytest.mark.parametrize(("quirk", "status"), [("status-500", 500), ("status-429", 429)])
def test_error_statuses(mock: Mock, quirk: str, status: int) -> None:
    report = check_endpoint(Target(mock.url(quirk), mock.key, mock.model), requests=3)
    row = next(c for c in report.checks if c.name == "chat-answers")
    assert not row.passed and f"HTTP {status}" in row.detail
    assert report.errors_by_kind == {f"status {status}": 1}


def test_stream_chat_yields_the_tokens(mock: Mock) -> None:
    assert list(stream_chat(Target(mock.url(), mock.key, mock.model), "hi")) == reply_tokens(
        mock.tokens
    )
    # A server that ignores stream: true gives the whole text as one piece.
    assert list(stream_chat(Target(mock.url("no-stream"), mock.key, mock.model), "hi")) == [
        "".join(reply_tokens(mock.tokens))
    ]


@pytest.mark.parametrize(
    ("quirk", "key", "error", "words"),
    [
        ("status-500", None, ChatEndpointError, "HTTP 500"),
        ("status-429", None, ChatEndpointError, "HTTP 429"),
        ("", "wrong-key-1234", ChatEndpointError, "LMREG_MODEL_API_KEY"),
        ("html-errors", "wrong-key-1234", ChatEndpointError, "HTTP 401"),
        ("error-in-stream", None, ChatEndpointError, "mid-stream"),
        ("non-json-chunk", None, ChatEndpointError, "not JSON"),
        ("slow", None, RequestTimeout, "did not answer within 0.5 s"),
    ],
)
def test_stream_chat_errors_are_one_line(
    mock: Mock, quirk: str, key: str | None, error: type[LmregError], words: str
) -> None:
    # Only the slow quirk waits out its timeout; the others' answers get room for a busy
    # machine (a stream once took over 0.5 s to start at load 15).
    timeout = 0.5 if quirk == "slow" else 5.0
    with pytest.raises(error) as info:
        list(
            stream_chat(Target(mock.url(quirk), key or mock.key, mock.model, timeout=timeout), "hi")
        )
    message = str(info.value)
    assert words in message and "\n" not in message
    assert mock.key not in message and "wrong-key-1234" not in message


def test_stream_chat_refused(refused_url: str) -> None:
    with pytest.raises(ConnectError, match="nothing listens on"):
        list(stream_chat(Target(refused_url, "sk-anything-123", "m"), "hi"))


def _cli(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["check", *args], env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _env(url: str, key: str, timeout: str = "2") -> dict[str, str]:
    return {
        "LMREG_MODEL_URL": url,
        "LMREG_MODEL_API_KEY": key,
        "LMREG_MODEL_NAME": "school-llm",
        "LMREG_TIMEOUT": timeout,
    }


@pytest.mark.parametrize(
    ("quirk", "words"),
    [
        ("slow", "error: reachable: no answer within 0.5 s"),
        ("status-500", "error: chat-answers: HTTP 500"),
        ("status-429", "error: chat-answers: HTTP 429"),
    ],
)
def test_cli_failing_server_exit_1_and_one_line(mock: Mock, quirk: str, words: str) -> None:
    code, out, err = _cli(_env(mock.url(quirk), mock.key, "0.5"), "--json")
    assert code == 1
    assert err.startswith(words) and err.count("\n") == 1
    assert "Traceback" not in out + err and mock.key not in out + err
    assert set(json.loads(out)) == {"checks", "summary", "workload", "client", "server"}


def test_cli_refused_connection_is_one_line_and_exit_1(refused_url: str) -> None:
    code, out, err = _cli(_env(refused_url, "sk-secret-key-98765"))
    assert code == 1
    assert err.startswith("error: reachable: nothing listens on")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "sk-secret-key-98765" not in out + err
    assert "verdict: FAILED" in out


def test_cli_missing_setting_is_exit_2(mock: Mock) -> None:
    env = _env(mock.url(), mock.key)
    del env["LMREG_MODEL_API_KEY"]
    code, _, err = _cli(env)
    assert code == 2 and "LMREG_MODEL_API_KEY is not set" in err
