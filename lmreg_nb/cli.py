"""The `lmreg-nb` command: parses arguments and calls the library.

Exit codes: 0 success, 1 the API or a required check failed, 2 usage or
configuration. An expected failure prints one line, never a traceback.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from .errors import ConfigurationError, LmregError, ValidationError

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class _Group(click.Group):
    """Turns toolkit errors into one line on stderr and the contract's exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (ConfigurationError, ValidationError) as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(EXIT_USAGE)
        except LmregError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(EXIT_FAILED)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="lmreg_nb")
def main() -> None:
    """Register a school's self-hosted model with the platform, and prove it works."""


def _register() -> None:
    # Command modules import only click at module level, so `--help` stays fast.
    from .commands import batch, check, registry, runs, sandbox

    for module in (sandbox, registry, check, runs, batch):
        for command in module.COMMANDS:
            main.add_command(command)


_register()
