"""The `lmreg-nb` command: parses arguments and calls the library.

Exit codes: 0 success, 1 the API or a required check failed, 2 usage or
configuration; 130 / 143 when interrupted (SIGINT / SIGTERM). An expected
failure prints one line, never a traceback.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from typing import Any

import click

from .errors import ConfigurationError, LmregError, ValidationError

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class _Context(click.Context):
    """Click's context, its help written in the language's punctuation.

    A command's extra arguments are kept (not refused by click) and refused at
    :meth:`invoke` with each shown masked: click would print them whole, and the extra
    argument is often the apiKey (`lmreg-nb check URL KEY`).
    """

    def __init__(self, command: click.Command, *args: Any, **kwargs: Any) -> None:
        super().__init__(command, *args, **kwargs)
        self._refuse_extras = not isinstance(command, click.Group) and not self.allow_extra_args
        if self._refuse_extras:
            self.allow_extra_args = True

    def make_formatter(self) -> click.HelpFormatter:
        from .commands._i18n import HelpFormatter

        return HelpFormatter(width=self.terminal_width, max_width=self.max_content_width)

    def invoke(self, callback: Any, /, *args: Any, **kwargs: Any) -> Any:
        if self._refuse_extras and self.args and not self.resilient_parsing:
            self.fail(_extra_arguments(self.command.name or "", self.args))
        return super().invoke(callback, *args, **kwargs)


#: Commands that take the chat endpoint's address as their argument: the key is the
#: extra argument people give next to it.
_ADDRESS_COMMANDS = frozenset({"check", "capacity"})


def _extra_arguments(command: str, extras: list[str]) -> str:
    """The usage error for extra arguments, each shown as its last 4 characters."""
    from .i18n import ngettext
    from .secret import mask

    shown = " ".join(mask(arg) for arg in extras)
    if command in _ADDRESS_COMMANDS:
        return ngettext(
            "{command} takes one address (URL); got an extra argument ({args}). The key is "
            "never an argument (it would stay in the shell history): set LMREG_MODEL_API_KEY "
            "in the environment or .env, or leave it unset to be asked for it",
            "{command} takes one address (URL); got extra arguments ({args}). The key is "
            "never an argument (it would stay in the shell history): set LMREG_MODEL_API_KEY "
            "in the environment or .env, or leave it unset to be asked for it",
            len(extras),
        ).format(command=command, args=shown)
    return ngettext(
        "Got unexpected extra argument ({args})",
        "Got unexpected extra arguments ({args})",
        len(extras),
    ).format(args=shown)


class _Group(click.Group):
    """Turns toolkit errors into one line on stderr and the contract's exit code.

    Everything the command writes goes through :func:`~lmreg_nb.terminal.terminal_streams`:
    text from a platform or a chat endpoint never steers the terminal, and a
    character the terminal's encoding lacks is escaped, not a traceback.
    """

    context_class = _Context

    def main(self, *args: Any, **kwargs: Any) -> Any:
        from .terminal import terminal_streams

        try:
            with terminal_streams():
                return super().main(*args, **kwargs)
        except OSError as exc:
            # A write that failed (output on /dev/full, a full disk, a folder under a
            # file) that no command turned into its own message: one line, not a traceback.
            _os_error(exc)
            sys.exit(EXIT_FAILED)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # Help texts in the language of the environment; --lang sets them again.
        from .commands._i18n import translate_help

        if ctx.parent is None:
            from .i18n import set_language

            # --help may come before --lang's callback; the callback reuses what was found.
            ctx.meta[_ENV_LANGUAGE] = _env_file_language()
            set_language(ctx.meta[_ENV_LANGUAGE])
        translate_help(self)
        if ctx.parent is None:
            _refuse_undecodable(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        from .i18n import _

        _remove_stale_runs()
        try:
            return super().invoke(ctx)
        except (ConfigurationError, ValidationError) as exc:
            # A plan with several mistakes: every one at once, one line each.
            for message in getattr(exc, "problems", None) or [exc]:
                click.echo(_("error: {message}").format(message=message), err=True)
            sys.exit(EXIT_USAGE)
        except LmregError as exc:
            click.echo(_("error: {message}").format(message=exc), err=True)
            sys.exit(EXIT_FAILED)
        except Exception as exc:
            if not _is_invalid_url(exc):
                raise
            # A URL our checks let through but httpx cannot parse: a configuration problem.
            click.echo(_("error: {message}").format(message=_invalid_url_message(exc)), err=True)
            sys.exit(EXIT_USAGE)
        except BaseException as exc:
            if not _is_interrupted(exc):
                raise
            # SIGTERM / SIGINT during a run (runner.runs.Interrupted): stopped, cleaned up.
            click.echo(_("stopped: {reason}").format(reason=exc.reason), err=True)  # type: ignore[attr-defined]
            sys.exit(128 + exc.signum)  # type: ignore[attr-defined]


def _refuse_undecodable(args: list[str]) -> None:
    """Exit 2 with one line when an argument holds bytes that are not UTF-8.

    Python keeps such bytes as lone surrogates, and the first print, JSON or HTTP
    use of the value is a traceback. The value itself is not shown (a --notify URL
    holds a password): the option it belongs to is named.
    """
    from .i18n import _, set_language

    lang = args[args.index("--lang") + 1 :][:1] if "--lang" in args else []
    if lang and lang[0].lower() in ("zh-cn", "en"):
        set_language(lang[0])  # the line below in the language asked for
    for n, arg in enumerate(args):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            before = args[n - 1] if n else ""
            if arg.startswith("--"):
                where = arg.partition("=")[0]
            elif before.startswith("-") and "=" not in before:
                where = before
            else:
                where = _("argument {n}").format(n=n + 1)
            where = where.encode("utf-8", "backslashreplace").decode("ascii", "replace")
            click.echo(
                _("error: {message}").format(
                    message=_(
                        "{where} holds bytes that are not UTF-8 text: type it again as plain text"
                    ).format(where=where)
                ),
                err=True,
            )
            sys.exit(EXIT_USAGE)


#: The run folders' prefix (runner.runs.RUN_PREFIX, which a test holds equal): the
#: start of a command looks for them without importing the runner.
_RUN_PREFIX = "lmreg-run-"


def _remove_stale_runs() -> None:
    """A run or demo killed by SIGKILL left a folder (a token cache, an unscrubbed
    notebook, a sandbox's pid): the next start of any command clears it, not only
    the next run. Never stops the command itself.

    Only a run's folder in the temporary folder brings in the runner (and the record
    modules under it) to judge and clear it: a command with none there (`check`,
    `--help`) imports neither. A run clears stale folders itself too (``run_folder``).
    """
    import logging
    import tempfile
    from pathlib import Path

    try:
        if next(Path(tempfile.gettempdir()).glob(_RUN_PREFIX + "*"), None) is None:
            return
        from .runner.runs import remove_stale_runs

        remove_stale_runs()
    except Exception as exc:  # a cleanup of what others left must not fail this command
        logging.getLogger("lmreg_nb").info("stale run folders not checked: %s", exc)


def _is_interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is the runner's Interrupted (only a run, which imported it, raises it)."""
    runs = sys.modules.get(f"{__package__}.runner.runs")
    return runs is not None and isinstance(exc, runs.Interrupted)


def _is_invalid_url(exc: BaseException) -> bool:
    httpx = sys.modules.get("httpx")  # not imported: the error cannot be one of its own
    return httpx is not None and isinstance(exc, httpx.InvalidURL)


def _invalid_url_message(exc: BaseException) -> str:
    """One line for an httpx.InvalidURL, masked (a URL may carry a key in its query)."""
    from .i18n import _
    from .secret import mask_text
    from .settings import Settings

    why = " ".join(str(exc).split())[:300]
    # Broken settings: no secret to mask (the text names a host, not a key).
    with contextlib.suppress(LmregError):
        why = mask_text(why, Settings.load().secret_values())
    return _(
        "not a usable address ({why}); check LMREG_BASE_URL, LMREG_MODEL_URL or the "
        "registered registryUrl"
    ).format(why=why)


def _os_error(exc: OSError) -> None:
    """Say what failed on stderr; stdout, when it is what failed, goes to /dev/null."""
    import os

    from .i18n import _
    from .terminal import terminal_text

    reason = exc.strerror or str(exc)
    message = terminal_text(f"{reason}: {exc.filename}" if exc.filename is not None else reason)
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is sys.stderr:
                stream.write(_("error: {message}").format(message=message) + "\n")
            stream.flush()
        except (OSError, ValueError):
            # Python flushes the standard streams at exit: that must not fail again.
            with contextlib.suppress(OSError, ValueError, AttributeError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())


def _set_language(ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    # Eager, so the help texts and every message after it use the chosen language.
    from .i18n import set_language

    if value is not None or not ctx.resilient_parsing:
        root = ctx.find_root()
        found = root.meta[_ENV_LANGUAGE] if _ENV_LANGUAGE in root.meta else _env_file_language()
        set_language(value or found)
        from .commands._i18n import translate_help

        translate_help(root.command)
    return value


#: ``ctx.meta`` key of the language found in .env when the command line was parsed.
_ENV_LANGUAGE = "lmreg_nb.env_language"


def _env_file_language() -> str | None:
    """LMREG_LANG from the .env file when the environment has none (the settings' order:
    the environment, then .env); None lets :func:`~lmreg_nb.i18n.set_language` decide."""
    import os

    if os.environ.get("LMREG_LANG"):
        return None
    from .settings import Settings

    # Broken settings are the command's to report, in the language found without them;
    # and so are its warnings (a .env not read): said once, by the command, not here too.
    quiet = logging.getLogger("lmreg_nb")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        with contextlib.suppress(LmregError):
            return Settings.load().lang
    finally:
        quiet.setLevel(level)
    return None


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
    commands = list(main.commands.values())
    while commands:
        command = commands.pop()
        command.context_class = _Context
        if isinstance(command, click.Group):
            commands.extend(command.commands.values())


_register()
