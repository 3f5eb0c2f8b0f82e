"""The modify form: pick one of the account's models, change its fields, confirm, overwrite."""

from __future__ import annotations

import html

import ipywidgets as widgets

from ..models import RegisteredModel
from ..onboarding import Onboarding, Outcome
from ..validate import check_api_key, check_model_name, check_registry_url
from ._common import Field, Form, registry_url_warnings

__all__ = ["ModifyForm"]


class ModifyForm(Form):
    """Choose a model from a dropdown; its fields are prefilled (apiKey never in clear).

    The spec's modify overwrites apiKey, so one is always sent: an empty apiKey
    field re-sends the key the platform returned for that model. Overwriting
    needs a second click on "Confirm overwrite".
    """

    def __init__(self, run: Onboarding | None = None) -> None:
        self.run_ = run or Onboarding("")
        self.models: dict[str, RegisteredModel] = {}
        self.select = widgets.Dropdown(description="model", options=[])
        self.select.add_class("lmreg-model-select")
        self.model_name = widgets.Text(description="modelName")
        self.registry_url = widgets.Text(description="registryUrl")
        self.api_key = widgets.Password(
            description="apiKey", placeholder="empty: keep the current key"
        )
        button = widgets.Button(description="Modify…", button_style="warning")
        button.add_class("lmreg-modify-button")
        self.confirm = widgets.Button(description="Confirm overwrite", button_style="danger")
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
            self.confirm,
        )
        self.container.children = (self.select, *self.container.children)
        self.select.observe(lambda _c: self._prefill(), names="value")
        self._key: str = ""
        self.load()

    def load(self) -> None:
        """Fill the dropdown with the account's models (queries the platform)."""
        self.run(self._load)

    def _load(self) -> None:
        self.run_.refresh()
        self.models = {m.model_id: m for m in self.run_.models}
        self.select.options = [
            (f"{m.model_name} ({m.model_id})", m.model_id) for m in self.run_.models
        ]
        self._prefill()

    def _prefill(self) -> None:
        model = self.models.get(self.select.value or "")
        self.model_name.value = model.model_name if model else ""
        self.registry_url.value = model.registry_url if model else ""
        self.api_key.value = ""
        self.confirm.layout.display = "none"

    def submit(self) -> None:
        """First click: validate and ask for confirmation."""
        self._key = self.fields["api-key"].take()
        model = self.models.get(self.select.value or "")
        if model is None:
            self.message.value = "<span style='color:#cf222e'>choose a model first</span>"
            return
        if not self.valid(taken={"api-key": self._key}):
            return
        key_note = "a new apiKey" if self._key else "its current apiKey"
        self.message.value = html.escape(
            f"This overwrites modelName, registryUrl and apiKey of {model.model_name} "
            f"({model.model_id}) with {key_note}. Click Confirm overwrite."
        )
        self.confirm.layout.display = None

    def apply(self) -> Outcome | None:
        """Second click: overwrite the model."""
        model_id = self.select.value or ""
        key, self._key = self._key, ""
        self.confirm.layout.display = "none"
        return self.run(
            lambda: self.run_.modify(
                model_id, self.model_name.value, self.registry_url.value, key or None
            )
        )
