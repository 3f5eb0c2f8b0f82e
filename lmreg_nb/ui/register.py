"""The register form: modelName, registryUrl, apiKey; reserved fields folded away."""

from __future__ import annotations

import ipywidgets as widgets

from ..onboarding import Onboarding, Outcome
from ..validate import check_api_key, check_model_name, check_registry_url
from ._common import Field, Form, registry_url_warnings

__all__ = ["RegisterForm"]


class RegisterForm(Form):
    """Register a model; apiKey empty means LMREG_MODEL_API_KEY (never prefilled in clear).

    ``update_existing`` True updates a model of the same name instead of failing.
    """

    def __init__(
        self, run: Onboarding | None = None, *, model_name: str = "", update_existing: bool = False
    ) -> None:
        self.run_ = run or Onboarding("")
        settings = self.run_.settings
        self.update_existing = update_existing
        self.model_name = widgets.Text(
            value=model_name or settings.model_name or "", description="modelName"
        )
        self.registry_url = widgets.Text(
            value=settings.model_url or "",
            description="registryUrl",
            placeholder="https://llm.school.edu/v1/chat/completions",
        )
        has_key = settings.model_api_key is not None
        self.api_key = widgets.Password(
            value="",
            description="apiKey",
            placeholder="empty: use LMREG_MODEL_API_KEY" if has_key else "",
        )
        self.req_params = widgets.Textarea(description="reqParams", placeholder="one per line")
        self.req_example = widgets.Textarea(description="reqExample", placeholder="a curl request")
        self.res_example = widgets.Textarea(description="resExample")
        reserved = widgets.Accordion(
            children=[widgets.VBox([self.req_params, self.req_example, self.res_example])],
            selected_index=None,
        )
        reserved.set_title(0, "Reserved fields (not supported yet by the platform)")
        button = widgets.Button(description="Register", button_style="primary")
        button.add_class("lmreg-register-button")
        super().__init__(
            "lmreg-register-form",
            [
                Field("model-name", self.model_name, check_model_name),
                Field(
                    "registry-url",
                    self.registry_url,
                    check_registry_url,
                    warn=registry_url_warnings,
                ),
                Field("api-key", self.api_key, check_api_key, optional=has_key),
            ],
            button,
            reserved,
        )

    def submit(self) -> Outcome | None:
        """Read and clear apiKey, validate, then register."""
        key = self.fields["api-key"].take()
        if not self.valid(taken={"api-key": key}):
            return None
        params = [p.strip() for p in self.req_params.value.splitlines() if p.strip()]

        def action() -> Outcome:
            return self.run_.register(
                self.model_name.value,
                self.registry_url.value,
                key or None,
                update_existing=self.update_existing,
                req_params=params or None,
                req_example=self.req_example.value or None,
                res_example=self.res_example.value or None,
            )

        return self.run(action)
