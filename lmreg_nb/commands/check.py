"""`lmreg-nb check`: test the school's chat endpoint (conformance, go-live, figures, load test)."""

from __future__ import annotations

import click

__all__ = ["COMMANDS", "check"]


@click.command("check")
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
    type=click.FloatRange(min=0.1, max=3600),
    default=300.0,
    show_default=True,
    help="Stop the load test after this many seconds.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (DESIGN.md).")
@click.option(
    "--registered",
    "registered",
    metavar="NAME",
    help="Check the model registered under this modelName as the platform will call it: "
    "its registryUrl and apiKey (LMREG_MODEL_URL and LMREG_MODEL_API_KEY are not used).",
)
@click.option(
    "--figure",
    "figure_path",
    type=click.Path(dir_okay=False),
    default="lmreg-check.png",
    show_default=True,
    help="Where to save the load-test figure (text output with --requests > 0 only).",
)
def check(
    requests: int,
    concurrency: int,
    max_duration: float,
    as_json: bool,
    figure_path: str,
    registered: str | None,
) -> None:
    """Check the chat endpoint in LMREG_MODEL_URL with LMREG_MODEL_API_KEY and LMREG_MODEL_NAME.

    With --registered NAME, check what is registered under NAME instead. Exit 0
    when every check of severity error passed, 1 otherwise, 2 when a setting is
    missing.
    """
    import json
    import sys

    from ..i18n import _
    from ..probe import check_endpoint, format_report, registered_target
    from ..settings import Settings

    settings = Settings.load()
    also_name = None
    if registered is not None:
        target = registered_target(settings, registered)
        url, key, model, also_name = (
            target.url,
            target.api_key,
            target.model,
            target.registered_name,
        )
    else:
        # Every missing variable in one message (Settings.require checks them together).
        url = settings.require("model_url", "model_api_key", "model_name")
        key = settings.require("model_api_key")
        model = settings.require("model_name")
    report = check_endpoint(
        url,
        key,
        model,
        requests=requests,
        concurrency=concurrency,
        timeout=settings.timeout,
        progress=not as_json and sys.stderr.isatty(),
        max_duration=max_duration,
        also_name=also_name,
    )
    if as_json:
        click.echo(json.dumps(report.to_json()))
    else:
        click.echo(format_report(report))
        fig = report.figure()
        if fig is not None:
            fig.savefig(figure_path, dpi=100)
            click.echo(_("figure: {path}").format(path=figure_path))
    if not report.ok:
        first = report.failed[0]
        click.echo(
            _("error: {name}: {detail}").format(name=first.name, detail=first.detail), err=True
        )
        sys.exit(1)


COMMANDS: list[click.Command] = [check]
