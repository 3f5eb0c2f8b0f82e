"""How long the registry client waits before a retry: Retry-After, or backoff with jitter."""

from __future__ import annotations

import random

__all__ = ["BACKOFF_BASE_S", "BACKOFF_CAP_S", "RETRY_AFTER_CAP_S", "backoff_delay"]

BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 8.0
#: The longest Retry-After honoured; a server asking for more gets its error at once
#: (waiting a part of it would only be refused again, and a command must not hang).
RETRY_AFTER_CAP_S = 5.0


def backoff_delay(attempt: int, retry_after: float | None = None) -> float:
    """Seconds to wait before retry number ``attempt + 1``.

    Retry-After wins when given (capped); otherwise capped exponential backoff
    with jitter, so clients that failed together do not retry together.
    """
    if retry_after is not None and retry_after >= 0:
        return min(retry_after, RETRY_AFTER_CAP_S)
    delay = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2**attempt)
    return delay * (0.5 + random.random() / 2)  # jitter, not crypto
