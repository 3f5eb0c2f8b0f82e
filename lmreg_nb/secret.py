"""A string that never shows itself: appSecret, token and apiKey."""

from __future__ import annotations

__all__ = ["Secret", "mask"]


def mask(value: str | None) -> str:
    """Show only the last 4 characters (``…a1b2``); short values show nothing."""
    if not value:
        return "(not set)"
    # A value of 8 characters or fewer would be half revealed by its tail.
    return "…" + value[-4:] if len(value) > 8 else "…"


class Secret:
    """Holds a secret; ``repr``, ``str`` and HTML show only its last 4 characters.

    Call :meth:`reveal` at the one place that must send it (a header, a body).
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if isinstance(value, Secret):
            value = value.reveal()
        if not isinstance(value, str):
            raise TypeError("Secret takes a str")
        self._value = value

    def reveal(self) -> str:
        """The plain value, for the request that needs it."""
        return self._value

    @property
    def masked(self) -> str:
        """The masked form, e.g. ``…a1b2``."""
        return mask(self._value)

    def __repr__(self) -> str:
        return f"Secret('{self.masked}')"

    def __str__(self) -> str:
        return self.masked

    def _repr_html_(self) -> str:
        return f"<code>{self.masked}</code>"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Secret):
            return self._value == other._value
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._value)

    def __bool__(self) -> bool:
        return bool(self._value)

    def __copy__(self) -> Secret:
        # Immutable: a copy is the same object (and copy.copy must not go through pickling).
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> Secret:
        # dataclasses.asdict and copy.deepcopy reach here; sharing is safe, pickling is not.
        return self

    def __reduce__(self) -> tuple[object, ...]:
        # Pickling would copy the plain value into whatever stores it.
        raise TypeError("a Secret cannot be pickled")
