"""The mock school model the capacity tests search, and the fields a level must carry."""

from __future__ import annotations

from lmreg_nb.sandbox.school_model import MockModelConfig

__all__ = ["ITL", "KEY", "LEVEL_KEYS", "TOKENS", "TTFT", "mock"]

KEY = "sk-capacity-test-0123456789abcdef"
TTFT, ITL, TOKENS = 20.0, 10.0, 30
#: The capacity contract's level object, key for key.
LEVEL_KEYS = {
    "concurrency",
    "requests",
    "errors",
    "ttft_ms",
    "itl_ms",
    "latency_ms",
    "requests_per_s",
    "output_tokens_per_s",
    "longest_pause_ms",
    "meets_slo",
}


def mock(**knobs: object) -> MockModelConfig:
    """The mock with ``knobs`` over its first-token time, pace, length and key."""
    base: dict = {"api_key": KEY, "ttft_ms": TTFT, "itl_ms": ITL, "tokens": TOKENS}
    return MockModelConfig(**{**base, **knobs})
