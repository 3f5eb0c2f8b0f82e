"""A mock school model: an OpenAI-compatible chat endpoint with known timing and quirks.

It serves ``POST /v1/chat/completions`` (streamed and not) and
``POST /v1/completions`` in the OpenAI shapes, checks ``Authorization: Bearer
<api_key>`` (401 with an OpenAI-style error body otherwise) and honours its
latency knobs exactly, so that the probe's measurements can be checked against
a known truth: the stream sends a role-only first chunk at once, then content
chunk ``k`` (one token each, ``k = 0 .. tokens-1``) at ``t0 + ttft_ms + k *
itl_ms``, where ``t0`` is the request's arrival in the app (the handler's
start) on a monotonic clock. Chunks
are scheduled against that clock, never by chained sleeps, so timing does not
drift; chunks already due (``itl_ms = 0``, or a late loop) go out in one write.
A non-streamed reply is sent when the last token would be.

``max_tokens`` / ``max_completion_tokens`` in the request cap the reply
(``finish_reason`` is then ``"length"``). ``stream_options.include_usage``
adds a last chunk with empty ``choices`` and ``usage``.

A prompt with Chinese characters gets a Chinese reply (one character per
token, sent as raw UTF-8). ``served`` names the models served (vLLM's
``--served-model-name``): another ``model`` gets vLLM's 404 ``{"object":
"error", ...}`` and ``GET /v1/models`` lists them; without it any name is
served and ``GET /v1/models`` answers 404. :func:`serving` takes a
certificate and key to serve https.

Quirks (``MockModelConfig.quirks``, or per request a path prefix
``/quirks/no-done,burst/v1/chat/completions``) and the context window: see
:mod:`.config`. Saturation like a real server's (a slot limit, a decode
slowdown under load, llama.cpp's interrupt): see :mod:`.saturation`. Compute
like a GPU's (a prefill queue at R tokens a second, a prefix cache, a KV
budget; how prompt tokens are counted): see :mod:`.compute`.

Also served: ``GET /health`` and ``GET /v1/models``. Ways to run it:
:func:`create_app` (the ASGI app, for uvicorn or the sandbox command), and
in :mod:`.serve`: ``serving`` (a uvicorn thread, for tests),
``serving_process`` (a separate uvicorn process with N workers, for
benchmarks) and ``app_from_env`` (a factory configured by ``LMREG_MOCK_*``).

The modules, each importing only those above it: ``config`` (the knobs) and
``compute`` (tokens, prefill, prefix cache, KV room), ``reply`` (one reply's
tokens, timing and frames), ``saturation`` (slots, slowdown, interrupts,
compute), ``app`` (the routes), ``serve`` (ways to run it).
"""

from .app import create_app
from .compute import prompt_tokens, tokenize
from .config import QUIRKS, MockModelConfig, parse_quirks
from .reply import THINKING_TOKENS, reply_tokens
from .serve import app_from_env, serving, serving_process

__all__ = [
    "QUIRKS",
    "THINKING_TOKENS",
    "MockModelConfig",
    "app_from_env",
    "create_app",
    "parse_quirks",
    "prompt_tokens",
    "reply_tokens",
    "serving",
    "serving_process",
    "tokenize",
]
