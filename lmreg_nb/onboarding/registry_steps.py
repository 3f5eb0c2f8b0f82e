"""The platform steps as plain functions: the token, register, modify, list the models.

Each takes the registry client and the settings it needs and returns what it
did; :class:`~lmreg_nb.onboarding.Onboarding` keeps the state and records the steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from ..display import Outcome, Table
from ..errors import LmregError
from ..i18n import _, format_local_time, local_time, ngettext, pgettext, zone_label
from ..models import ModelDraft
from ..secret import Secret
from ..terminal import shown_name
from ..validate import url_warnings

if TYPE_CHECKING:
    from ..models import RegisteredModel, Token
    from ..registry.client import RegistryClient
    from ..settings import Settings

__all__ = [
    "Change",
    "Examples",
    "check_listed",
    "listed_detail",
    "model_outcome",
    "models_table",
    "modified_detail",
    "modify",
    "modify_outcome",
    "no_such_model",
    "register",
    "registered_detail",
    "registered_outcome",
    "secret_of",
    "token_detail",
    "token_outcome",
    "with_credentials",
]

#: One field a modify changed: (field, old value, new value); the apiKey never shown.
Change = tuple[str, str, str]


class Examples(TypedDict, total=False):
    """What a registration may carry besides name, URL and key (stored, never returned)."""

    req_params: list[str] | None
    req_example: str | None
    res_example: str | None


def token_detail(token: Token) -> str:
    """The token step's detail: the env and when the token expires."""
    expires = format_local_time(token.expires_at)
    return _("env {env}, expires {when}").format(env=token.env, when=expires)


def token_outcome(base_url: str, token: Token) -> Outcome:
    """The token as the notebook shows it (masked)."""
    return Outcome(
        _("token obtained"),
        [
            (_("platform"), base_url),
            (_("env"), token.env),
            (_("token"), token.token.masked),
            (_("expires"), format_local_time(token.expires_at)),
        ],
        value=token,
    )


def register(
    client: RegistryClient,
    settings: Settings,
    model_name: str,
    registry_url: str = "",
    api_key: str | Secret | None = None,
    *,
    update_existing: bool = True,
    **extra: Unpack[Examples],
) -> tuple[RegisteredModel, str]:
    """Register the model (with ``update_existing``: update the one of that name).

    Empty ``registry_url``/``api_key`` mean LMREG_MODEL_URL/LMREG_MODEL_API_KEY.
    Returns the model and ``"registered"`` or ``"updated"``.
    """
    draft = ModelDraft(
        model_name=model_name,
        registry_url=registry_url.strip() or settings.require("model_url"),
        api_key=secret_of(api_key) if api_key else settings.require("model_api_key"),
        **extra,
    )
    if update_existing:
        return client.register_or_update(draft)
    return client.register_model(draft), "registered"


def registered_detail(model: RegisteredModel, action: str) -> str:
    """The register step's detail: what was done, to which model."""
    done = _("updated") if action == "updated" else _("registered")
    return _("{action} {name} (modelId {id})").format(
        action=done, name=shown_name(model.model_name), id=shown_name(model.model_id)
    )


def registered_outcome(model: RegisteredModel, action: str) -> Outcome:
    """The model registered (or updated), as the notebook shows it."""
    done = _("updated") if action == "updated" else _("registered")
    return model_outcome(_("model {action}").format(action=done), model)


def modified_detail(model: RegisteredModel) -> str:
    """The modify step's detail."""
    return _("modified {name} (modelId {id})").format(
        name=shown_name(model.model_name), id=shown_name(model.model_id)
    )


def modify(
    client: RegistryClient,
    settings: Settings,
    model_id: str,
    model_name: str,
    registry_url: str,
    api_key: str | Secret | None = None,
) -> tuple[RegisteredModel, list[Change]]:
    """Overwrite a model's modelName, registryUrl and apiKey; returns it and what changed.

    The spec's modify overwrites apiKey, so one is always sent: empty
    ``api_key`` keeps the key the platform returned for this model, else
    LMREG_MODEL_API_KEY.
    """
    current = client.find_model(model_id=model_id)
    key: Secret | None = secret_of(api_key) if api_key else None
    if key is None and current is not None and current.api_key:
        key = current.api_key
    if key is None:
        key = settings.require("model_api_key")
    draft = ModelDraft(
        model_name=model_name, registry_url=registry_url, api_key=key, model_id=model_id
    )
    model = client.modify_model(draft)
    *before, after = client.shown([m for m in (current, model) if m is not None])
    return model, _changes(before[0] if before else None, after, key_changed=bool(api_key))


def modify_outcome(model: RegisteredModel, changes: Sequence[Change]) -> Outcome:
    """The modified model, its changed fields first (old → new)."""
    outcome = model_outcome(_("model modified"), model)
    outcome.rows = [(f, f"{old} → {new}") for f, old, new in changes] + outcome.rows
    return outcome


def no_such_model(name: str) -> LmregError:
    """The error for a model name the account does not have, saying what to do."""
    return LmregError(
        _(
            "no model named {name} in this account; list the models (notebook 04) "
            "and use one of their names"
        ).format(name=repr(name.strip()))
    )


def check_listed(models: Sequence[RegisteredModel], model: RegisteredModel | None) -> None:
    """Raise LmregError when the model this run registered is missing from the platform's list."""
    if model is not None and not any(m.model_id == model.model_id for m in models):
        raise LmregError(
            _(
                "model {name} (modelId {id}) is not in the platform's list of models; "
                "ask provider support"
            ).format(name=shown_name(model.model_name), id=shown_name(model.model_id))
        )


def listed_detail(count: int) -> str:
    """The list step's detail."""
    return ngettext("{n} model in the account", "{n} models in the account", count).format(n=count)


def models_table(models: Sequence[RegisteredModel], name_contains: str = "") -> Table:
    """The models as people read them: apiKey masked, times local, the zone said once
    under the table (in every cell it pushed the last column past a notebook's edge)."""
    columns = ["modelName", "modelId", "registryUrl", "apiKey"]
    # "updated" is also what was done to a model: the column's word is told apart by context.
    columns += [pgettext("column", "created"), pgettext("column", "updated")]
    shown = [m for m in models if name_contains.strip() in m.model_name]
    rows = [
        [
            shown_name(m.model_name),
            shown_name(m.model_id),
            m.registry_url,
            m.api_key.masked,
            _local(m.create_time, zone=False),
            _local(m.update_time, zone=False),
        ]
        for m in shown
    ]
    # The zone as the rows' times have it (a zone with summer time has two offsets).
    times = [t for m in shown for t in (m.create_time, m.update_time) if t is not None]
    zones = sorted({zone_label(local_time(t)) for t in times or [datetime.now(UTC)]})
    return Table(columns, rows, note=_("Times are local: {zone}").format(zone=", ".join(zones)))


def model_outcome(title: str, model: RegisteredModel) -> Outcome:
    """One model as an outcome: its fields (apiKey masked), local times, URL warnings."""
    rows = [
        (k, shown_name(v) if k in ("modelName", "modelId") else str(v))
        for k, v in model.row().items()
        if v is not None and k not in ("createTime", "updateTime")
    ]
    # Times as the models table shows them: local, with the zone (the record keeps UTC).
    rows += [
        (pgettext("column", "created"), _local(model.create_time)),
        (pgettext("column", "updated"), _local(model.update_time)),
    ]
    rows += [(_("warning"), w.message) for w in url_warnings(model.registry_url)]
    return Outcome(title, rows, value=model)


def with_credentials(
    given: Settings | None, app_id: str, app_secret: str | Secret | None
) -> Settings:
    """``given`` (None: the environment's) with this appId, and appSecret when one is given.

    A token from other credentials must not be reused: LMREG_TOKEN and its env are dropped.
    """
    from ..settings import Settings

    base = given or Settings.load()
    changes: dict[str, Any] = {"app_id": app_id.strip() or base.app_id}
    typed = {"app_id"} if app_id.strip() and app_id.strip() != base.app_id else set()
    if app_secret:
        changes["app_secret"] = secret_of(app_secret)
        # The environment's secret handed back by the form is not a typed one.
        typed |= set() if changes["app_secret"] == base.app_secret else {"app_secret"}
    changes["typed"] = typed
    return base.with_(token=None, env=None, **changes)


def secret_of(value: str | Secret) -> Secret:
    """``value`` as a Secret (a typed one stays as it is)."""
    return value if isinstance(value, Secret) else Secret(value)


def _changes(
    old: RegisteredModel | None, new: RegisteredModel, *, key_changed: bool
) -> list[Change]:
    before = {
        "modelName": shown_name(old.model_name) if old else "?",
        "registryUrl": old.registry_url if old else "?",
    }
    after = {"modelName": shown_name(new.model_name), "registryUrl": new.registry_url}
    rows = [(f, before[f], after[f]) for f in after if before[f] != after[f]]
    if key_changed:
        rows.append(("apiKey", _("(hidden)"), _("(new key, hidden)")))
    return rows


def _local(value: datetime | None, *, zone: bool = True) -> str:
    """A time as people read it: local (with its zone, unless a table says it once)."""
    return format_local_time(value, zone=zone) if value else _("unknown")
