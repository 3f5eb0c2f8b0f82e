"""The school's chat endpoint as one value: where, with which key, which model, how long.

```python
target = Target.from_settings(Settings.load())           # LMREG_MODEL_URL, _API_KEY, _NAME
target = Target.from_registered(settings, "campus-llm")  # as the platform will call it
target = Target("https://llm.school.edu/v1/chat/completions", key, "qwen2.5", timeout=10)
check_endpoint(target); find_capacity(target, need=40); stream_chat(target, "Hello")
```

A Target is checked when it is made, so every request built from it can be
sent: the URL follows the registryUrl rules, the key is one an HTTP header can
carry (visible ASCII; never written raw with a CR LF in it), the model is not
empty. A bad value is a one-line :class:`~lmreg_nb.errors.ValidationError`.
``dataclasses.replace(target, model=...)`` makes a checked copy.

As the platform calls it (``check --registered NAME``): the registryUrl and
apiKey registered under modelName NAME (read with query-models), body
``model`` LMREG_MODEL_NAME when it is set (the school's own name), else NAME;
``registered_name`` then keeps NAME so that model-name-served tries it too.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ModelNameNotFoundError, ValidationError
from ..i18n import _, listing, ngettext
from ..secret import Secret
from ..terminal import shown_name, snippet
from ..validate import check_registry_url, is_header_value

if TYPE_CHECKING:
    from ..models import RegisteredModel
    from ..registry.client import RegistryClient
    from ..settings import Settings

log = logging.getLogger("lmreg_nb")

__all__ = ["DEFAULT_TIMEOUT", "Target"]

#: Seconds to wait for a connection or a read (LMREG_TIMEOUT's default).
DEFAULT_TIMEOUT = 10.0


@dataclass(frozen=True, init=False, repr=False)
class Target:
    """The chat endpoint to call: URL, apiKey, body ``model``, registered name, timeout."""

    url: str
    api_key: Secret
    #: The body field ``model``.
    model: str
    #: The modelName registered on the platform, when the target is a registered model.
    registered_name: str | None
    #: Seconds per connection or read; a whole reply may take TOTAL_TIMEOUT_FACTOR times it.
    timeout: float

    def __init__(
        self,
        url: str,
        api_key: str | Secret,
        model: str,
        *,
        registered_name: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        key = api_key.reveal() if isinstance(api_key, Secret) else api_key
        if not isinstance(key, str) or not key.strip():
            raise ValidationError("apiKey", _("must not be empty: set LMREG_MODEL_API_KEY"))
        key = key.strip()
        if not is_header_value(key):
            visible = _(
                "must be visible ASCII characters only (letters, digits, punctuation), no spaces"
            )
            raise ValidationError("apiKey", visible)
        if not isinstance(model, str) or not model.strip():
            raise ValidationError("model", _("must not be empty: set LMREG_MODEL_NAME"))
        if not 0 < timeout <= 600:  # also refuses NaN
            raise ValidationError("timeout", _("must be between 0 and 600 seconds"))
        name = registered_name.strip() if isinstance(registered_name, str) else None
        setattr_ = object.__setattr__  # frozen: set once, here
        setattr_(self, "url", check_registry_url(url))
        setattr_(self, "api_key", Secret(key))
        setattr_(self, "model", model.strip())
        setattr_(self, "registered_name", name or None)
        setattr_(self, "timeout", float(timeout))

    def __repr__(self) -> str:  # the key never shows
        return (
            f"Target(url={self.url!r}, model={self.model!r}, "
            f"registered_name={self.registered_name!r}, timeout={self.timeout:g})"
        )

    @property
    def alias(self) -> str | None:
        """The registered name when it differs from ``model``: model-name-served tries it too."""
        name = self.registered_name
        return name if name and name != self.model else None

    def headers(self, api_key: str | None = None) -> dict[str, str]:
        """Request headers; ``api_key`` replaces the target's key (the wrong-key check).

        ``Accept-Encoding: identity``: a compressed answer could inflate past
        every cap before it is counted (a gzip bomb).
        """
        key = self.api_key.reveal() if api_key is None else api_key
        return {
            "Authorization": f"Bearer {key}",
            "Content-Type": "application/json",
            "Accept": "text/event-stream, application/json",
            "Accept-Encoding": "identity",
        }

    @classmethod
    def from_settings(cls, settings: Settings, *, url: str = "", model: str = "") -> Target:
        """LMREG_MODEL_URL, LMREG_MODEL_API_KEY, LMREG_MODEL_NAME and LMREG_TIMEOUT.

        ``url`` / ``model``, when given, replace the settings' (the key stays
        LMREG_MODEL_API_KEY). Every missing variable is named in one message.
        """
        wanted = [("model_url", url), ("model_api_key", ""), ("model_name", model)]
        settings.require(*[name for name, given in wanted if not given.strip()])
        return cls(
            url.strip() or settings.model_url or "",
            settings.model_api_key or "",
            model.strip() or settings.model_name or "",
            timeout=settings.timeout,
        )

    @classmethod
    def from_registered(
        cls, settings: Settings, name: str, *, client: RegistryClient | None = None
    ) -> Target:
        """The model registered as ``name``, as the platform will call it (one query-models).

        Raises NotFoundError when the account has no such model; ValidationError
        when ``name`` is empty, matches models whose names differ only in their
        Unicode form, or the registered apiKey cannot be sent. The client's
        errors (token, network) pass through.
        """
        if not isinstance(name, str) or not name.strip():
            raise ValidationError("modelName", _("give the registered modelName to check"))
        if client is None:
            from ..registry.client import RegistryClient

            with RegistryClient(settings) as own:
                found = _find(own, name.strip())
        else:
            found = _find(client, name.strip())
        return cls.from_model(found, model=settings.model_name or "", timeout=settings.timeout)

    @classmethod
    def from_model(
        cls, found: RegisteredModel, *, model: str = "", timeout: float = DEFAULT_TIMEOUT
    ) -> Target:
        """A model the platform listed, called as the platform calls it.

        Body ``model`` is ``model`` when given, else its modelName. Its apiKey
        is checked before anything is sent: missing, or not visible ASCII (a CR
        LF would inject a header), it is a one-line ValidationError naming the model.
        """
        name = found.model_name.strip()
        shown = snippet(name, 64)
        key = found.api_key.reveal()
        if not key:
            raise ValidationError(
                "apiKey",
                _(
                    "the platform did not return the apiKey registered for '{name}', so the "
                    "check cannot use it"
                ).format(name=shown),
            )
        if not is_header_value(key):
            raise ValidationError(
                "apiKey",
                _(
                    "the apiKey registered for '{name}' holds spaces, control or non-ASCII "
                    "characters, which an HTTP header cannot carry, so it was not sent: "
                    "register the right key with `lmreg-nb modify --model-id {id} --new-api-key`"
                ).format(name=shown, id=snippet(found.model_id, 64)),
            )
        return cls(
            found.registry_url,
            found.api_key,
            model.strip() or name,
            registered_name=name,
            timeout=timeout,
        )


def _find(client: RegistryClient, name: str) -> RegisteredModel:
    """The one model named ``name`` (as modelNames compare: trimmed, NFC)."""
    from ..models import model_name_key

    wanted = model_name_key(name)
    listed = client.query_models()
    found = [m for m in listed if model_name_key(m.model_name) == wanted]
    others = [m for m in listed if model_name_key(m.model_name) != wanted]
    twin = _look_alike(name, others)
    if not found:
        if twin is not None:
            raise ModelNameNotFoundError(
                _(
                    "no model named '{name}' is registered in this account, but '{other}' "
                    "(modelId {id}) looks the same, spelled with other characters (another "
                    "script, width or invisible marks): copy the name from `lmreg-nb models`"
                ).format(name=shown_name(name), other=shown_name(twin.model_name),
                         id=shown_name(twin.model_id)),
            )  # fmt: skip
        close = _close_name(name, others)
        if close is not None:
            raise ModelNameNotFoundError(
                _(
                    "no model named '{name}' is registered in this account; did you mean "
                    "'{close}'? (list them with `lmreg-nb models`)"
                ).format(name=shown_name(name), close=shown_name(close))
            )
        raise ModelNameNotFoundError(
            _(
                "no model named '{name}' is registered in this account; list them with "
                "`lmreg-nb models`"
            ).format(name=shown_name(name))
        )
    if twin is not None:
        # The platform compares exact strings: a teacher may pick the other one.
        log.warning(
            "%s",
            _(
                "'{other}' (modelId {id}) looks the same as '{name}' but is spelled with other "
                "characters: make sure the platform's course apps use '{name}', and rename "
                "the other with `lmreg-nb modify --model-id {id} --new-name NEW`"
            ).format(name=shown_name(name), other=shown_name(twin.model_name),
                     id=shown_name(twin.model_id)),
        )  # fmt: skip
    if len(found) > 1:
        # Names that differ only in Unicode form (NFC / NFD) look the same: never pick one.
        ids = listing(snippet(m.model_id, 64) for m in found)
        raise ValidationError(
            "modelName",
            ngettext(
                "'{name}' matches {n} registered model whose names differ only in their Unicode "
                "form (modelId {ids}); rename all but one with `lmreg-nb modify --model-id ID "
                "--new-name NEW`",
                "'{name}' matches {n} registered models whose names differ only in their Unicode "
                "form (modelId {ids}); rename all but one with `lmreg-nb modify --model-id ID "
                "--new-name NEW`",
                len(found),
            ).format(name=name, n=len(found), ids=ids),
        )
    return found[0]


def _look_alike(name: str, models: list[RegisteredModel]) -> RegisteredModel | None:
    """The first of ``models`` whose name looks like ``name`` (UTS #39 skeletons)."""
    from ..confusables import confusable_with

    other = confusable_with(name, [m.model_name for m in models])
    return next((m for m in models if m.model_name == other), None)


def _close_name(name: str, listed: list[RegisteredModel]) -> str | None:
    """The listed modelName a typo of ``name`` most likely meant (None: none is close)."""
    import difflib

    names = [m.model_name for m in listed[:1000]]
    close = difflib.get_close_matches(name[:200], names, n=1, cutoff=0.7)
    return close[0] if close else None
