"""`lmreg-nb watch`: call every registered model each round; alert when one is down."""

from __future__ import annotations

from pathlib import Path

import click

from ._types import FiniteRange

__all__ = ["COMMANDS", "watch"]

_STATE_HELP = (
    "SQLite state file, created 0600 (it names models and hosts) "
    "[default: $XDG_DATA_HOME/lmreg_nb/watch.sqlite3]; its page, NAME-status.html, is "
    "written beside it after each round."
)


@click.command("watch")
@click.option(
    "--interval",
    type=FiniteRange(),  # NaN and infinity refused here; 0 or less by the watcher
    default=60.0,
    show_default=True,
    help="Seconds from the start of one round to the start of the next (1 or more).",
)
@click.option(
    "--fail-after",
    type=int,
    default=3,
    show_default=True,
    help="Failed rounds in a row before a model is down and the alert goes out.",
)
@click.option(
    "--notify",
    "notify",
    multiple=True,
    metavar="URL",
    help="Where alerts go: an Apprise URL (mailtos://, dingtalk://, wecombot://, feishu://, "
    "json://...; repeatable). Default: LMREG_NOTIFY. The URLs hold secrets and a command line "
    "is visible to other users: prefer LMREG_NOTIFY.",
)
@click.option("--state", "state", type=click.Path(path_type=Path), help=_STATE_HELP)
@click.option(
    "--rounds",
    type=int,
    default=None,
    help="Stop after this many rounds: exit 0 when every model is up, 1 when one is down "
    "or the models of a school cannot be read.",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Serve Prometheus metrics on 127.0.0.1 at this port (0: any free port).",
)
@click.option(
    "--school",
    default="",
    help="The school's name in alerts [default: the host of LMREG_BASE_URL].",
)
@click.option(
    "--concurrency",
    type=int,
    default=32,
    show_default=True,
    help="Models called at once in a round.",
)
@click.option(
    "--plan",
    "plan",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Watch every school of a batch plan (run_id, env_file, school, contact_email, lang...), "
    "each with its own account.",
)
@click.option(
    "--mail",
    "mail",
    default=None,
    metavar="URL",
    help="With --plan: the provider's mail sender, an Apprise mailtos:// URL without a "
    "recipient; each school's alerts go by it to its contact_email. Default: "
    "LMREG_NOTIFY_MAIL (prefer it: the URL holds a password).",
)
@click.option(
    "--no-school-mail",
    is_flag=True,
    help="With --plan: mail no school's contact; every alert goes to the provider's own "
    "targets only (--notify, LMREG_NOTIFY).",
)
@click.option(
    "--allow-private",
    is_flag=True,
    default=None,
    help="Call models registered at loopback or private addresses too (rehearsals on the "
    "sandbox); the platform cannot reach them. Default: LMREG_ALLOW_PRIVATE=1.",
)
def watch(
    interval: float,
    fail_after: int,
    notify: tuple[str, ...],
    state: Path | None,
    rounds: int | None,
    metrics_port: int | None,
    school: str,
    concurrency: int,
    plan: Path | None,
    mail: str | None,
    no_school_mail: bool,
    allow_private: bool | None,
) -> None:
    """Watch every registered model as the platform calls it, and alert the school's contact.

    Each round reads the account's models (query-models) and sends each one short streamed
    chat with its registryUrl and apiKey. After --fail-after failed rounds in a row one alert
    goes to every target; the first passing round after that sends one recovery. Runs until
    SIGINT or SIGTERM (exit 0), or for --rounds rounds. With --plan, every school of the
    plan is watched with its own account and its alerts go to its own contact: that needs a
    mail sender (--mail or LMREG_NOTIFY_MAIL), or --no-school-mail.
    """
    import asyncio
    import logging
    import sys

    from ..watch.service import WatchRequest, run_watch
    from ..watch.state import default_state_path
    from ..watch.watcher import WatchConfig

    config = WatchConfig(
        state_path=state if state is not None else default_state_path(),
        interval=interval,
        fail_after=fail_after,
        rounds=rounds,
        concurrency=concurrency,
        school=school,
        allow_private=bool(allow_private),
    )
    request = WatchRequest(
        notify=notify,
        mail=mail,
        plan=plan,
        school_mail=not no_school_mail,
        allow_private=allow_private,
        metrics_port=metrics_port,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%Y-%m-%d %H:%M:%S"))
    logger = logging.getLogger("lmreg_nb")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        code = run_watch(config, request, handler=handler)
    except (KeyboardInterrupt, asyncio.CancelledError):  # a second signal: stopped at once
        code = 130
    finally:
        logger.removeHandler(handler)
    sys.exit(code)


COMMANDS: list[click.Command] = [watch]
