"""Checks as declarations (issue 40): a new check is one declaration plus its test.

The suite runs what the families declare and list; the words of an outcome are its
declaration's, found by the check's name, in every language; no two declarations
share a name; each request a check names is sent once, however many checks read it.
"""

from __future__ import annotations

import asyncio
import json
import string
from collections import Counter

import httpx
import pytest

from lmreg_nb.i18n import N_
from lmreg_nb.probe import Target
from lmreg_nb.probe.checks.catalog import CHECKS, MEASURED
from lmreg_nb.probe.checks.declare import COMMON, Context, Declared, Request, Seen, Words
from lmreg_nb.probe.checks.suite import run_checks
from lmreg_nb.probe.text.checks import judged, worded
from lmreg_nb.probe.wire.exchange import Exchange, chat_body, send
from lmreg_nb.summary import Check

URL = "http://127.0.0.1:9/v1/chat/completions"
KEY = "sk-declared-0123456789"
TARGET = Target(URL, KEY, "m", timeout=2.0)
REPLY = {
    "id": "c1", "object": "chat.completion", "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}  # fmt: skip


async def _echo(ctx: Context, target: Target) -> Exchange:
    body = chat_body(target.model, "Say: echo", stream=False, max_tokens=4)
    return await send(ctx.client, target, body, stream=False)


def _judge(seen: Seen, target: Target) -> Check:
    ex = seen.exchange("echo")
    if ex.status == 200:
        return ECHO.passed(status=ex.status)
    return ECHO.failed("no-echo", status=ex.status)


#: A check that is not the toolkit's: declared here, in its test, and nowhere else.
ECHO = Declared(
    "echo-answered",
    "warning",
    says={
        "passed": Words("HTTP {status}", raw=True),
        "no-echo": Words(N_("no answer to an echo ({status})")),
    },
    sends=(Request("echo", _echo),),
    judge=_judge,
)


def _handle(sent: Counter[str]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else {}
        messages = body.get("messages") or [{}]
        prompt = str(messages[-1].get("content", ""))[:20]
        sent[prompt] += 1
        # The plain chat: not streamed, the checks' max_tokens, the key, no system message.
        plain = (request.url.path.endswith("/chat/completions") and "messages" in body
                 and not body.get("stream") and body.get("max_tokens") == 64
                 and len(messages) == 1
                 and request.headers.get("authorization") == f"Bearer {KEY}")  # fmt: skip
        sent["plain"] += plain
        return httpx.Response(200, json=REPLY)

    return httpx.MockTransport(handle)


def test_a_new_check_is_one_declaration_and_the_suite_runs_it() -> None:
    sent: Counter[str] = Counter()

    async def go() -> list[Check]:
        async with httpx.AsyncClient(transport=_handle(sent)) as client:
            found, _chat = await run_checks(client, TARGET, checks=(ECHO,))
            return [worded(c) for c in found.checks]

    rows = asyncio.run(go())
    assert [(c.name, c.passed, c.detail) for c in rows] == [("echo-answered", True, "HTTP 200")]
    assert sent["Say: echo"] == 1  # its request, once; the plain chat for the diagnosis


def test_the_suite_sends_each_request_once_however_many_checks_read_it() -> None:
    sent: Counter[str] = Counter()

    async def go() -> None:
        async with httpx.AsyncClient(transport=_handle(sent)) as client:
            await run_checks(client, TARGET, checks=(*CHECKS, ECHO))

    asyncio.run(go())
    assert sent["Say: echo"] == 1
    readers = [c.name for c in CHECKS if any(r.name == "plain" for r in c.sends)]
    assert len(readers) > 3  # many checks read the plain chat...
    assert sent["plain"] == 1  # ...sent once


def test_no_two_declarations_share_a_name_and_every_cause_has_words() -> None:
    names = [c.name for c in (*CHECKS, *MEASURED)]
    assert len(names) == len(set(names))
    for check in (*CHECKS, *MEASURED):
        for words in [*check.says.values(), *(w for p in check.parts.values() for w in p.values())]:
            keys = [k for _t, k, _s, _c in string.Formatter().parse(words.text) if k]
            assert all(k.isidentifier() for k in keys), (check.name, words.text)
            if words.plural is not None:
                assert words.count in keys, (check.name, words.text)


def test_not_judged_has_words_in_both_languages(lang: str) -> None:
    check = ECHO.not_judged("not-judged:wrong-path", registered=URL, status=404)
    said = worded(check).detail
    assert URL in said and "404" in said and "url-path" in said
    assert said != COMMON["not-judged:wrong-path"].text or lang == "en"


def test_a_cause_without_words_is_refused_when_judged() -> None:
    with pytest.raises(KeyError):
        ECHO.failed("no-such-cause")
    assert judged(ECHO, TARGET, {"echo": Exchange(stream_requested=False)}) is not None
