"""The chat endpoint a command measures, and the apiKey it uses (never an argument).

`check [URL]` and `capacity [URL]` take the address on the command line (default
LMREG_MODEL_URL) and ``--model NAME`` (default LMREG_MODEL_NAME); the key comes
from LMREG_MODEL_API_KEY or a hidden prompt, as for `register`: an argument would
land in the shell's history and in every process listing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from ..probe.target import Target
    from ..secret import Secret
    from ..settings import Settings

__all__ = ["endpoint_options", "endpoint_target", "interactive", "model_api_key"]

F = TypeVar("F", bound=Callable[..., Any])


def endpoint_options(command: F) -> F:
    """The optional URL argument and ``--model``, as `check` and `capacity` take them."""
    command = click.option(
        "--model",
        "model",
        metavar="NAME",
        help="The model name sent in each request's body (default LMREG_MODEL_NAME).",
    )(command)
    return click.argument("url", required=False, metavar="[URL]")(command)


def interactive() -> bool:
    """True when a person can answer a prompt (stdin is a terminal)."""
    return sys.stdin.isatty()


def model_api_key(settings: Settings, *, purpose: str) -> Secret:
    """apiKey from LMREG_MODEL_API_KEY, else a hidden prompt on a terminal."""
    from ..errors import ConfigurationError
    from ..i18n import _
    from ..secret import Secret

    key = settings.model_api_key
    if key:
        return key
    if interactive():
        value = click.prompt(
            _("apiKey {purpose} (hidden)").format(purpose=purpose), hide_input=True, err=True
        )
        return Secret(_typed_key(str(value)))
    raise ConfigurationError(
        _(
            "LMREG_MODEL_API_KEY is not set and there is no terminal to ask: set it in the "
            "environment or in .env"
        ),
        variable="LMREG_MODEL_API_KEY",
    )


def _typed_key(value: str) -> str:
    """A key typed at the prompt, trimmed as a .env value is; one that an HTTP header
    cannot carry is refused with what is wrong in it (never the key itself)."""
    from ..errors import ValidationError
    from ..i18n import _
    from ..validate import half_width, is_header_value

    key = value.strip()
    if is_header_value(key):
        return key
    bad = next((ch for ch in key if not is_header_value(ch)), None)
    if bad is None:
        what = _("nothing")
    elif half_width(bad) is not None:
        what = _("a full-width character (switch the input method to half-width, English)")
    elif bad.isspace():
        what = _("a space inside it")
    else:
        what = _("a character that is not ASCII")
    raise ValidationError(
        "apiKey",
        _("the key typed holds {what}: type it again in ASCII letters, digits and punctuation")
        .format(what=what),
    )  # fmt: skip


def endpoint_target(url: str | None, model: str | None, registered: str | None) -> Target:
    """The endpoint to measure: ``url`` and ``model`` over the settings, or as registered
    under ``registered`` (a modelName: its registryUrl and apiKey; ``model`` still names
    the body's model)."""
    from ..errors import ConfigurationError, ValidationError
    from ..i18n import _
    from ..probe.target import Target
    from ..settings import Settings

    # An empty argument is a mistake of its own, not a missing setting ("not set" would
    # send the engineer to a .env that does set it).
    for given, name in ((url, "URL"), (model, "--model")):
        if given is not None and not given.strip():
            raise ValidationError(
                name, _("is empty: give a value, or leave it out to use the configured one")
            )
    settings = Settings.load()
    if model is not None:
        settings = settings.with_(model_name=model)
    if registered is not None:
        if url is not None:
            raise ValidationError(
                "--registered",
                _("takes the address registered under its name: give URL or --registered"),
            )
        return Target.from_registered(settings, registered)
    if url is not None:
        settings = settings.with_(model_url=url)
    missing = settings.missing("model_url", "model_name")
    if missing:
        # Say where each can come from: the argument or the option, else the variable.
        texts: dict[tuple[str, ...], str] = {
            ("LMREG_MODEL_URL",): _(
                "LMREG_MODEL_URL is not set: give the chat endpoint's address as URL, or set "
                "it in the environment or in .env"
            ),
            ("LMREG_MODEL_NAME",): _(
                "LMREG_MODEL_NAME is not set: give --model NAME, or set it in the environment "
                "or in .env"
            ),
        }
        text = texts.get(tuple(missing)) or _(
            "LMREG_MODEL_URL and LMREG_MODEL_NAME are not set: give URL and --model NAME, or "
            "set them in the environment or in .env"
        )
        raise ConfigurationError(text, variable=missing[0])
    key = model_api_key(settings, purpose=_("of the chat endpoint"))
    return Target.from_settings(settings.with_(model_api_key=key))
