"""The mock school model's knobs: :class:`MockModelConfig` and the quirks it knows.

Imports nothing above it (as guidellm's ``mock_server/config.py``): every other
module of the mock imports it, never the other way.

Quirks imitate what real servers and proxies do. They come from
``MockModelConfig.quirks`` and, per request, from a path prefix, so one mock
serves them all: ``/quirks/no-done,burst/v1/chat/completions``.

Tolerated by well-behaved clients (the probe notes them; a missing usage is a
warning):

==================  =========================================================
``no-space``        ``data:{json}`` (no space after the colon)
``crlf``            ``\\r\\n`` line ends
``cr``              ``\\r`` line ends
``keepalive``       ``: keep-alive`` comment lines before and between chunks
``null-content``    ``"content": null`` in the role chunk and the last chunk
``no-usage``        no ``usage``, in the JSON reply or in the stream
==================  =========================================================

Breaking clients (the probe flags them: errors, except burst, html-errors and
text-errors, which are warnings):

======================  =====================================================
``no-done``             the stream ends without ``data: [DONE]``
``html-errors``         error replies are an HTML page
``text-errors``         error replies are plain text
``non-json-chunk``      one ``data:`` line in the stream is not JSON
``error-in-stream``     a 200 stream carries an ``{"error": ...}`` object midway
``no-stream``           a streamed request is answered with one JSON body
``burst``               every chunk arrives at once at the end (a buffering proxy)
``any-key``             every API key is accepted
``wrong-content-type``  the stream is sent as ``text/plain``
``slow``                no answer at all (hangs until the client gives up)
``status-500``          every request answers 500
``status-429``          every request answers 429 with ``Retry-After: 1``
``interrupt``           a new request (streamed or not) cuts the streams in
                        progress (llama.cpp's ``interrupt_requests``): ``data:
                        [DONE]``, no finish_reason
``no-system-role``      a chat whose messages hold a system message gets 400
                        "System role not supported" (a Gemma-style chat template)
``think-in-content``    a reasoning model without a reasoning parser: a
                        ``<think>...</think>`` block opens the content
``reasoning-content``   (tolerated) a reasoning model with a parser: the thinking
                        comes first as ``reasoning_content`` deltas, the answer after
``truncate-prompt``     with a context window (``context_window``), a longer
                        prompt is cut to the window silently, as Ollama does with
                        ``num_ctx``, instead of refused
``replacement-char``    a streamed Chinese reply carries U+FFFD in place of some
                        characters (a server decoding byte-level tokens one by one);
                        the same request unstreamed is clean
``model-replacement-char``  (a warning) every Chinese reply, streamed or not, carries
                        U+FFFD in place of some characters: the model writes them
                        (random or badly quantized weights)
``split-utf8``          (tolerated) each write of a stream is cut inside a
                        multi-byte character, the rest following 5 ms later
``ignore-max-tokens``   ``max_tokens`` / ``max_completion_tokens`` are ignored
======================  =====================================================

``context_window`` (N tokens, 0: none; a prompt's tokens as
:func:`lmreg_nb.sandbox.school_model.compute.tokenize` counts them: one per CJK
character, one per four characters of other words): a
prompt of more than N tokens, or with ``max_tokens`` more than N in all, gets
vLLM's 400 "This model's maximum context length is N tokens. However, you
requested ..." (with ``truncate-prompt``: answered, ``usage.prompt_tokens``
capped at N).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["QUIRKS", "MockModelConfig", "parse_quirks"]

#: Every quirk the mock knows (see the module docstring).
QUIRKS: frozenset[str] = frozenset(
    {
        "no-space",
        "crlf",
        "cr",
        "keepalive",
        "null-content",
        "no-usage",
        "no-done",
        "html-errors",
        "text-errors",
        "non-json-chunk",
        "error-in-stream",
        "no-stream",
        "burst",
        "any-key",
        "wrong-content-type",
        "slow",
        "status-500",
        "status-429",
        "interrupt",
        "replacement-char",
        "model-replacement-char",
        "split-utf8",
        "ignore-max-tokens",
        "no-system-role",
        "think-in-content",
        "reasoning-content",
        "truncate-prompt",
    }
)


@dataclass(frozen=True)
class MockModelConfig:
    """Knobs of the mock: its API key, latencies (ms), tokens per reply, quirks."""

    api_key: str
    ttft_ms: float = 50.0
    itl_ms: float = 10.0
    tokens: int = 32
    quirks: frozenset[str] = frozenset()
    slots: int = 0  # requests served at once, the rest queue (0: no limit); see saturation.py
    slowdown: float = 0.0  # each gap is itl_ms * (1 + slowdown * (streams in progress - 1))
    served: tuple[str, ...] = ()  # model names served (empty: any name)
    context_window: int = 0  # tokens of prompt + max_tokens accepted (0: no limit)
    prefill_tokens_per_s: float = 0.0  # one FCFS prefill queue (0: free); see compute.py
    prefix_cache: bool = False  # a prompt's start seen before costs no prefill
    kv_tokens: int = 0  # prompt + reply tokens in flight at once (0: no limit)

    def __post_init__(self) -> None:
        unknown = set(self.quirks) - QUIRKS
        if unknown:
            raise ValueError(
                f"unknown quirk(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(QUIRKS))}"
            )
        if self.ttft_ms < 0 or self.itl_ms < 0 or self.tokens < 0:
            raise ValueError("ttft_ms, itl_ms and tokens must not be negative")
        if self.slots < 0 or self.slowdown < 0 or self.context_window < 0:
            raise ValueError("slots, slowdown and context_window must not be negative")
        if not self.prefill_tokens_per_s >= 0 or self.kv_tokens < 0:  # NaN fails too
            raise ValueError("prefill_tokens_per_s and kv_tokens must not be negative")


def parse_quirks(values: Iterable[str]) -> frozenset[str]:
    """Quirk names from a CLI (``--quirk a --quirk b,c``), checked against :data:`QUIRKS`."""
    asked = frozenset(q.strip() for v in values for q in v.split(",") if q.strip())
    unknown = asked - QUIRKS
    if unknown:
        raise ValueError(
            f"unknown quirk(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(QUIRKS))}"
        )
    return asked
