"""The official `openai` client is the independent reference: it must read what the probe reads."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import openai
import pytest

from lmreg_nb.probe import Target, check_endpoint, stream_chat
from lmreg_nb.sandbox.school_model import reply_tokens

if TYPE_CHECKING:
    from tests.probe.conftest import Mock

PROMPT = "In two sentences, what is a language model?"


def _openai_stream(mock: Mock, quirks: str) -> tuple[str, int, int | None]:
    """Text, content chunks and usage tokens as the openai package parses them."""
    base = mock.url(quirks).removesuffix("/chat/completions")
    with openai.OpenAI(base_url=base, api_key=mock.key, max_retries=0, timeout=10) as client:
        stream = client.chat.completions.create(
            model=mock.model,
            messages=[{"role": "user", "content": PROMPT}],
            stream=True,
            stream_options={"include_usage": True},
        )
        pieces, usage = [], None
        for chunk in stream:
            if chunk.usage is not None:
                usage = chunk.usage.completion_tokens
            if chunk.choices and chunk.choices[0].delta.content:
                pieces.append(chunk.choices[0].delta.content)
    return "".join(pieces), len(pieces), usage


@pytest.mark.parametrize(
    "quirks", ["", "no-space", "crlf", "cr", "keepalive", "null-content", "no-usage", "burst"]
)
def test_probe_reads_what_openai_reads(mock: Mock, quirks: str) -> None:
    # The three readers at once (the openai client and the chat step in threads of their
    # own): each reads its own reply, and the test waits for one reply, not three.
    with ThreadPoolExecutor(2) as pool:
        reference = pool.submit(_openai_stream, mock, quirks)
        target = Target(mock.url(quirks), mock.key, mock.model)
        chatted = pool.submit(lambda: "".join(stream_chat(target, PROMPT)))
        report = check_endpoint(Target(mock.url(quirks), mock.key, mock.model, timeout=5))
        text, chunks, usage = reference.result()
        probed = chatted.result()
    assert text == "".join(reply_tokens(mock.tokens))  # the reference saw the truth

    assert probed == text

    assert report.reply_text == text
    assert report.metrics is not None
    assert report.metrics.chunks == chunks
    expected_source = "chunks" if usage is None else "usage"
    assert report.metrics.tokens_source == expected_source
    assert report.metrics.output_tokens == (chunks if usage is None else usage)


def test_completion_form_reads_like_openai(mock: Mock) -> None:
    base = mock.url().removesuffix("/chat/completions")
    with openai.OpenAI(base_url=base, api_key=mock.key, max_retries=0) as client:
        reply = client.completions.create(model=mock.model, prompt=PROMPT, temperature=0.2)
    report = check_endpoint(Target(mock.url(), mock.key, mock.model, timeout=5))
    row = next(c for c in report.checks if c.name == "completion-form")
    assert row.passed
    assert f"gave {len(reply.choices[0].text)} characters" in row.detail
