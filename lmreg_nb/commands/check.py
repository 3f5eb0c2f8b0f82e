"""`lmreg-nb check`: test the school's chat endpoint (conformance, go-live, figures, load test)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ._endpoint import endpoint_options, endpoint_target
from ._types import FiniteRange
from ._workload import F, context_need_value, workload_options, workload_spec

if TYPE_CHECKING:
    from ..probe.checks.context_window import ContextNeed
    from ..probe.report import EndpointReport

__all__ = ["COMMANDS", "check"]


def workload_options_no_context(command: F) -> F:
    """The workload options; --context-need is check's own (the context-window check)."""
    return workload_options(command, context_need=False)


@click.command("check")
@endpoint_options
@click.option(
    "--requests",
    "-n",
    type=click.IntRange(0, 100_000),
    default=0,
    show_default=True,
    help="Streamed requests of the load test (0: no load test; the summary then "
    "describes the one streamed check request).",
)
@click.option(
    "--concurrency",
    "-c",
    type=click.IntRange(1, 1024),
    default=1,
    show_default=True,
    help="Requests in flight at once during the load test.",
)
@click.option(
    "--duration",
    "max_duration",
    type=FiniteRange(min=0.1, max=3600),
    default=300.0,
    show_default=True,
    help="Stop the load test after this many seconds.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON object, schema: lmreg_nb/schemas/check.schema.json.",
)
@click.option(
    "--registered",
    "registered",
    metavar="NAME",
    help="Check the model registered under this modelName as the platform will call it: "
    "its registryUrl and apiKey (LMREG_MODEL_URL and LMREG_MODEL_API_KEY are not used).",
)
@click.option(
    "--context-need",
    "context_need",
    default="8000",
    show_default=True,
    metavar="TOKENS",
    callback=context_need_value,
    help="Tokens of the longest prompt the course apps send (a long lesson), 1 to 131072: "
    "the context-window check sends a prompt this long.",
)
@workload_options_no_context
@click.option(
    "--plot",
    "--figure",
    "figure_path",
    type=click.Path(dir_okay=False),
    default=None,
    metavar="FILE",
    help="Save the load-test chart (--requests above 0) to FILE, a PNG; no chart without it.",
)
def check(
    url: str | None,
    model: str | None,
    requests: int,
    concurrency: int,
    max_duration: float,
    as_json: bool,
    figure_path: str | None,
    registered: str | None,
    context_need: ContextNeed,
    workload: str,
    lesson_tokens: int,
    max_tokens: int,
) -> None:
    """Check the chat endpoint at URL (default LMREG_MODEL_URL) for the platform.

    The model is --model (default LMREG_MODEL_NAME); the key comes from
    LMREG_MODEL_API_KEY, else a hidden prompt (never an argument). With
    --registered NAME, check what is registered under NAME instead. The
    load test sends the lesson workload (--workload). Exit 0
    when every check of severity error passed, 1 otherwise, 2 when a setting is
    missing.
    """
    import sys

    from ..i18n import _
    from ..probe import check_endpoint
    from ._paths import check_figure_path

    # What the load test sends: checked only when there is one.
    spec = workload_spec(workload, lesson_tokens, max_tokens, context_need) if requests else None
    if figure_path is not None:
        check_figure_path(figure_path, "--plot")  # before any request, not after the load test
    report = check_endpoint(
        endpoint_target(url, model, registered),
        requests=requests,
        concurrency=concurrency,
        progress=not as_json and sys.stderr.isatty(),
        max_duration=max_duration,
        context_need=context_need,
        workload=spec,
    )
    _show(report, as_json, figure_path)
    if not report.ok:
        first = report.failed[0]
        click.echo(
            _("error: {name}: {detail}").format(name=first.name, detail=first.detail), err=True
        )
        sys.exit(1)


def _show(report: EndpointReport, as_json: bool, figure_path: str | None) -> None:
    """The report as one JSON object or as text; its chart saved to ``figure_path`` if asked."""
    import json

    from ._paths import show_chart

    if as_json:
        click.echo(json.dumps(report.to_json()))
    else:
        from ..probe import format_report

        click.echo(format_report(report))
    if figure_path is not None:
        show_chart(report.figure, figure_path, as_json=as_json)


COMMANDS: list[click.Command] = [check]
