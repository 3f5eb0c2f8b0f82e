"""`lmreg-nb token | models | register | modify`: the registration API from a shell.

Secrets never come from arguments: apiKey is read from LMREG_MODEL_API_KEY
(environment or .env) or typed at a hidden prompt.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from . import _endpoint

if TYPE_CHECKING:
    from ..models import RegisteredModel
    from ..registry.client import RegistryClient
    from ..settings import Settings

__all__ = ["COMMANDS"]


def _client(settings: Settings | None = None) -> RegistryClient:
    from ..registry.client import RegistryClient

    return RegistryClient(settings)


def _echo_warnings(client: RegistryClient) -> None:
    from ..i18n import _

    for warning in client.last_warnings:
        click.echo(_("warning: {message}").format(message=warning.message), err=True)


def _describe(model: RegisteredModel) -> str:
    from ..i18n import _
    from ..terminal import shown_name, terminal_text

    return _("{name} (modelId {id}, registryUrl {url})").format(
        name=shown_name(model.model_name),
        id=shown_name(model.model_id),
        url=terminal_text(model.registry_url),
    )


@click.command("token")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON object, schema: lmreg_nb/schemas/token.schema.json.",
)
def token_command(as_json: bool) -> None:
    """Get a token (cached or exchanged) and show its env and expiry; the token is masked."""
    from datetime import UTC, datetime

    from ..i18n import _

    with _client() as client:
        token = client.token()
    info = {
        "env": token.env,
        "token": token.token.masked,
        "expires": token.expires_at.isoformat() if token.source != "environment" else None,
        "source": token.source,
    }
    if as_json:
        click.echo(json.dumps(info))
        return
    from ..i18n import format_local_time, pgettext
    from ..terminal import terminal_text

    if token.source == "environment":
        expires = _("unknown (token from LMREG_TOKEN)")
    else:
        # The school's local time with its zone, as `models` shows its times.
        left = token.expires_at - datetime.now(UTC)
        expires = _("{when} (in {hours} h)").format(
            when=format_local_time(token.expires_at),
            hours=f"{max(0.0, left.total_seconds() / 3600):.1f}",
        )
    sources = {
        "exchange": pgettext("token source", "exchange"),
        "cache": pgettext("token source", "cache"),
        "environment": pgettext("token source", "environment (LMREG_TOKEN)"),
    }
    _echo_fields(
        [
            (_("env"), terminal_text(token.env)),
            (_("token"), token.token.masked),
            (_("expires"), expires),
            (pgettext("token field", "source"), sources.get(token.source, token.source)),
        ]
    )


def _echo_fields(fields: list[tuple[str, str]]) -> None:
    """``label: value`` lines, the values aligned in the columns a terminal gives them."""
    import unicodedata

    from ..i18n import pgettext

    def width(text: str) -> int:
        return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)

    labels = [pgettext("field label", "{label}:").format(label=label) for label, _v in fields]
    column = max(width(label) for label in labels) + 1
    for label, (_l, value) in zip(labels, fields, strict=True):
        click.echo(label + " " * (column - width(label)) + value)


@click.command("models")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print a JSON list (apiKey masked), schema: lmreg_nb/schemas/models.schema.json.",
)
def models_command(as_json: bool) -> None:
    """List the account's registered models (apiKey masked)."""
    from ..i18n import _, ngettext
    from ..terminal import shown_name, terminal_json, terminal_text

    with _client() as client:
        models = client.shown(client.query_models())
    if as_json:
        # Escaped, not replaced: a program reading the JSON gets the platform's exact text.
        click.echo(terminal_json([m.row() for m in models]))
        return
    if not models:
        click.echo(_("no models registered yet (register one with `lmreg-nb register`)"))
        return
    from datetime import UTC, datetime

    import pandas as pd

    from ..i18n import local_zone, zone_label
    from ..registry.frames import models_frame

    frame = models_frame(models)
    zone = local_zone()
    for column in ("createTime", "updateTime"):
        # The school's local time; the zone is said once, under the table.
        local = frame[column].dt.tz_convert(zone)
        frame[column] = local.dt.strftime("%Y-%m-%d %H:%M:%S").fillna("")
    for column in frame.columns:
        # Each cell made safe before the table is laid out, so its columns stay aligned;
        # names by the rule every view shows names with (nothing hidden, capped).
        safe = shown_name if column in ("modelName", "modelId") else terminal_text
        frame[column] = frame[column].map(safe, na_action="ignore")
    # A Chinese character takes two columns of a terminal: pandas counts them so.
    with pd.option_context("display.unicode.east_asian_width", True):
        click.echo(frame.to_string(index=False))
    now = datetime.now(UTC).astimezone(zone)
    click.echo(_("Times are local: {zone}").format(zone=zone_label(now)))
    invalid = [m for m in models if m.invalid]
    if invalid:
        click.echo(
            ngettext(
                "warning: {n} row holds values out of range (marked in the invalid column)",
                "warning: {n} rows hold values out of range (marked in the invalid column)",
                len(invalid),
            ).format(n=len(invalid)),
            err=True,
        )


#: ``--json`` of the commands that print one model (register, modify).
_model_json = click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the model as one JSON object (apiKey masked), schema: "
    "lmreg_nb/schemas/model.schema.json.",
)


@click.command("register")
@click.option("--name", "name", required=True, help="modelName (unique in the account).")
@click.option("--url", "url", help="registryUrl: the chat endpoint [default: LMREG_MODEL_URL].")
@_model_json
def register_command(name: str, url: str | None, as_json: bool) -> None:
    """Register a model. apiKey comes from LMREG_MODEL_API_KEY or a hidden prompt."""
    from ..errors import ConfigurationError
    from ..i18n import _, listing, ngettext
    from ..models import ModelDraft
    from ..settings import Settings
    from ..validate import check_model_name, check_registry_url

    settings = Settings.load()
    url = url if url is not None else settings.model_url
    # What this command itself needs, reported together (not one per run).
    missing = [] if url else ["LMREG_MODEL_URL"]
    if not settings.model_api_key and not _endpoint.interactive():
        missing.append("LMREG_MODEL_API_KEY")
    if missing:
        text = ngettext(
            "{variables} is not set: set it in the environment or in .env.",
            "{variables} are not set: set them in the environment or in .env.",
            len(missing),
        ).format(variables=listing(missing))
        if url is None:
            text += " " + _("Instead of LMREG_MODEL_URL, --url works too.")
        raise ConfigurationError(text, variable=missing[0])
    assert url is not None

    # Check the arguments before asking for a secret.
    draft_name, draft_url = check_model_name(name), check_registry_url(url)
    draft = ModelDraft(
        draft_name,
        draft_url,
        _endpoint.model_api_key(settings, purpose=_("for the platform to call it")),
    )
    with _client(settings) as client:
        from ..confusables import refuse_look_alike

        refuse_look_alike(draft_name, [m.model_name for m in client.query_models()])
        model = client.shown([client.register_model(draft)])[0]
        _echo_warnings(client)
    from ..terminal import terminal_json

    if as_json:
        click.echo(terminal_json(model.row()))
    else:
        click.echo(_("registered {model}").format(model=_describe(model)))


@click.command("modify")
@click.option("--model-id", help="Select the model by modelId.")
@click.option("--name", help="Select the model by modelName.")
@click.option("--new-name", help="New modelName [default: unchanged].")
@click.option("--url", help="New registryUrl [default: unchanged].")
@click.option(
    "--new-api-key",
    is_flag=True,
    help="Replace apiKey with LMREG_MODEL_API_KEY (or a hidden prompt) [default: unchanged].",
)
@_model_json
def modify_command(
    model_id: str | None,
    name: str | None,
    new_name: str | None,
    url: str | None,
    new_api_key: bool,
    as_json: bool,
) -> None:
    """Change a model's modelName, registryUrl or apiKey (the others stay as stored)."""
    from ..i18n import _

    if (model_id is None) == (name is None):
        raise click.UsageError(_("select the model with exactly one of --model-id or --name"))
    if new_name is None and url is None and not new_api_key:
        raise click.UsageError(_("nothing to change: give --new-name, --url or --new-api-key"))
    from ..errors import ValidationError
    from ..settings import Settings
    from ..validate import check_model_name, check_registry_url

    # Check the arguments before asking for a secret.
    checked_name = check_model_name(new_name) if new_name is not None else None
    checked_url = check_registry_url(url) if url is not None else None
    settings = Settings.load()
    key = _endpoint.model_api_key(settings, purpose=_("(new)")) if new_api_key else None
    with _client(settings) as client:
        try:
            model = client.update_model(
                name=name,
                model_id=model_id,
                new_name=checked_name,
                registry_url=checked_url,
                api_key=key,
            )
        except ValidationError as exc:
            if exc.field != "apiKey" or key is not None:
                raise
            raise click.UsageError(
                _("the platform did not return the stored apiKey: add --new-api-key")
            ) from None
        model = client.shown([model])[0]
        _echo_warnings(client)
    from ..terminal import terminal_json

    if as_json:
        click.echo(terminal_json(model.row()))
    else:
        click.echo(_("modified {model}").format(model=_describe(model)))


COMMANDS: list[click.Command] = [token_command, models_command, register_command, modify_command]
