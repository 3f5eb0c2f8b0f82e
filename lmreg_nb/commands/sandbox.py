"""`lmreg-nb sandbox`: the platform and a mock school model on loopback; `add-app`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ._types import FiniteRange

if TYPE_CHECKING:
    from ..sandbox.platform.app import PlatformConfig
    from ..sandbox.server import SandboxOptions

__all__ = ["COMMANDS", "default_db_path", "sandbox"]


def default_db_path() -> Path:
    """$XDG_DATA_HOME/lmreg_nb/sandbox.sqlite3 (XDG_DATA_HOME defaults to ~/.local/share)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "lmreg_nb" / "sandbox.sqlite3"


def _print_json(value: dict[str, str]) -> None:
    # One line, flushed at once: a parent process waits for it on a pipe.
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


_DB_HELP = "SQLite database file [default: $XDG_DATA_HOME/lmreg_nb/sandbox.sqlite3]"


@click.group(invoke_without_command=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    default=8765,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Platform port (0: any free port).",
)
@click.option(
    "--model-port",
    default=8766,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Mock school model port (0: any free port).",
)
@click.option("--db", type=click.Path(dir_okay=False, path_type=Path), help=_DB_HELP)
@click.option(
    "--token-ttl",
    default=3 * 24 * 3600.0,
    show_default=True,
    type=FiniteRange(min=0, min_open=True),
    help="Token lifetime in seconds.",
)
@click.option(
    "--error-style",
    type=click.Choice(["http", "envelope"]),
    default="http",
    show_default=True,
    help="envelope: errors as HTTP 200 with a non-zero code.",
)
@click.option(
    "--fail-rate",
    default=0.0,
    show_default=True,
    type=FiniteRange(0, 1),
    help="Share of platform requests answered 50300.",
)
@click.option(
    "--latency-ms",
    default=0.0,
    show_default=True,
    type=FiniteRange(min=0),
    help="Added to every platform request.",
)
@click.option(
    "--rate-limit",
    default=0.0,
    show_default=True,
    type=FiniteRange(min=0),
    help="Requests per second per account before 42900 (0: off).",
)
@click.option(
    "--ttft-ms",
    default=50.0,
    show_default=True,
    type=FiniteRange(min=0),
    help="Mock model: time to first token.",
)
@click.option(
    "--itl-ms",
    default=10.0,
    show_default=True,
    type=FiniteRange(min=0),
    help="Mock model: inter-token latency.",
)
@click.option(
    "--tokens",
    default=32,
    show_default=True,
    type=click.IntRange(min=0),
    help="Mock model: tokens (stream chunks) per reply.",
)
@click.option(
    "--slots",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="Mock model: replies served at once; the rest queue (0: no limit).",
)
@click.option(
    "--slowdown",
    default=0.0,
    show_default=True,
    type=FiniteRange(min=0),
    help="Mock model: each gap between tokens grows by this share per other reply in progress.",
)
@click.option(
    "--context-window",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    metavar="N",
    help="Mock model: tokens of prompt and max_tokens it accepts; a longer prompt gets "
    "vLLM's 400 (with --quirk truncate-prompt: cut silently, as Ollama does). 0: no limit.",
)
@click.option(
    "--prefill-tokens-per-s",
    default=0.0,
    show_default=True,
    type=FiniteRange(min=0),
    metavar="R",
    help="Mock model: new prompt tokens go through one first-come-first-served prefill "
    "queue at R tokens a second before the first token (0: free).",
)
@click.option(
    "--prefix-cache",
    is_flag=True,
    help="Mock model: the part of a prompt that starts like an earlier prompt costs no "
    "prefill (a prefix cache).",
)
@click.option(
    "--kv-tokens",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    metavar="N",
    help="Mock model: tokens of prompts and replies in flight at once; a request that "
    "would pass N waits for room (0: no limit).",
)
@click.option(
    "--quirk",
    "quirks",
    multiple=True,
    metavar="NAME",
    help="Mock model quirk (repeatable, or comma-separated).",
)
@click.option(
    "--served-model-name",
    "served",
    multiple=True,
    metavar="NAME",
    help="Mock model: the only model names it serves, listed by GET /v1/models "
    "(repeatable; default: any name).",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow a non-loopback --host (the sandbox has demo credentials and no TLS).",
)
@click.option("--parent-pid", type=int, default=None, hidden=True)  # stop when it dies
@click.pass_context
def sandbox(
    ctx: click.Context,
    host: str,
    port: int,
    model_port: int,
    db: Path | None,
    token_ttl: float,
    error_style: str,
    fail_rate: float,
    latency_ms: float,
    rate_limit: float,
    ttft_ms: float,
    itl_ms: float,
    tokens: int,
    slots: int,
    slowdown: float,
    context_window: int,
    prefill_tokens_per_s: float,
    prefix_cache: bool,
    kv_tokens: int,
    quirks: tuple[str, ...],
    served: tuple[str, ...],
    allow_remote: bool,
    parent_pid: int | None,
) -> None:
    """Run the platform and a mock school model on loopback until Ctrl-C.

    Prints one JSON line: base_url, token_path, model_url, app_id, app_secret,
    model_api_key (a demo account, the same on every start with the same --db).
    """
    if ctx.invoked_subcommand is not None:
        return
    from ..sandbox.server import SandboxOptions

    _require_loopback(host, allow_remote)
    quirk_set = _quirk_set(quirks)
    options = SandboxOptions(
        db=db or default_db_path(),
        host=host,
        port=port,
        model_port=model_port,
        platform=_platform_config(token_ttl, error_style, fail_rate, latency_ms, rate_limit),
        ttft_ms=ttft_ms,
        itl_ms=itl_ms,
        tokens=tokens,
        quirks=quirk_set,
        slots=slots,
        slowdown=slowdown,
        served=tuple(name.strip() for name in served if name.strip()),
        parent_pid=parent_pid,
        context_window=context_window,
        prefill_tokens_per_s=prefill_tokens_per_s,
        prefix_cache=prefix_cache,
        kv_tokens=kv_tokens,
    )
    _serve(options)


def _require_loopback(host: str, allow_remote: bool) -> None:
    """A usage error for a non-loopback --host, unless --allow-remote says it is meant."""
    from ..i18n import _
    from ..sandbox.server import is_loopback

    if not is_loopback(host) and not allow_remote:
        raise click.UsageError(
            _(
                "--host {host} is not loopback; the sandbox hands out demo credentials over "
                "plain http, so pass --allow-remote if you really mean it"
            ).format(host=host)
        )


def _quirk_set(quirks: tuple[str, ...]) -> frozenset[str]:
    """The --quirk values, checked; an unknown name is a bad parameter."""
    from ..sandbox.school_model import parse_quirks

    try:
        return parse_quirks(quirks)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--quirk") from None


def _platform_config(
    token_ttl: float, error_style: str, fail_rate: float, latency_ms: float, rate_limit: float
) -> PlatformConfig:
    """The platform's knobs from their options."""
    from ..sandbox.platform.app import PlatformConfig

    return PlatformConfig(
        token_ttl_s=token_ttl,
        error_style="envelope" if error_style == "envelope" else "http",
        fail_rate=fail_rate,
        latency_ms=latency_ms,
        rate_limit=rate_limit,
    )


def _serve(options: SandboxOptions) -> None:
    """Serve until Ctrl-C; a database or port that cannot be used is a configuration error."""
    import sqlite3

    from ..errors import ConfigurationError
    from ..i18n import _
    from ..sandbox.server import serve_sandbox

    try:
        serve_sandbox(options, lambda info: _announce(info, options.db))
    except KeyboardInterrupt:
        # Ctrl-C before the servers took over the signal: a clean stop all the same.
        return
    except sqlite3.DatabaseError as exc:
        raise ConfigurationError(
            _("cannot use {db} as the sandbox database ({error}); pass another --db").format(
                db=options.db, error=exc
            )
        ) from None
    except OSError as exc:
        raise ConfigurationError(
            _(
                "cannot start the sandbox on {host} ({error}); choose other "
                "--port/--model-port (0 picks free ones), or another --db"
            ).format(host=options.host, error=exc.strerror or exc)
        ) from None


def _announce(info: dict[str, str], db: Path) -> None:
    """The JSON line for programs on stdout, and one sentence for the person on stderr."""
    from ..i18n import _

    _print_json(info)
    # For the person at the terminal; programs read the JSON line on stdout.
    click.echo(
        _(
            "sandbox: platform {base_url}, mock model {model_url}, database {db}; Ctrl-C to stop"
        ).format(base_url=info["base_url"], model_url=info["model_url"], db=db),
        err=True,
    )


@sandbox.command("add-app")
@click.option("--db", type=click.Path(dir_okay=False, path_type=Path), help=_DB_HELP)
@click.option("--name", required=True, help="A name for the account (e.g. the school).")
def add_app(db: Path | None, name: str) -> None:
    """Create an account; print {"app_id", "app_secret", "env"} as one JSON line."""
    import sqlite3

    from ..errors import ConfigurationError
    from ..i18n import _
    from ..sandbox.platform.store import Store

    name = name.strip()
    if not name or len(name) > 64:
        raise click.BadParameter(_("must be 1 to 64 characters"), param_hint="--name")
    path = db or default_db_path()
    try:
        store = Store(path)
        try:
            store.demo()  # a new database gets its demo account first, like `sandbox` does
            account = store.add_account(name)
        finally:
            store.close()
    except (sqlite3.DatabaseError, OSError) as exc:
        raise ConfigurationError(
            _("cannot use {db} as the sandbox database ({error}); pass another --db").format(
                db=path, error=exc
            )
        ) from None
    assert account.app_secret is not None
    _print_json({"app_id": account.app_id, "app_secret": account.app_secret, "env": account.env})


COMMANDS: list[click.Command] = [sandbox]
