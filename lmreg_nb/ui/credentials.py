"""The credentials form: appId and appSecret in, a token out; the secret is cleared at once."""

from __future__ import annotations

import ipywidgets as widgets

from ..display import Outcome
from ..i18n import _, format_local_time
from ..onboarding import Onboarding
from ..onboarding.configuration import cached_token
from ..summary import StepName
from ._common import Field, Form, password, required, text

__all__ = ["CredentialsForm"]


class CredentialsForm(Form):
    """appId (prefilled from LMREG_APP_ID) and appSecret; Connect gets a token.

    Like huggingface_hub's old ``notebook_login``, the click handler reads the
    password field and clears it before anything else, so the secret is never
    saved with the notebook. Empty appSecret means LMREG_APP_SECRET, on every
    click: a wrong secret typed once is not kept for the next try.
    """

    def __init__(self, run: Onboarding | None = None) -> None:
        self.run_: Onboarding = run or Onboarding("")
        settings = self.run_.settings
        # The environment's secret, kept apart from what is typed into the field.
        self._env_secret = settings.app_secret
        # A token from an earlier Connect (notebook 01) serves without the secret.
        cached = cached_token(settings) if self._env_secret is None else None
        app_id = settings.app_id or (cached[0] if cached else "")
        self.app_id = text("appId", value=app_id, wide=True)
        if self._env_secret:
            hint = _("empty: use LMREG_APP_SECRET")
        elif cached is not None:
            hint = _("empty: use the cached token, valid until {when}").format(
                when=format_local_time(cached[1].expires_at)
            )
        else:
            hint = ""
        self.app_secret = password("appSecret", value="", wide=True, placeholder=hint)
        self.cached = cached
        button = widgets.Button(description=_("Connect"), button_style="primary")
        button.add_class("lmreg-connect-button")
        super().__init__(
            "lmreg-credentials-form",
            [
                Field(
                    "app-id",
                    self.app_id,
                    required("appId", _("enter the appId the provider gave you")),
                ),
                Field(
                    "app-secret",
                    self.app_secret,
                    required("appSecret", _("enter the appSecret the provider gave you")),
                    optional=self._env_secret is not None or cached is not None,
                ),
            ],
            button,
        )

    def submit(self) -> Outcome | None:
        """Read and clear the secret, then exchange the credentials for a token."""
        secret = self.fields["app-secret"].take()
        if not self.valid(taken={"app-secret": secret}):
            return None

        def action() -> Outcome:
            self.run_.use_credentials(self.app_id.value, secret or self._env_secret)
            return self.run_.connect()

        return self.run(action, step=StepName.TOKEN)
