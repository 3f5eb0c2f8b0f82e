"""The credentials form: appId and appSecret in, a token out; the secret is cleared at once."""

from __future__ import annotations

import ipywidgets as widgets

from ..onboarding import Onboarding, Outcome
from ._common import Field, Form, required

__all__ = ["CredentialsForm"]


class CredentialsForm(Form):
    """appId (prefilled from LMREG_APP_ID) and appSecret; Connect gets a token.

    Like huggingface_hub's old ``notebook_login``, the click handler reads the
    password field and clears it before anything else, so the secret is never
    saved with the notebook. Empty appSecret means LMREG_APP_SECRET.
    """

    def __init__(self, run: Onboarding | None = None) -> None:
        self.run_ = run or Onboarding("")
        settings = self.run_.settings
        self.app_id = widgets.Text(value=settings.app_id or "", description="appId")
        self.app_secret = widgets.Password(
            value="",
            description="appSecret",
            placeholder="empty: use LMREG_APP_SECRET" if settings.app_secret else "",
        )
        button = widgets.Button(description="Connect", button_style="primary")
        button.add_class("lmreg-connect-button")
        super().__init__(
            "lmreg-credentials-form",
            [
                Field(
                    "app-id",
                    self.app_id,
                    required("appId", "enter the appId the provider gave you"),
                ),
                Field("app-secret", self.app_secret),
            ],
            button,
        )

    def submit(self) -> Outcome | None:
        """Read and clear the secret, then exchange the credentials for a token."""
        secret = self.fields["app-secret"].take()
        if not self.valid(taken={"app-secret": secret}):
            return None

        def action() -> Outcome:
            self.run_.use_credentials(self.app_id.value, secret or None)
            return self.run_.connect()

        return self.run(action)
