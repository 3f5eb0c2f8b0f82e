"""Option types of the CLI beyond click's own."""

from __future__ import annotations

import math
from typing import Any

import click

__all__ = ["FiniteRange"]


class FiniteRange(click.FloatRange):
    """A :class:`click.FloatRange` that refuses NaN and infinity.

    NaN passes every range comparison (``nan < 0.1`` is False, and so is
    ``nan > 60``), so click's range alone lets ``--duration nan`` through.
    """

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            from ..i18n import _

            self.fail(_("{value} is not a finite number").format(value=value), param, ctx)
        return super().convert(number, param, ctx)

    def _describe_range(self) -> str:
        # click writes "x<=None" for a range without bounds; say nothing instead.
        if self.min is None and self.max is None:
            return ""
        return super()._describe_range()
