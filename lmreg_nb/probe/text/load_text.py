"""What a load test or a capacity search should say besides its figures, in words.

The figures are typed (:class:`~lmreg_nb.probe.load.fixed.LoadResult`, the capacity's
levels); these sentences say, once each, what a person needs to read them right: the
client's own stalls that could have moved a percentile (:class:`~lmreg_nb.probe.load.busy.Skew`),
usage counts that were not believed, requests the server got twice.
"""

from __future__ import annotations

from typing import Protocol

from ...i18n import _, ngettext

__all__ = ["busy_sentence", "load_notes", "resent_sentence", "usage_sentence"]


class _Skew(Protocol):
    @property
    def moved(self) -> bool: ...
    @property
    def worst_ms(self) -> float: ...


class _Load(Protocol):
    @property
    def skew(self) -> _Skew: ...
    @property
    def resent(self) -> int: ...
    @property
    def usage_disbelieved(self) -> int: ...


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
    """Said once when usage.completion_tokens claimed more than the chunks could carry."""
    if not disbelieved:
        return None
    return ngettext(
        "{n} reply claimed more tokens in usage.completion_tokens than four per chunk it"
        " streamed: not believed, its tokens are counted from its chunks.",
        "{n} replies claimed more tokens in usage.completion_tokens than four per chunk"
        " they streamed: not believed, their tokens are counted from their chunks.",
        disbelieved,
    ).format(n=disbelieved)


def resent_sentence(resent: int) -> str | None:
    """Said once when requests were sent twice (the server did their work twice)."""
    if not resent:
        return None
    return ngettext(
        "{n} request was sent twice: the server closed a kept-alive connection under it,"
        " and did its work twice.",
        "{n} requests were sent twice: the server closed kept-alive connections under"
        " them, and did their work twice.",
        resent,
    ).format(n=resent)


def load_notes(load: _Load) -> list[str]:
    """The load test's sentences beside its figures (none when there is nothing to say).

    The client's stalls are said once for the whole check, by its report
    (:func:`~lmreg_nb.probe.text.client_text.client_sentence`), not again here.
    """
    found = [usage_sentence(load.usage_disbelieved), resent_sentence(load.resent)]
    return [s for s in found if s]
