"""Names from a plan or a platform as every view of the watch shows them: one line, capped."""

from __future__ import annotations

from urllib.parse import unquote

from ..secret import Masker
from ..terminal import MAX_NAME
from ..terminal import shown_name as _one_rule

__all__ = ["MAX_NAME", "shown_address", "shown_name"]


def shown_name(name: str, mask: Masker | None = None) -> str:
    """``name`` made safe for every view: known secrets masked, one line, capped.

    Control, bidi and zero-width characters are made visible (the one rule for
    names, :func:`lmreg_nb.terminal.shown_name`, after the secrets are masked):
    a CR LF cannot forge a log line or a mail header, a U+202E cannot turn a name
    around on the status page; 100,000 characters cost no view a second. ``mask``:
    the secrets the name must not show (a model named after its own apiKey).
    """
    flat = " ".join(name[: MAX_NAME * 4].split())
    if mask is not None:
        flat = mask(flat)
    return _one_rule(flat, limit=MAX_NAME)


def shown_address(url: str, mask: Masker) -> str:
    """A notification URL as a person reads it: secrets masked, ``%40`` as ``@``."""
    return mask(unquote(mask(url)))
