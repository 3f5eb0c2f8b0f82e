"""The chat endpoint as the platform will call it: what is registered under a modelName.

The platform calls ``registryUrl`` with the registered ``apiKey`` and a
``model`` it can only take from the registration, so ``check --registered NAME``
reads all three from query-models instead of LMREG_MODEL_URL and
LMREG_MODEL_API_KEY. The body ``model`` is LMREG_MODEL_NAME when it is set (the
school's own name for the model), else NAME; model-name-served then also
tries NAME itself (``registered_name``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import NotFoundError, ValidationError
from ..i18n import _
from ..secret import Secret

if TYPE_CHECKING:
    from ..client import RegistryClient
    from ..settings import Settings

__all__ = ["ChatTarget", "registered_target"]


@dataclass(frozen=True)
class ChatTarget:
    """Where the platform will send chat requests for one registered model."""

    url: str
    api_key: Secret
    model: str  # the body `model`: LMREG_MODEL_NAME, else the registered modelName
    registered_name: str


def registered_target(
    settings: Settings, name: str, client: RegistryClient | None = None
) -> ChatTarget:
    """The registered model ``name`` as a :class:`ChatTarget` (one query-models call).

    Raises NotFoundError when the account has no such model, ValidationError
    when ``name`` is empty; the client's errors (token, network) pass through.
    """
    if not isinstance(name, str) or not name.strip():
        raise ValidationError("modelName", _("give the registered modelName to check"))
    if client is None:
        from ..client import RegistryClient

        client = RegistryClient(settings)
    found = client.find_model(name=name)
    if found is None:
        raise NotFoundError(
            _(
                "no model named '{name}' is registered in this account; list them with "
                "`lmreg-nb models`"
            ).format(name=name.strip()),
            operation="query-models",
        )
    key = found.api_key
    if not key:
        raise ValidationError(
            "apiKey",
            _(
                "the platform did not return the apiKey registered for '{name}', so the "
                "check cannot use it"
            ).format(name=found.model_name),
        )
    body_model = (settings.model_name or "").strip() or found.model_name.strip()
    return ChatTarget(
        url=found.registry_url,
        api_key=key if isinstance(key, Secret) else Secret(str(key)),
        model=body_model,
        registered_name=found.model_name.strip(),
    )
