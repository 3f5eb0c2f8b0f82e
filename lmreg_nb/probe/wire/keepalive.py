"""Whether a server lets a keep-alive connection carry one more request.

What httpx and browsers respect: ``Connection: close``, an HTTP/1.0 answer
without keep-alive, and the ``Keep-Alive`` header's ``max`` and ``timeout``
(RFC 9112 section 9.3 and the ``Keep-Alive`` header of RFC 2068 19.7.1.1).
"""

from __future__ import annotations

import math
import time

__all__ = ["KeepAlive"]


class KeepAlive:
    """Whether the server lets a connection carry one more chat (RFC 9112 9.3, ``Keep-Alive``).

    ``max=N`` is read the strict way: N answers in all from the first reply
    that says it (some servers count down, some repeat it: either way no more
    are sent); ``timeout=T``: not reused once idle for nearly T seconds.
    """

    def __init__(self) -> None:
        self.uses = 0
        self.most: int | None = None
        self.idle_s: float | None = None
        self.last = 0.0
        self.closing = False

    def answered(self, version: str, headers: dict[str, str]) -> None:
        """Note one answer and what its headers say of the connection's future."""
        self.uses += 1
        self.last = time.perf_counter()
        connection = headers.get("connection", "").lower()
        if "close" in connection or (version == "HTTP/1.0" and "keep-alive" not in connection):
            self.closing = True
        for part in headers.get("keep-alive", "").split(","):
            name, _sep, value = part.strip().partition("=")
            number = _number(value)
            if name.strip().lower() == "max" and number is not None:
                self.most = int(number) if self.most is None else self.most
                self.closing = self.closing or number < 1
            elif name.strip().lower() == "timeout" and number is not None:
                self.idle_s = number

    def allows(self, now: float) -> bool:
        """True when one more chat may go on this connection ``now``."""
        if self.closing or (self.most is not None and self.uses >= self.most):
            return False
        # A margin: the server's idle clock started when it sent the last byte.
        return self.idle_s is None or now - self.last < self.idle_s - min(1.0, self.idle_s / 2)


def _number(value: str) -> float | None:
    try:
        number = float(value.strip().strip('"'))
    except ValueError:
        return None
    return number if number >= 0 and math.isfinite(number) else None
