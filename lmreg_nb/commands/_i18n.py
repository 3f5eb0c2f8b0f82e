"""The CLI's help and click's own words ("Usage:", "Missing option") through the catalog.

Click reads help texts once, at import (docstrings, ``help=``); ``translate_help``
swaps them for the current language before help is shown, keeping the English
originals to translate again when the language changes. ``scripts/i18n``
extracts the same texts by walking the command tree (``help_texts``), so
commands keep plain docstrings. Click's own messages go through the catalog too:
its modules call ``gettext.gettext``, which we point at ours for this process.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterator

import click

from lmreg_nb.i18n import N_, _, current_language, ngettext, pgettext

__all__ = ["CLICK_TEXTS", "HelpFormatter", "help_texts", "translate_click", "translate_help"]

#: Click's messages that a person of the CLI can meet (extracted from click 8).
CLICK_TEXTS = (
    N_("Usage:"),
    N_("Options"),
    N_("Commands"),
    N_("Show this message and exit."),
    N_("Show the version and exit."),
    N_("Aborted!"),
    N_("Missing command."),
    N_("env var: {var}"),
    N_("default: {default}"),
    N_("required"),
    N_("Error: {message}"),
    N_("Try '{command} {option}' for help."),
    N_("Invalid value: {message}"),
    N_("Invalid value for {param_hint}: {message}"),
    N_("Missing argument"),
    N_("Missing option"),
    N_("Missing parameter"),
    N_("Missing {param_type}"),
    N_("Missing parameter: {param_name}"),
    N_("No such option {name!r}."),
    N_("No such command {name!r}."),
    N_("unknown error"),
    N_("Could not open file {filename!r}: {message}"),
    N_("Option {name!r} does not take a value."),
    N_("Argument {name!r} takes {nargs} values."),
    N_("Choose from:\n\t{choices}"),
    N_("{value!r} is not a valid {number_type}."),
    N_("{value} is not in the range {range}."),
    N_("{value!r} is not a valid boolean. Recognized values: {states}"),
    N_("file"),
    N_("directory"),
    N_("path"),
    N_("{name} {filename!r} does not exist."),
    N_("{name} {filename!r} is a file."),
    N_("{name} {filename!r} is a directory."),
    N_("{name} {filename!r} is not readable."),
    N_("{name} {filename!r} is not writable."),
    N_("Do you want to continue?"),
    N_("Error: invalid input"),
    N_("Repeat for confirmation"),
    N_("Error: The two entered values do not match."),
)


class HelpFormatter(click.HelpFormatter):
    """Click's help and usage lines in the language's punctuation ("用法：", "选项：").

    Click appends an ASCII colon to each heading and a space after "Usage:"; a
    full-width colon carries its own space.
    """

    def write_usage(self, prog: str, args: str = "", prefix: str | None = None) -> None:
        if prefix is None:
            usage = _("Usage:")
            prefix = usage if usage.endswith("\uff1a") else usage + " "
        super().write_usage(prog, args, prefix)

    def write_heading(self, heading: str) -> None:
        line = pgettext("help heading", "{heading}:").format(heading=heading)
        self.write(f"{'':>{self.current_indent}}{line}\n")


def _click_plural_texts() -> None:
    # Never called: marks click's plural messages for extraction.
    ngettext("Got unexpected extra argument ({args})", "Got unexpected extra arguments ({args})", 1)
    ngettext("Did you mean {possibility}?", "(Did you mean one of: {possibilities}?)", 1)
    ngettext(
        "Option {name!r} requires an argument.", "Option {name!r} requires {nargs} arguments.", 1
    )
    ngettext("{value!r} is not {choice}.", "{value!r} is not one of {choices}.", 1)


_CLICK_MODULES = (
    "core",
    "decorators",
    "exceptions",
    "formatting",
    "parser",
    "shell_completion",
    "termui",
    "types",
    "utils",
)


def translate_click() -> None:
    """Point click's ``gettext`` / ``ngettext`` at the toolkit's catalog (this process only)."""
    for name in _CLICK_MODULES:
        module = sys.modules.get(f"click.{name}")
        if module is None:
            continue
        if hasattr(module, "_"):
            module._ = _  # type: ignore[attr-defined]
        if hasattr(module, "ngettext"):
            module.ngettext = ngettext  # type: ignore[attr-defined]


def _source_help(text: str | None) -> str | None:
    # What click shows: the cleaned text up to a form feed.
    return inspect.cleandoc(text).partition("\f")[0] if text else None


def _objects(command: click.Command) -> Iterator[click.Command | click.Parameter]:
    yield command
    yield from command.params
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            yield from _objects(sub)


def _originals(obj: click.Command | click.Parameter) -> dict[str, str | None]:
    saved: dict[str, str | None] | None = obj.__dict__.get("_lmreg_en")
    if saved is None:
        saved = {attr: _source_help(getattr(obj, attr, None)) for attr in ("help", "short_help")}
        obj.__dict__["_lmreg_en"] = saved
    return saved


def help_texts(command: click.Command) -> Iterator[tuple[str, str]]:
    """Every help text of ``command`` and its subcommands, with the file that defines it."""
    where = command_file(command)
    objects: list[click.Command | click.Parameter] = [command, *command.params]
    for obj in objects:
        for text in _originals(obj).values():
            if text:
                yield text, where
    short = _first_paragraph(_originals(command)["help"])
    if short:
        yield short, where
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            yield from help_texts(sub)


def command_file(command: click.Command) -> str:
    """The source file of a command's callback ("?" when unknown)."""
    if command.callback is None:
        return "?"
    try:
        return inspect.getsourcefile(command.callback) or "?"
    except TypeError:  # a builtin or a C callable
        return "?"


def _first_paragraph(text: str | None) -> str | None:
    # The command list shows it; a text of its own in the catalog, so it is never cut
    # in the middle of a translation (click cuts at ". " and spaces, which Chinese lacks).
    if not text or "\n\n" not in text:
        return None
    return text.split("\n\n", 1)[0].replace("\n", " ")


def translate_help(command: click.Command) -> None:
    """Set the help texts of ``command``'s tree to the current language."""
    translate_click()
    english = current_language() == "en"
    for obj in _objects(command):
        saved = _originals(obj)
        help_text, short = saved["help"], saved["short_help"]
        if hasattr(obj, "help"):
            obj.help = _(help_text) if help_text else help_text
        if isinstance(obj, click.Command):
            # Click creates the help option once, in the language of that moment.
            cached = getattr(obj, "_help_option", None)
            if isinstance(cached, click.Option):
                cached.help = _("Show this message and exit.")
            first = short or _first_paragraph(help_text)
            if short or (first and not english):
                obj.short_help = _(first) if first else None
            elif help_text and not english:
                obj.short_help = obj.help
            else:
                obj.short_help = None
