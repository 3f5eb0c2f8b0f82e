"""The watch's fixtures; they live in watch_helpers.py (the platform, the school model and
the alert targets, all in-process) and watch_fakes.py (fleets of listings), module names
no other folder uses."""

from __future__ import annotations

from watch_fakes import make_fleet
from watch_helpers import account, platform, school_model, smtp, webhook

__all__ = ["account", "make_fleet", "platform", "school_model", "smtp", "webhook"]
