"""The workload options that `capacity` and `check` share (docs/reference.md: the workload).

Each value is checked once, by the library's own types (``ContextNeed``,
``WorkloadSpec``), which the command builds before it asks for the key: a bad
value is one line naming the option (exit 2) and no request is sent; the run
takes the typed values as checked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from ..probe.checks.context_window import ContextNeed
    from ..probe.load.workload import WorkloadSpec

__all__ = ["context_need_value", "workload_options", "workload_spec"]

F = TypeVar("F", bound=Callable[..., Any])


def context_need_value(_ctx: click.Context, _param: click.Parameter, value: str) -> ContextNeed:
    """--context-need as checked tokens; a bad value is one line naming the option (exit 2)."""
    from ..errors import ValidationError
    from ..probe.checks.context_window import ContextNeed

    try:
        return ContextNeed(value)
    except ValidationError as exc:
        raise ValidationError("--context-need", exc.reason) from None


def workload_options(command: F, *, context_need: bool = True) -> F:
    """Add --workload, --lesson-tokens, --max-tokens (and --context-need) to ``command``."""
    options = [
        click.option(
            "--workload",
            type=click.Choice(["lesson", "short"]),
            metavar="NAME",
            default="lesson",
            show_default=True,
            help="What each chat sends: lesson (the app's instructions, a lesson shared by the "
            "class, each student's questions over 3 turns) or short (one short question: a "
            "quick look at the interface, never a class's answer).",
        ),
        # Plain integers here: the workload's own check names the option (workload_spec).
        click.option(
            "--lesson-tokens",
            type=int,
            default=1500,
            show_default=True,
            help="Tokens of the lesson text the whole class shares (the server's tokens), "
            "1 to 100000.",
        ),
        click.option(
            "--max-tokens",
            type=int,
            default=300,
            show_default=True,
            help="The longest reply each request asks for, in tokens, 1 to 32768.",
        ),
    ]
    if context_need:
        options.append(
            click.option(
                "--context-need",
                "context_need",
                default="8000",
                show_default=True,
                metavar="TOKENS",
                callback=context_need_value,
                help="Tokens of the longest prompt the course apps send, 1 to 131072: no "
                "prompt, history included, is longer with its reply.",
            )
        )
    for option in reversed(options):
        command = option(command)
    return command


def workload_spec(
    name: str, lesson_tokens: int, max_tokens: int, context_need: ContextNeed
) -> WorkloadSpec:
    """The options as a spec (checked as it is made); a bad value, or a lesson too long for
    the context, is a usage error naming the option."""
    from ..errors import ValidationError
    from ..probe.load.workload import WorkloadSpec

    try:
        return WorkloadSpec(
            "lesson" if name == "lesson" else "short", lesson_tokens, max_tokens, context_need
        )
    except ValidationError as exc:
        raise ValidationError("--" + exc.field.replace("_", "-"), exc.reason) from None
