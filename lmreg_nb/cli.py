"""The `lmreg-nb` command: parses arguments and calls the library.

Exit codes: 0 success, 1 the API or a required check failed, 2 usage or
configuration; 130 / 143 when interrupted (SIGINT / SIGTERM). An expected
failure prints one line, never a traceback.
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

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # Help texts in the language of the environment; --lang sets them again.
        from .commands._i18n import translate_help

        translate_help(self)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        from .i18n import _
        from .runs import Interrupted

        try:
            return super().invoke(ctx)
        except (ConfigurationError, ValidationError) as exc:
            click.echo(_("error: {message}").format(message=exc), err=True)
            sys.exit(EXIT_USAGE)
        except LmregError as exc:
            click.echo(_("error: {message}").format(message=exc), err=True)
            sys.exit(EXIT_FAILED)
        except Interrupted as exc:
            click.echo(_("stopped: {reason}").format(reason=exc.reason), err=True)
            sys.exit(128 + exc.signum)


def _set_language(ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    # Eager, so the help texts and every message after it use the chosen language.
    from .i18n import set_language

    if value is not None or not ctx.resilient_parsing:
        set_language(value)
        from .commands._i18n import translate_help

        translate_help(ctx.find_root().command)
    return value


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="lmreg_nb")
@click.option(
    "--lang", type=click.Choice(["zh-CN", "en"], case_sensitive=False), default=None,
    is_eager=True, expose_value=False, callback=_set_language,
    metavar="[zh-CN|en]",  # click would show the choices lower-cased
    help="Language of every message (default: LMREG_LANG, else the locale).",
)  # fmt: skip
def main() -> None:
    """Register a school's self-hosted model with the platform, and prove it works."""


def _register() -> None:
    # Command modules import only click at module level, so `--help` stays fast.
    from .commands import batch, capacity, check, notebooks, registry, runs, sandbox, watch

    for module in (sandbox, registry, check, capacity, runs, batch, notebooks, watch):
        for command in module.COMMANDS:
            main.add_command(command)


_register()
