"""Which chat endpoint an onboarding calls: one holder for the registered model and the
address given to the checks, so the checks, the chat box and capacity agree.

Once a model is registered (or named with ``use_registered``), it is called as the
platform will call it (:func:`.endpoint_steps.registered`); an address given to the
checks (notebook 05, before registering) is kept for the chat and capacity after them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from . import endpoint_steps as endpoint_

if TYPE_CHECKING:
    from ..models import RegisteredModel
    from ..probe import Target
    from ..registry.client import RegistryClient
    from ..settings import Settings

__all__ = ["ChatEndpoint"]


class ChatEndpoint:
    """The endpoint in use: the registered model (resolved once), or an address given.

    ``settings()`` and ``client()`` give the onboarding's current ones (they change with
    the credentials); the client is asked for only to resolve a registered model
    (notebook 05 checks an address without the platform's credentials).
    """

    def __init__(
        self, settings: Callable[[], Settings], client: Callable[[], RegistryClient]
    ) -> None:
        self._settings, self._client = settings, client
        #: The registered model the checks, chat and capacity call (None: not registered).
        self.model: RegisteredModel | None = None
        self._target: Target | None = None  # ``model`` as the platform calls it, once resolved
        self._given: tuple[str, str] | None = None  # (url, model) given to the last checks

    @property
    def target(self) -> Target | None:
        """The registered model as resolved so far (None: not yet, or none registered)."""
        return self._target

    def use(self, model: RegisteredModel) -> None:
        """Call ``model`` from now on (registered, modified, or named): nothing older holds."""
        self.model, self._target, self._given = model, None, None

    def forget_key(self) -> None:
        """Other credentials: the registered model is resolved again when next called."""
        self._target = None

    def resolve(self, model_url: str = "", model: str = "") -> Target:
        """The endpoint to call: given, else the last checks' address, else the registered
        model's, else the settings'."""
        if not model_url.strip() and self._given is not None:
            model_url, model = self._given[0], model or self._given[1]
        settings = self._settings()
        if self.model is not None:
            self._target = endpoint_.registered(settings, self._client(), self.model, self._target)
        return endpoint_.endpoint(settings, self._target if self.model else None, model_url, model)

    def checked(self, model_url: str = "", model: str = "") -> Target:
        """The endpoint for the checks; an address given is kept for the chat and capacity."""
        target = self.resolve(model_url, model)
        if model_url.strip():
            self._given = (target.url, model.strip())
        return target
