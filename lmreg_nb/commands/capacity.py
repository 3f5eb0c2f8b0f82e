"""`lmreg-nb capacity`: how many chats at once the school's endpoint serves within an SLO."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ._endpoint import endpoint_options, endpoint_target
from ._types import FiniteRange
from ._workload import workload_options, workload_spec

if TYPE_CHECKING:
    from ..probe.checks.context_window import ContextNeed
    from ..probe.load.capacity import CapacityResult, Progress

__all__ = ["COMMANDS", "capacity"]


@click.command("capacity")
@endpoint_options
@click.option(
    "--slo-ttft-ms",
    type=FiniteRange(min=1, max=600_000),
    default=2000.0,
    show_default=True,
    help="Time to first token (p90) a chat may take, in milliseconds.",
)
@click.option(
    "--slo-itl-ms",
    type=FiniteRange(min=0, max=60_000),
    default=150.0,
    show_default=True,
    help="Time between tokens (p90) a chat may take, in milliseconds: a student's reading "
    "pace (0: no limit).",
)
@click.option(
    "--slo-pause-ms",
    type=FiniteRange(min=0, max=600_000),
    default=2000.0,
    show_default=True,
    help="The longest pause in the middle of a reply (p90 over the replies), in "
    "milliseconds: how long a student waits for the answer to go on (0: no limit).",
)
@click.option(
    "--max-error-rate",
    type=FiniteRange(min=0, max=1, max_open=True),
    default=0.01,
    show_default=True,
    help="Share of requests that may fail (errors, timeouts, cut streams).",
)
@click.option(
    "--max-concurrency",
    type=click.IntRange(1, 1024),
    default=64,
    show_default=True,
    help="The most chats at once to try.",
)
@click.option(
    "--need",
    type=click.IntRange(min=1),
    default=None,
    help="Chats at once you need (e.g. a class size): exit 1 when the capacity is lower.",
)
@click.option(
    "--registered",
    metavar="NAME",
    help="Measure the model registered under this modelName as the platform will call it "
    "(its registryUrl and apiKey; LMREG_MODEL_URL and LMREG_MODEL_API_KEY are not used).",
)
@click.option(
    "--level-seconds",
    type=FiniteRange(min=0, max=60),
    default=0.0,
    show_default=True,
    help="Each level runs at least this long (0: until its verdict is settled, at least "
    "two requests per chat).",
)
@workload_options
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON object, schema: lmreg_nb/schemas/capacity.schema.json.",
)
@click.option(
    "--plot",
    "--figure",
    "figure_path",
    type=click.Path(dir_okay=False),
    default=None,
    metavar="FILE",
    help="Save the capacity chart to FILE, a PNG; no chart without it.",
)
def capacity(
    url: str | None,
    model: str | None,
    slo_ttft_ms: float,
    slo_itl_ms: float | None,
    slo_pause_ms: float | None,
    max_error_rate: float,
    max_concurrency: int,
    need: int | None,
    registered: str | None,
    level_seconds: float,
    workload: str,
    lesson_tokens: int,
    max_tokens: int,
    context_need: ContextNeed,
    as_json: bool,
    figure_path: str | None,
) -> None:
    """Find how many chats at once the chat endpoint at URL serves within the SLO.

    URL defaults to LMREG_MODEL_URL, --model to LMREG_MODEL_NAME; the key comes
    from LMREG_MODEL_API_KEY, else a hidden prompt (never an argument).

    With --need N: N chats at once in a closed loop first, then one level
    above N for the margin (or, when N is not served, a bisection below it).
    Without it: 1, 2, 4, ... chats, then a bisection. Each chat is a student
    in a lesson (--workload lesson): the app's instructions, a shared lesson
    of --lesson-tokens, the student's own questions over 3 turns. A level is
    judged on whole replies at reading pace: the time between tokens and the
    longest pause are measured on the tokens as they arrive, and a level where
    they could not be measured is not within the SLO. Each level ends as soon
    as its verdict is settled; a few minutes at most. Progress goes to stderr.
    Exit 0 when the capacity is at least --need (without it: when one chat
    meets the SLO), 1 otherwise, 2 for a usage or setting error. Ctrl-C
    prints what was measured so far.
    """
    import sys

    from ..probe.load.capacity import SLO, LevelPlan, find_capacity
    from ._paths import check_figure_path

    _check_need(need, max_concurrency)
    spec = workload_spec(workload, lesson_tokens, max_tokens, context_need)
    if figure_path is not None:
        check_figure_path(figure_path, "--plot")  # before the search, not minutes after it
    result = find_capacity(
        endpoint_target(url, model, registered),
        slo=SLO(
            ttft_ms=slo_ttft_ms,
            itl_ms=slo_itl_ms or None,
            max_error_rate=max_error_rate,
            pause_ms=slo_pause_ms or None,
        ),
        max_concurrency=max_concurrency,
        need=need,
        on_progress=None if as_json else _ProgressLine(sys.stderr.isatty()),
        plan=LevelPlan(min_seconds=level_seconds, max_seconds=max(15.0, 5 * level_seconds)),
        workload=spec,
    )
    _show(result, need, as_json, figure_path)
    got = result.capacity.concurrency
    if got < (need or 1) or result.stopped == "interrupted":
        sys.exit(1)


def _check_need(need: int | None, max_concurrency: int) -> None:
    """A usage error when --need is above --max-concurrency (it could never be met)."""
    if need is not None and need > max_concurrency:
        from ..errors import ValidationError
        from ..i18n import _

        # One line and exit 2 (the CLI's handler), like every other usage error of ours.
        raise ValidationError(
            "--need",
            _("{need} is above --max-concurrency {top}: raise --max-concurrency").format(
                need=need, top=max_concurrency
            ),
        )


class _ProgressLine:
    """Progress on stderr: rewritten in place on a terminal, a line every few seconds otherwise."""

    #: Seconds between two "so far" lines when stderr is not a terminal (a log file).
    EVERY_S = 2.0

    def __init__(self, tty: bool) -> None:
        self.tty = tty
        self.shown_at = -self.EVERY_S
        self.width = 0

    def __call__(self, progress: Progress) -> None:
        import time

        from ..probe.text.capacity_text import progress_text

        text = progress_text(progress)
        done = progress.level is not None or progress.concurrency == 0
        start = progress.level is None and progress.requests == 0
        if self.tty:
            # \r and spaces over the previous line; a finished level keeps its line.
            pad = " " * max(0, self.width - len(text))
            click.echo("\r" + text + pad, err=True, nl=done)
            self.width = 0 if done else len(text)
            return
        now = time.monotonic()
        if done or start or now - self.shown_at >= self.EVERY_S:
            self.shown_at = now
            click.echo(text, err=True)


def _show(result: CapacityResult, need: int | None, as_json: bool, figure_path: str | None) -> None:
    """The result as one JSON object or as text; its chart saved to ``figure_path`` if asked."""
    import json

    from ._paths import show_chart

    if as_json:
        click.echo(json.dumps(result.to_json()))
    else:
        from ..probe.text.capacity_text import format_capacity

        click.echo(format_capacity(result, need))
    if figure_path is not None and result.stopped != "unreachable":
        from ..probe.text.plots import capacity_figure

        show_chart(
            lambda: capacity_figure(result) if result.levels else None, figure_path, as_json=as_json
        )


COMMANDS: list[click.Command] = [capacity]
