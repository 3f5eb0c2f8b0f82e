"""Every conformance check against the real mock school model, each quirk on and off."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from lmreg_nb.errors import ValidationError
from lmreg_nb.probe import CheckResult, EndpointReport, Target, check_endpoint
from lmreg_nb.probe.checks.conformance import URL_HTTPS, URL_PATH, URL_PUBLIC_HOST
from lmreg_nb.probe.text.checks import judged
from lmreg_nb.sandbox.school_model import QUIRKS

if TYPE_CHECKING:
    from tests.probe.conftest import Mock

NETWORK_CHECKS = {
    "reachable",
    "key-accepted",
    "chat-answers",
    "chat-reply-shape",
    "chat-usage",
    "wrong-key-rejected",
    "stream-answers",
    "stream-is-streamed",
    "stream-content-type",
    "stream-events-json",
    "stream-no-error-object",
    "stream-content",
    "stream-done",
    "stream-not-buffered",
    "stream-usage",
    "stream-framing",
    "completion-form",
    "errors-are-json",
    "stream-utf8",
    "max-tokens-honoured",
    "model-name-served",
    "system-role",
    "context-window",
    "streams-not-cut",
    "reasoning-separated",
}
URL_CHECKS = {"url-https", "url-path", "url-public-host"}

# quirk -> (checks that fail, the report is ok, a word the failed row's detail holds)
EXPECTED: dict[str, tuple[set[str], bool, str]] = {
    "no-space": (set(), True, ""),
    "crlf": (set(), True, ""),
    "cr": (set(), True, ""),
    "keepalive": (set(), True, ""),
    "null-content": (set(), True, ""),
    "no-usage": ({"chat-usage", "stream-usage"}, True, "usage"),
    "no-done": ({"stream-done"}, False, "[DONE]"),
    "html-errors": ({"errors-are-json"}, True, "text/html"),
    "text-errors": ({"errors-are-json"}, True, "text/plain"),
    "non-json-chunk": ({"stream-events-json"}, False, "this is not json"),
    "error-in-stream": ({"stream-no-error-object", "stream-usage"}, False, "mid-stream"),
    "no-stream": ({"stream-is-streamed"}, False, "one JSON body"),
    "burst": ({"stream-not-buffered"}, True, "buffer"),
    "any-key": ({"wrong-key-rejected"}, False, "made-up key was accepted"),
    "wrong-content-type": ({"stream-content-type"}, False, "text/plain"),
    "slow": ({"reachable"}, False, "did not answer"),
    "status-500": ({"chat-answers"}, False, "HTTP 500"),
    "status-429": ({"chat-answers"}, False, "HTTP 429"),
    "replacement-char": ({"stream-utf8"}, False, "without streaming holds 0"),
    # The model writes U+FFFD itself (streamed and not): a warning, never the stream's failure.
    "model-replacement-char": ({"stream-utf8"}, True, "the model itself writes U+FFFD"),
    "split-utf8": (set(), True, ""),
    "ignore-max-tokens": ({"max-tokens-honoured"}, True, "ignores max_tokens"),
    # The checks' own streams are cut too: asked for again alone, only the cut is named.
    "interrupt": ({"streams-not-cut"}, False, "--interrupt_requests False"),
    "no-system-role": ({"system-role"}, False, "System role not supported"),
    "think-in-content": ({"reasoning-separated"}, True, "<think>"),
    "reasoning-content": (set(), True, ""),
    "truncate-prompt": (set(), True, ""),  # no context window on this mock: nothing to cut
}
# Quirks whose verdicts are tested elsewhere.
ELSEWHERE: set[str] = set()


def _failed(report: EndpointReport) -> set[str]:
    return {c.name for c in report.checks if not c.passed and c.name not in URL_CHECKS}


def _row(report: EndpointReport, name: str) -> CheckResult:
    return next(c for c in report.checks if c.name == name)


def test_every_quirk_has_an_expectation() -> None:
    assert set(EXPECTED) | ELSEWHERE == QUIRKS


def test_a_conforming_endpoint_passes_every_check(mock: Mock) -> None:
    report = check_endpoint(Target(mock.url(), mock.key, mock.model, timeout=5))
    names = [c.name for c in report.checks]
    assert set(names) == NETWORK_CHECKS | URL_CHECKS
    assert _failed(report) == set()
    assert report.ok
    assert "standard OpenAI framing" not in _row(report, "stream-framing").detail
    assert "role-only first chunk" in _row(report, "stream-framing").detail
    assert report.reply_text.startswith("The quick brown fox")
    assert report.metrics is not None
    assert report.metrics.output_tokens == mock.tokens
    assert report.metrics.tokens_source == "usage"


@pytest.mark.parametrize("quirk", sorted(EXPECTED))
def test_each_quirk_gets_its_verdict(mock: Mock, quirk: str) -> None:
    failing, ok, word = EXPECTED[quirk]
    # The slow quirk never answers: it waits out the timeout, kept short for it alone; the
    # others wait for none of theirs, long enough for a busy machine (1 s once was not).
    timeout = 0.3 if quirk == "slow" else 5.0
    report = check_endpoint(Target(mock.url(quirk), mock.key, mock.model, timeout=timeout))
    assert _failed(report) == failing, [c for c in report.checks if not c.passed]
    assert report.ok is ok
    for name in failing:
        assert word in _row(report, name).detail or name == "stream-usage"
    assert json.loads(json.dumps(report.to_json())) == report.to_json()


@pytest.mark.parametrize("quirk", ["no-space", "crlf", "cr", "keepalive", "null-content"])
def test_tolerated_quirks_are_noted(mock: Mock, quirk: str) -> None:
    words = {
        "no-space": "without a space",
        "crlf": "\\r\\n line ends",
        "cr": "\\r line ends",
        "keepalive": "keep-alive",
        "null-content": "content: null",
    }
    report = check_endpoint(Target(mock.url(quirk), mock.key, mock.model, timeout=2))
    assert words[quirk] in _row(report, "stream-framing").detail
    assert report.metrics is not None and report.metrics.output_tokens == mock.tokens


def test_tolerated_quirks_together(mock: Mock) -> None:
    report = check_endpoint(
        Target(mock.url("no-space,crlf,keepalive,null-content"), mock.key, mock.model, timeout=2)
    )
    assert report.ok and _failed(report) == set()
    assert report.reply_text.startswith("The quick brown fox")


def test_breaking_quirks_together(mock: Mock) -> None:
    report = check_endpoint(
        Target(
            mock.url("no-done,non-json-chunk,wrong-content-type"), mock.key, mock.model, timeout=2
        )
    )
    assert _failed(report) == {"stream-done", "stream-events-json", "stream-content-type"}
    assert not report.ok


def test_wrong_key_stops_the_checks(mock: Mock) -> None:
    report = check_endpoint(Target(mock.url(), "not-the-key", mock.model, timeout=2))
    assert _failed(report) == {"key-accepted"}
    assert "LMREG_MODEL_API_KEY" in _row(report, "key-accepted").detail
    assert "not-the-key" not in json.dumps(report.to_json())
    assert not report.ok


def _url_checks(url: str) -> list[CheckResult]:
    target = Target(url, "sk-0123456789", "m")
    found = [judged(c, target) for c in (URL_HTTPS, URL_PATH, URL_PUBLIC_HOST)]
    return [c for c in found if c is not None]


def test_url_checks() -> None:
    good = _url_checks("https://llm.school.edu.cn/v1/chat/completions")
    assert all(c.passed and c.severity == "warning" for c in good)
    bad = {c.name: c for c in _url_checks("http://192.168.1.5:8000/v1")}
    assert not any(c.passed for c in bad.values())
    assert "private" in bad["url-public-host"].detail
    # The school's own address as it should be, not a made-up example (issue 40).
    assert "llm.school.edu" not in bad["url-path"].detail
    assert "http://192.168.1.5:8000/v1/chat/completions" in bad["url-path"].detail
    assert bad["url-path"].fact("url") == "http://192.168.1.5:8000/v1/chat/completions"


def test_checks_frame_is_sorted_by_severity_and_escapes_html(mock: Mock) -> None:
    report = check_endpoint(Target(mock.url("html-errors"), mock.key, mock.model, timeout=2))
    frame = report.checks_frame()
    assert list(frame.columns) == ["name", "passed", "severity", "detail"]
    ranks = frame["severity"].map({"error": 0, "warning": 1, "info": 2}).tolist()
    assert ranks == sorted(ranks)
    assert "<html>" in " ".join(frame["detail"])  # the server's page, quoted...
    assert "<html>" not in frame.to_html() and "&lt;html&gt;" in frame.to_html()  # ...escaped


def test_bad_arguments_are_validation_errors(mock: Mock) -> None:
    with pytest.raises(ValidationError, match="registryUrl"):
        check_endpoint(Target("ftp://x/v1/chat/completions", mock.key, mock.model))
    with pytest.raises(ValidationError, match="apiKey"):
        check_endpoint(Target(mock.url(), "", mock.model))
    with pytest.raises(ValidationError, match="concurrency"):
        check_endpoint(Target(mock.url(), mock.key, mock.model), requests=1, concurrency=0)
    with pytest.raises(ValidationError, match="requests"):
        check_endpoint(Target(mock.url(), mock.key, mock.model), requests=-1)
