"""The watch's fixtures; they live in watch_helpers.py (a module name no other folder uses)."""

from __future__ import annotations

from watch_helpers import account, school_model, smtp, webhook

__all__ = ["account", "school_model", "smtp", "webhook"]
