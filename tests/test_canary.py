"""The leak detector's old address: the canary tests moved to tests/commands/test_canary_leaks.py
and the detector to tests/leaks.py. Tests not yet moved import it from here (``from
test_canary import leaks_in``); issue 44's later round points them at ``leaks``."""

from __future__ import annotations

from leaks import CANARY_KEY, WINDOW, leaks_in, secret_forms

__all__ = ["CANARY_KEY", "WINDOW", "leaks_in", "secret_forms"]
