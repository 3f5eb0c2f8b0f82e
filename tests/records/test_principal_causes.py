"""Issue 32 item 5: the principal's page names the real cause, one row per cause.

Three failure kinds, each from real checks against a loopback server, in both
languages: a server that does not answer, a context window of 4096 tokens and
a server that cuts streams. The page says what happened in plain words, not
"answers the wrong way", and no "steps not done" row for a step that only
waits on that cause.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Callable, Iterator

import pytest
from fakes.hosts import mock_served

from lmreg_nb.probe import CheckResult, Target, check_endpoint
from lmreg_nb.records.principal import obstacles, render_principal_html
from lmreg_nb.sandbox.school_model import MockModelConfig
from lmreg_nb.summary import Step, build_summary

pytestmark = pytest.mark.timeout(120)

KEY = "sk-principal-0123456789abcdef"
WINDOW = 4096
#: What each language's page must say for each cause (the words of the row).
SAYS = {
    "down": {"en": "does not answer", "zh-CN": "没有应答"},
    "window": {"en": "tokens are refused", "zh-CN": "token 的课文会被拒绝"},
    "cut": {"en": "cut off when two students ask at once", "zh-CN": "两个学生同时提问"},
}
GENERIC = {
    "en": ("the way the platform needs", "steps have not been done"),
    "zh-CN": ("回答方式还不符合平台的要求", "还有接入步骤没有完成"),
}


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, str]]:
    window = MockModelConfig(api_key=KEY, ttft_ms=5, itl_ms=2, tokens=8, context_window=WINDOW)
    # Replies of half a second: two chats sent at once overlap even when a busy machine
    # starts the second late (8 tokens 2 ms apart ended before it came: nothing was cut).
    # Not longer: the checks send the cut streams again, one at a time.
    plain = MockModelConfig(api_key=KEY, ttft_ms=5, itl_ms=25, tokens=20)
    down = 9  # discard's port: nothing listens on it, the connection is refused
    with mock_served(window) as small, mock_served(plain) as base:
        yield {
            "down": f"http://127.0.0.1:{down}/v1/chat/completions",
            "window": f"{small}/v1/chat/completions",
            "cut": f"{base}/quirks/interrupt/v1/chat/completions",
        }


@pytest.fixture(scope="module")
def checked(servers: dict[str, str]) -> Callable[[str], tuple[CheckResult, ...]]:
    """The checks' rows against each server, run once for both languages (the rows carry
    no words; the page puts them in the language)."""

    @functools.cache
    def rows(kind: str) -> tuple[CheckResult, ...]:
        target = Target(servers[kind], KEY, "m", timeout=5)
        return tuple(check_endpoint(target, context_need=8000).checks)

    return rows


def _page_rows(rows_checked: tuple[CheckResult, ...], lang: str) -> list[str]:
    checks = list(rows_checked)
    failed = [c.name for c in checks if not c.passed and c.severity == "error"]
    steps = [Step(name, True, "") for name in ("contact card", "token", "register", "list models")]
    said = "required checks failed: " + ", ".join(failed)
    steps.append(Step("chat endpoint checks", False, said))
    summary = build_summary(
        school="S", contact=None, base_url=None, env=None, steps=steps, models=[],
        checks=checks, class_size=40, lang=lang, target_urls=[],
    )  # fmt: skip
    page = render_principal_html(summary)
    rows = [html.unescape(r) for r in re.findall(r"<tr><td>(.*?)</td>", page)]
    assert rows == [o.text for o in obstacles(summary)]
    # The address rows (loopback, plain http) are true of every rehearsal here.
    address = {o.text for o in obstacles(summary) if o.cause in ("unreachable-host", "plain-http")}
    return [r for r in rows if r not in address]


@pytest.mark.parametrize("kind", ["down", "window", "cut"])
def test_the_principals_page_names_the_cause(
    checked: Callable[[str], tuple[CheckResult, ...]], lang: str, kind: str
) -> None:
    rows = _page_rows(checked(kind), lang)
    said = " | ".join(rows)
    assert SAYS[kind][lang] in said, rows
    for other in set(SAYS) - {kind}:
        assert SAYS[other][lang] not in said, rows  # one cause, not another's words
    for generic in GENERIC[lang]:
        assert generic not in said, rows
    assert len(rows) == len(set(rows))
    if kind == "window":
        numbers = {int(n) for n in re.findall(r"\d+", said)}
        assert {n for n in numbers if 2048 <= n < WINDOW}, rows  # how long a lesson is taken
    if kind == "down":
        assert len(rows) == 1, rows  # every other check waits on it: one row
