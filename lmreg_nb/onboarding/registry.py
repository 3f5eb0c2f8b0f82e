"""The onboarding's registration steps: register, modify, list the account's models."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..errors import LmregError
from ..i18n import _, format_local_time, ngettext, pgettext
from ..secret import Secret
from ..summary import Step
from ..validate import url_warnings
from .display import Outcome, Table
from .step import StepsHost, step

if TYPE_CHECKING:
    from ..models import RegisteredModel
    from ..probe import Target

__all__ = ["RegistrySteps", "secret_of"]


class RegistrySteps(StepsHost):
    """The registration part of :class:`~lmreg_nb.onboarding.Onboarding` (a mixin)."""

    models: list[RegisteredModel]
    changes: list[tuple[str, str, str]]
    target: Target | None
    checked_endpoint: tuple[str, str] | None

    @step("register")
    def register(
        self,
        model_name: str,
        registry_url: str = "",
        api_key: str | Secret | None = None,
        *,
        update_existing: bool = True,
        req_params: list[str] | None = None,
        req_example: str | None = None,
        res_example: str | None = None,
    ) -> Outcome:
        """Register the model; with ``update_existing``, update it when the name is taken.

        Empty ``registry_url``/``api_key`` mean LMREG_MODEL_URL/LMREG_MODEL_API_KEY.
        """
        from ..models import ModelDraft

        url = registry_url.strip() or self.settings.require("model_url")
        key = secret_of(api_key) if api_key else self.settings.require("model_api_key")
        draft = ModelDraft(
            model_name=model_name,
            registry_url=url,
            api_key=key,
            req_params=req_params,
            req_example=req_example,
            res_example=res_example,
        )
        if update_existing:
            model, action = self.client.register_or_update(draft)
        else:
            model, action = self.client.register_model(draft), "registered"
        # The checks, chat and capacity now call what is registered.
        self.model, self.target, self.checked_endpoint = model, None, None
        done = _("updated") if action == "updated" else _("registered")
        self.note(
            Step(
                "register",
                True,
                _("{action} {name} (modelId {id})").format(
                    action=done, name=model.model_name, id=model.model_id
                ),
            )
        )
        return _model_outcome(_("model {action}").format(action=done), model)

    @step("modify")
    def modify(
        self,
        model_id: str,
        model_name: str,
        registry_url: str,
        api_key: str | Secret | None = None,
    ) -> Outcome:
        """Overwrite a model's modelName, registryUrl and apiKey; shows old -> new values.

        The spec's modify overwrites apiKey, so one is always sent: empty
        ``api_key`` keeps the key the platform returned for this model, else
        LMREG_MODEL_API_KEY.
        """
        from ..models import ModelDraft

        current = self.client.find_model(model_id=model_id)
        key: Secret | None = secret_of(api_key) if api_key else None
        if key is None and current is not None and current.api_key:
            key = current.api_key
        if key is None:
            key = self.settings.require("model_api_key")
        draft = ModelDraft(
            model_name=model_name, registry_url=registry_url, api_key=key, model_id=model_id
        )
        model = self.client.modify_model(draft)
        self.model, self.target, self.checked_endpoint = model, None, None
        self.changes = _changes(current, model, key_changed=bool(api_key))
        self.note(
            Step(
                "modify",
                True,
                _("modified {name} (modelId {id})").format(
                    name=model.model_name, id=model.model_id
                ),
            )
        )
        outcome = _model_outcome(_("model modified"), model)
        outcome.rows = [(f, f"{old} → {new}") for f, old, new in self.changes] + outcome.rows
        return outcome

    def update(
        self,
        model_name: str,
        *,
        new_model_name: str = "",
        new_registry_url: str = "",
        api_key_from_env: bool = False,
    ) -> Outcome:
        """Modify the model called ``model_name``; empty new values keep the current ones.

        The apiKey sent is the current one, or LMREG_MODEL_API_KEY with ``api_key_from_env``.
        """
        current = self.client.find_model(name=model_name)
        if current is None:
            error = LmregError(
                _(
                    "no model named {name} in this account; list the models (notebook 04) "
                    "and use one of their names"
                ).format(name=repr(model_name.strip()))
            )
            self.note(Step("modify", False, str(error)))
            raise error
        key = self.settings.require("model_api_key") if api_key_from_env else None
        return self.modify(
            current.model_id,
            new_model_name.strip() or current.model_name,
            new_registry_url.strip() or current.registry_url,
            key,
        )

    def refresh(self) -> list[RegisteredModel]:
        """Query the account's models again (kept in :attr:`models`); records no step."""
        self.models = self.client.query_models()
        return self.models

    def find(self, *, model_id: str = "", model_name: str = "") -> RegisteredModel | None:
        """The account's model with this modelId or modelName (asks the platform)."""
        if model_id:
            return self.client.find_model(model_id=model_id)
        return self.client.find_model(name=model_name) if model_name.strip() else None

    @step("list models")
    def list_models(self, name_contains: str = "") -> Table:
        """List the account's models (apiKey masked, local times); checks ours is there."""
        self.models = self.client.query_models()
        if self.model is not None and not any(
            m.model_id == self.model.model_id for m in self.models
        ):
            raise LmregError(
                _(
                    "model {name} (modelId {id}) is not in the platform's list of models; "
                    "ask provider support"
                ).format(name=self.model.model_name, id=self.model.model_id)
            )
        count = len(self.models)
        self.note(
            Step(
                "list models",
                True,
                ngettext("{n} model in the account", "{n} models in the account", count).format(
                    n=count
                ),
            )
        )
        return models_table(self.models, name_contains)

    def models_frame(self, name_contains: str = "") -> Any:
        """The account's models as a pandas DataFrame (apiKey masked, times tz-aware UTC)."""
        from ..frames import models_frame

        self.list_models()
        return models_frame([m for m in self.models if name_contains.strip() in m.model_name])

    # -- the summary ---------------------------------------------------------


def models_table(models: Sequence[RegisteredModel], name_contains: str = "") -> Table:
    """The models as people read them: apiKey masked, times local with the zone."""
    columns = ["modelName", "modelId", "registryUrl", "apiKey"]
    # "updated" is also what was done to a model: the column's word is told apart by context.
    columns += [pgettext("column", "created"), pgettext("column", "updated")]
    rows = [
        [
            m.model_name,
            m.model_id,
            m.registry_url,
            m.api_key.masked,
            _local(m.create_time),
            _local(m.update_time),
        ]
        for m in models
        if name_contains.strip() in m.model_name
    ]
    return Table(columns, rows)


def _changes(
    old: RegisteredModel | None, new: RegisteredModel, *, key_changed: bool
) -> list[tuple[str, str, str]]:
    before = {
        "modelName": old.model_name if old else "?",
        "registryUrl": old.registry_url if old else "?",
    }
    after = {"modelName": new.model_name, "registryUrl": new.registry_url}
    rows = [(f, before[f], after[f]) for f in after if before[f] != after[f]]
    if key_changed:
        rows.append(("apiKey", _("(hidden)"), _("(new key, hidden)")))
    return rows


def _model_outcome(title: str, model: RegisteredModel) -> Outcome:
    rows = [
        (k, str(v))
        for k, v in model.summary().items()
        if v is not None and k not in ("createTime", "updateTime")
    ]
    # Times as the models table shows them: local, with the zone (the record keeps UTC).
    rows += [
        (pgettext("column", "created"), _local(model.create_time)),
        (pgettext("column", "updated"), _local(model.update_time)),
    ]
    rows += [(_("warning"), w.message) for w in url_warnings(model.registry_url)]
    return Outcome(title, rows, value=model)


def secret_of(value: str | Secret) -> Secret:
    return value if isinstance(value, Secret) else Secret(value)


def _local(value: datetime | None) -> str:
    return format_local_time(value) if value else _("unknown")
