"""Commands of this area (placeholder: being written)."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
