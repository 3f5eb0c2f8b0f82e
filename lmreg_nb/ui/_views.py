"""Moved to :mod:`lmreg_nb.display` (display objects are not widgets); kept for old imports."""

from __future__ import annotations

from ..display import FigureView, Outcome, Table

__all__ = ["FigureView", "Outcome", "Table"]
