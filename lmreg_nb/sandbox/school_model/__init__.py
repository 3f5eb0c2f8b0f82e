"""The mock school model (see :mod:`.app` for what it serves and its quirks)."""

from .app import QUIRKS, MockModelConfig, create_app, parse_quirks
from .compute import prompt_tokens, tokenize
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
