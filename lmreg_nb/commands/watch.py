"""`lmreg-nb watch`: call every registered model each round; alert when one is down."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from ._types import FiniteRange

if TYPE_CHECKING:
    from ..watch.fleet import School

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
    envvar="LMREG_NOTIFY_MAIL",
    default=None,
    metavar="URL",
    help="With --plan: the provider's mail sender, an Apprise mailtos:// URL without a "
    "recipient; each school's alerts go by it to its contact_email. Default: "
    "LMREG_NOTIFY_MAIL (prefer it: the URL holds a password).",
)
@click.option(
    "--allow-private",
    is_flag=True,
    envvar="LMREG_ALLOW_PRIVATE",
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
    allow_private: bool,
) -> None:
    """Watch every registered model as the platform calls it, and alert the school's contact.

    Each round reads the account's models (query-models) and sends each one short streamed
    chat with its registryUrl and apiKey. After --fail-after failed rounds in a row one alert
    goes to every target; the first passing round after that sends one recovery. Runs until
    SIGINT or SIGTERM (exit 0), or for --rounds rounds. With --plan, every school of the
    plan is watched with its own account and its alerts go to its own contact.
    """
    import asyncio
    import logging
    import sys

    from ..errors import ConfigurationError
    from ..i18n import _
    from ..watch.service import run_watch
    from ..watch.state import default_state_path
    from ..watch.watcher import WatchConfig

    config = WatchConfig(
        state_path=state if state is not None else default_state_path(),
        interval=interval,
        fail_after=fail_after,
        rounds=rounds,
        concurrency=concurrency,
        school=school,
        allow_private=allow_private,
    )
    if mail and plan is None:
        raise ConfigurationError(_("--mail needs --plan: it sends each school's alerts"))
    schools = read_fleet(plan) if plan is not None else None
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%Y-%m-%d %H:%M:%S"))
    logger = logging.getLogger("lmreg_nb")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        code = run_watch(
            config,
            notify=notify,
            metrics_port=metrics_port,
            handler=handler,
            schools=schools,
            mail=mail if plan is not None else None,
        )
    except (KeyboardInterrupt, asyncio.CancelledError):  # a second signal: stopped at once
        code = 130
    finally:
        logger.removeHandler(handler)
    sys.exit(code)


def read_fleet(plan: Path) -> list[School]:
    """The schools of a batch plan; a bad row is one line naming its line and column.

    A row whose env_file is missing or whose variables are incomplete is kept with its
    problem: the watch reports it and watches the other schools.
    """
    import dataclasses
    import os

    from ..batch.plan import load_env_file, read_plan
    from ..errors import LmregError
    from ..i18n import current_language
    from ..runner import clean_environment
    from ..settings import Settings
    from ..watch.fleet import School

    schools = []
    for run in read_plan(plan, lang=current_language(), check_contacts=True, env_required=False):
        name = str(run.parameters.get("school") or run.run_id)
        email = str(run.parameters.get("contact_email") or "")
        settings, problem = None, ""
        try:
            env = load_env_file(run.env_file, run.run_id) if run.env_file else {}
            settings = Settings.load(environ=clean_environment(env))
            settings.require("base_url")
            if "LMREG_TOKEN_CACHE" not in env and settings.token_cache is not None:
                # One cache file per school: 1,000 tokens in one file rewrite it 1,000
                # times under its lock (bench_watch: a first round 3x slower).
                # Beside the provider's own LMREG_TOKEN_CACHE when it sets one.
                own = os.environ.get("LMREG_TOKEN_CACHE")
                folder = Path(own).expanduser().parent if own else settings.token_cache.parent
                cache = folder / "fleet" / f"{run.run_id}.json"
                settings = dataclasses.replace(settings, token_cache=cache)
        except LmregError as exc:
            settings, problem = None, str(exc)
        schools.append(School(run.run_id, name, settings, problem, email, run.lang, line=run.line))
    return schools


COMMANDS: list[click.Command] = [watch]
