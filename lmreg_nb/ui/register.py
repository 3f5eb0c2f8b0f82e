"""The register form: modelName, registryUrl, apiKey; reserved fields folded away."""

from __future__ import annotations

import ipywidgets as widgets

from ..display import Outcome
from ..i18n import _
from ..onboarding import Onboarding
from ..summary import StepName
from ..validate import check_api_key, check_model_name, check_registry_url
from ._common import LABEL_WIDTH, WIDE, Field, Form, password, registry_url_warnings, text

__all__ = ["RegisterForm"]


def _area(description: str, placeholder: str = "") -> widgets.Textarea:
    area = widgets.Textarea(description=description, placeholder=placeholder)
    area.style.description_width = LABEL_WIDTH
    area.layout.width = WIDE
    return area


class RegisterForm(Form):
    """Register a model; apiKey empty means LMREG_MODEL_API_KEY (never prefilled in clear).

    modelName is the name the platform shows (``model_name`` when given, else
    empty): it is not LMREG_MODEL_NAME, the name the school's server expects in
    the body field ``model``. ``update_existing`` True updates a model of the
    same name instead of failing.
    """

    def __init__(
        self, run: Onboarding | None = None, *, model_name: str = "", update_existing: bool = False
    ) -> None:
        self.run_: Onboarding = run or Onboarding("")
        settings = self.run_.settings
        self.update_existing = update_existing
        self.model_name = text(
            "modelName", value=model_name, wide=True, placeholder=_("e.g. school-assistant")
        )
        self.registry_url = text(
            "registryUrl",
            value=settings.model_url or "",
            wide=True,
            placeholder="https://llm.school.edu/v1/chat/completions",
        )
        has_key = settings.model_api_key is not None
        self.api_key = password(
            "apiKey",
            value="",
            wide=True,
            placeholder=_("empty: use LMREG_MODEL_API_KEY") if has_key else "",
        )
        self.req_params = _area("reqParams", _("one per line"))
        self.req_example = _area("reqExample", _("a curl request"))
        self.res_example = _area("resExample")
        reserved = widgets.Accordion(
            children=[widgets.VBox([self.req_params, self.req_example, self.res_example])],
            selected_index=None,
        )
        reserved.layout.width = WIDE
        reserved.set_title(0, _("Reserved fields (not supported yet by the platform)"))
        button = widgets.Button(description=_("Register"), button_style="primary")
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
            outcome: Outcome = self.run_.register(
                self.model_name.value,
                self.registry_url.value,
                key or None,
                update_existing=self.update_existing,
                req_params=params or None,
                req_example=self.req_example.value or None,
                res_example=self.res_example.value or None,
            )
            return outcome  # the address's own verdict included (one chat to it)

        return self.run(action, step=StepName.REGISTER)
