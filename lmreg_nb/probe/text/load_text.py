"""What a load test or a capacity search should say besides its figures, in words.

The figures are typed (:class:`~lmreg_nb.probe.load.fixed.LoadResult`, the capacity's
levels); these sentences say, once each, what a person needs to read them right: the
client's own stalls that could have moved a percentile (:class:`~lmreg_nb.probe.load.busy.Skew`),
usage counts that were not believed, requests the server got twice.
"""

from __future__ import annotations

from typing import Protocol

from ...i18n import _
from .checks import note

__all__ = ["busy_sentence", "resent_sentence", "usage_sentence"]


class _Skew(Protocol):
    @property
    def moved(self) -> bool: ...
    @property
    def worst_ms(self) -> float: ...


def busy_sentence(skew: _Skew) -> str | None:
    """The one sentence when the client's stalls could have moved a percentile past its
    margin (None: they could not)."""
    if not skew.moved:
        return None
    return _(
        "Measured from a busy machine: first-token times may read up to {seconds} s longer"
        " than the server's."
    ).format(seconds=f"{max(skew.worst_ms, 100.0) / 1000:.1f}")


def usage_sentence(disbelieved: int) -> str | None:
    """Said once when usage.completion_tokens claimed more than the chunks could carry
    (the load test's declared note: one sentence, one catalog entry)."""
    return note("load-test", "disbelieved", disbelieved)


def resent_sentence(resent: int) -> str | None:
    """Said once when requests were sent twice (the server may have done their work twice:
    the client cannot tell whether it read the request before it closed the connection)."""
    return note("load-test", "resent", resent)
