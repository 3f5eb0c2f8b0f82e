"""The modify form: pick one of the account's models, change its fields, confirm, overwrite."""

from __future__ import annotations

import html
from collections.abc import Iterable

import ipywidgets as widgets

from ..display import Outcome
from ..i18n import _, format_local_time, pgettext
from ..models import RegisteredModel, model_name_key
from ..onboarding import Onboarding
from ..secret import Secret
from ..summary import StepName
from ..validate import check_api_key, check_model_name, check_registry_url
from ._common import LABEL_WIDTH, WIDE, Field, Form, password, registry_url_warnings, text

__all__ = ["ModifyForm", "changes", "name_taken"]


def name_taken(
    models: Iterable[RegisteredModel], current: RegisteredModel, new_name: str
) -> RegisteredModel | None:
    """Another model of the account already called ``new_name`` (as modelNames compare),
    or None: the platform refuses such a modify (40900), so the preview says it first."""
    wanted = model_name_key(new_name)
    return next(
        (
            m
            for m in models
            if m.model_id != current.model_id and model_name_key(m.model_name) == wanted
        ),
        None,
    )


def changes(
    old: RegisteredModel, new_name: str, new_url: str, new_key: str | Secret | None
) -> list[tuple[str, str]]:
    """The rows "field: old -> new" (or "unchanged") of a modify; apiKey only masked."""
    rows = []
    for field, before, after in (
        ("modelName", old.model_name, new_name.strip()),
        ("registryUrl", old.registry_url, new_url.strip()),
    ):
        shown = (
            _("{old} → {new}").format(old=before, new=after)
            if after != before
            else _("{value} (unchanged)").format(value=before)
        )
        rows.append((field, shown))
    if new_key:
        masked = new_key.masked if isinstance(new_key, Secret) else Secret(new_key).masked
        key_row = _("{old} → {new}").format(old=old.api_key.masked, new=masked)
    else:
        key_row = _("{value} (kept)").format(value=old.api_key.masked)
    rows.append(("apiKey", key_row))
    return rows


class ModifyForm(Form):
    """Choose a model from a dropdown; its fields are prefilled (apiKey never in clear).

    The spec's modify overwrites apiKey, so one is always sent: an empty apiKey
    field re-sends the key the platform returned for that model. Overwriting
    needs a second click on "Confirm overwrite"; what will change (old -> new)
    and then what did change replace each other below the buttons, newest only.
    """

    def __init__(self, run: Onboarding | None = None) -> None:
        self.run_: Onboarding = run or Onboarding("")
        self.models: dict[str, RegisteredModel] = {}
        self.select = widgets.Dropdown(description=_("model"), options=[])
        self.select.style.description_width = LABEL_WIDTH
        self.select.layout.width = WIDE
        self.select.add_class("lmreg-model-select")
        self.model_name = text("modelName", wide=True)
        self.registry_url = text("registryUrl", wide=True)
        self.api_key = password("apiKey", wide=True, placeholder=_("empty: keep the current key"))
        button = widgets.Button(description=_("Modify…"), button_style="warning")
        button.add_class("lmreg-modify-button")
        self.confirm = widgets.Button(description=_("Confirm overwrite"), button_style="danger")
        self.confirm.add_class("lmreg-confirm-button")
        self.confirm.layout.display = "none"
        self.confirm.on_click(lambda _b: self.apply())
        super().__init__(
            "lmreg-modify-form",
            [
                Field("model-name", self.model_name, check_model_name),
                Field(
                    "registry-url",
                    self.registry_url,
                    check_registry_url,
                    warn=registry_url_warnings,
                ),
                Field("api-key", self.api_key, check_api_key, optional=True),
            ],
            button,
            after=[self.confirm],
        )
        self.container.children = (self.select, *self.container.children)
        self.select.observe(lambda _c: self._prefill(), names="value")
        self._key: str = ""
        self.load()

    def load(self) -> None:
        """Fill the dropdown with the account's models (queries the platform)."""
        self.run(self._load)

    def _load(self, keep: str = "") -> None:
        self.run_.refresh()
        self.models = {m.model_id: m for m in self.run_.models}
        options = [(f"{m.model_name} ({m.model_id})", m.model_id) for m in self.run_.models]
        # Replacing the options resets the choice; put the modified model back.
        self.select.options = options
        if keep in self.models:
            self.select.value = keep
        self._prefill()

    def _prefill(self) -> None:
        model = self.models.get(self.select.value or "")
        self.model_name.value = model.model_name if model else ""
        self.registry_url.value = model.registry_url if model else ""
        self.api_key.value = ""
        self.confirm.layout.display = "none"

    def submit(self) -> None:
        """First click: validate and show what will change, old -> new; ask to confirm."""
        self._key = self.fields["api-key"].take()
        self.result.clear_output()  # the previous outcome gives way to this confirmation
        self.confirm.layout.display = "none"
        model = self.models.get(self.select.value or "")
        if model is None:
            first = html.escape(_("choose a model first"))
            self.message.value = f"<span style='color:#cf222e'>{first}</span>"
            return
        if not self.valid(taken={"api-key": self._key}):
            self.message.value = ""
            return
        taken = name_taken(self.models.values(), model, self.model_name.value)
        if taken is not None:
            # The platform would refuse it at "confirm": say so now, before asking to confirm.
            said = html.escape(
                _(
                    "modelName {name} is already used by another model of this account "
                    "({model_id}): choose another name"
                ).format(name=repr(self.model_name.value.strip()), model_id=taken.model_id)
            )
            self.message.value = f"<span style='color:#cf222e'>{said}</span>"
            return
        rows = changes(model, self.model_name.value, self.registry_url.value, self._key)
        table = "".join(
            f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(k)}</th>"
            f"<td style='text-align:left'>{html.escape(v)}</td></tr>"
            for k, v in rows
        )
        question = _("Overwrite {name} ({model_id})? Click Confirm overwrite.").format(
            name=model.model_name, model_id=model.model_id
        )
        self.message.value = (
            f"<div class='lmreg-confirm-question'>{html.escape(question)}</div>"
            f"<table class='lmreg-changes'>{table}</table>"
        )
        self.confirm.layout.display = None

    def apply(self) -> Outcome | None:
        """Second click: overwrite the model; show old -> new and refresh the dropdown."""
        model_id = self.select.value or ""
        old = self.models.get(model_id)
        key, self._key = self._key, ""
        self.confirm.layout.display = "none"
        name, url = self.model_name.value, self.registry_url.value

        def action() -> Outcome:
            done = self.run_.modify(model_id, name, url, key or None)
            self._load(keep=model_id)  # the dropdown shows the new name
            model = done.value
            if old is None or not isinstance(model, RegisteredModel):
                return done
            # What a person checks: each field old -> new, then when, in local time, then
            # whether the address answers a chat (its verdict, with the fix or the cause).
            rows = [*changes(old, name, url, key or None), ("modelId", model.model_id)]
            if model.update_time is not None:
                rows.append((pgettext("column", "updated"), format_local_time(model.update_time)))
            rows += [row for row in done.rows if row[0] == _("chat at this address")]
            return Outcome(done.title, rows, ok=done.ok, value=model, warning=done.warning)

        return self.run(action, step=StepName.MODIFY)
