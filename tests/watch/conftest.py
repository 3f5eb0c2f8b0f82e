"""The watch's fixtures; they live in watch_helpers.py (real loopback servers) and
watch_fakes.py (in-process fleets), module names no other folder uses."""

from __future__ import annotations

from watch_fakes import make_fleet
from watch_helpers import account, school_model, smtp, webhook

__all__ = ["account", "make_fleet", "school_model", "smtp", "webhook"]
