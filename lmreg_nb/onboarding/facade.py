"""The onboarding facade: one method per notebook cell, every step's outcome recorded.

The onboarding notebook calls one method of :class:`Onboarding` per cell; the
forms of :mod:`lmreg_nb.ui` call the same methods, so a headless run and an
interactive one leave the same trace. In a headless run a failing step is
recorded and shown as a failed outcome (the cell does not raise), later steps
are skipped, and :meth:`Onboarding.finish` always records the summary.
Interactive callers (the forms) get the toolkit error raised, one line.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..errors import LmregError, ValidationError
from ..i18n import _, current_language, format_local_time, pgettext, set_language
from ..secret import Secret, mask_text
from ..summary import Step, Summary, build_summary
from .contact import Contact, check_contact
from .display import Outcome
from .endpoint import EndpointSteps
from .registry import RegistrySteps, secret_of
from .step import step

if TYPE_CHECKING:
    from ..client import RegistryClient
    from ..models import RegisteredModel, Token
    from ..settings import Settings

__all__ = ["Onboarding"]

log = logging.getLogger("lmreg_nb")


class Onboarding(RegistrySteps, EndpointSteps):
    """One school's onboarding: each method is one step, recorded in :attr:`steps`."""

    def __init__(
        self,
        school: str,
        contact: Contact | None = None,
        *,
        settings: Settings | None = None,
        client: RegistryClient | None = None,
        class_size: int = 0,
    ) -> None:
        super().__init__()
        self.school = school.strip()
        self.contact = contact
        self._settings = settings
        self._client = client
        self.steps: list[Step] = []
        self.models: list[RegisteredModel] = []
        self.token: Token | None = None
        self.model: RegisteredModel | None = None
        #: The last modify's changes: (field, old, new) for each field sent.
        self.changes: list[tuple[str, str, str]] = []
        self.class_size = max(0, int(class_size or 0))
        #: True when the notebook's parameters drive the run (no forms); set by :meth:`begin`.
        self.headless = False
        #: The first step that failed in a headless run (later steps are skipped).
        self.stopped_by: str | None = None
        # The settings given (or None: the environment's), to go back to after use_credentials.
        self._given_settings = settings
        self._live_id: str | None = None  # the live summary's display id (interactive runs)

    @classmethod
    def begin(
        cls,
        school: str = "",
        contact_name: str = "",
        contact_mobile: str = "",
        contact_email: str = "",
        *,
        class_size: int = 0,
        lang: str = "",
        settings: Settings | None = None,
    ) -> Onboarding:
        """Begin an onboarding from the notebook's parameters.

        ``lang`` (empty: LMREG_LANG or the locale) chooses the language. All
        contact parameters empty: an interactive run (the notebook shows forms).
        Otherwise a headless run whose first step checks the school and contact.
        """
        set_language(lang.strip() or _configured_language(settings))
        try:
            size, bad_size = _class_size(class_size), None
        except ValidationError as exc:
            size, bad_size = 0, exc
        if not any(str(x).strip() for x in (school, contact_name, contact_mobile, contact_email)):
            if bad_size is not None:
                raise bad_size
            return cls("", settings=settings, class_size=size)
        run = cls(school, settings=settings, class_size=size)
        run.headless = True
        if bad_size is not None:
            # A bad parameter stops the run before anything is sent, like a bad contact card.
            run.note(Step("parameters", False, str(bad_size)))
        run.set_contact(contact_name, contact_mobile, contact_email, school)
        return run

    # -- configuration -------------------------------------------------------
    @property
    def settings(self) -> Settings:
        """The settings (from the environment unless given)."""
        if self._settings is None:
            from ..settings import Settings

            self._settings = Settings.load()
        return self._settings

    @property
    def client(self) -> RegistryClient:
        """The registry client, created on first use."""
        if self._client is None:
            from ..client import RegistryClient

            self._client = RegistryClient(self.settings)
        return self._client

    def failure_text(self, exc: BaseException) -> str:
        """One line for a failed step, with every known secret masked."""
        text = str(exc) if isinstance(exc, LmregError) else f"{type(exc).__name__}: {exc}"
        try:
            current = self.settings
        except LmregError:
            current = None
        secrets: list[Secret] = []
        if current is not None:
            found = (current.app_secret, current.token, current.model_api_key)
            secrets = [s for s in found if s]
        if self.target is not None:
            secrets.append(self.target.api_key)  # the registered key may differ from ours
        return " ".join(mask_text(text, secrets).split()) or type(exc).__name__

    def note(self, done: Step) -> None:
        """Record a step's outcome; a step run twice (a form clicked again) keeps its latest."""
        if done.passed and done.name in _USES_TOKEN and self.token is None:
            # Register clicked before Connect: the client got a token on its own.
            self._take_token()
        self.steps = [s for s in self.steps if s.name != done.name] + [done]
        if not done.passed and self.headless and self.stopped_by is None:
            self.stopped_by = done.name
        log.info("onboarding step %s: %s", done.name, "passed" if done.passed else "failed")
        if self._live_id is not None:
            self._record(update=True)

    # -- steps ---------------------------------------------------------------
    def contact_card(self) -> Outcome:
        """The contact card as shown in the notebook (or why there is none)."""
        if self.contact is None:
            failed = next((s for s in self.steps if s.name == "contact card"), None)
            if failed is not None:
                return Outcome(_("contact card: failed"), [(_("error"), failed.detail)], ok=False)
            return Outcome(_("no contact card yet: fill in the form below"), ok=False, pending=True)
        return Outcome(
            _("contact for {school}").format(school=self.school or _("the school")),
            [
                (_("name"), self.contact.name),
                (_("mobile"), self.contact.mobile),
                (_("e-mail"), self.contact.email),
            ],
            value=self.contact,
        )

    @step("contact card")
    def set_contact(self, name: str, mobile: str, email: str, school: str = "") -> Outcome:
        """Validate and keep a contact card (and the school, when given): the form's action."""
        if school.strip():
            self.school = school.strip()
        errors = [] if self.school else [
            ValidationError("school", _("must name the school, e.g. Example Middle School"))
        ]  # fmt: skip
        try:
            contact = check_contact(name, mobile, email)
        except ValidationError as exc:
            errors.append(exc)
        if errors:  # every mistake at once: a batch row is fixed in one go
            raise ValidationError.every(errors)
        self.contact = contact
        self.note(
            Step(
                "contact card",
                True,
                pgettext("list separator", ", ").join(
                    [self.contact.name, self.contact.mobile, self.contact.email]
                ),
            )
        )
        return self.contact_card()

    @step("token")
    def connect(self) -> Outcome:
        """Get a token (cached or exchanged for appId/appSecret)."""
        token = self._take_token()
        expires = format_local_time(token.expires_at)
        return Outcome(
            _("token obtained"),
            [
                (_("platform"), str(self.settings.base_url)),
                (_("env"), token.env),
                (_("token"), token.token.masked),
                (_("expires"), expires),
            ],
            value=token,
        )

    def _take_token(self) -> Token:
        token = self.token = self.client.token()
        expires = format_local_time(token.expires_at)
        self.note(
            Step("token", True, _("env {env}, expires {when}").format(env=token.env, when=expires))
        )
        return token

    def use_credentials(self, app_id: str, app_secret: str | Secret | None) -> None:
        """Use this appId (and appSecret, when given) instead of the environment's.

        An empty appSecret goes back to LMREG_APP_SECRET, never to one typed before.
        """
        from ..settings import Settings

        base = self._given_settings or Settings.load()
        changes: dict[str, Any] = {"app_id": app_id.strip() or base.app_id}
        typed = {"app_id"} if app_id.strip() and app_id.strip() != base.app_id else set()
        if app_secret:
            changes["app_secret"] = secret_of(app_secret)
            # The environment's secret handed back by the form is not a typed one.
            typed |= set() if changes["app_secret"] == base.app_secret else {"app_secret"}
        changes["typed"] = typed
        # A token from other credentials must not be reused: drop LMREG_TOKEN too.
        self._settings = base.with_(token=None, env=None, **changes)
        if self._client is not None:
            self._client.close()
        self._client = None
        self.target = self.token = None

    def summary(self, *, generated_at: datetime | None = None) -> Summary:
        """The ``summary`` of this run: status and go-live decided from what happened."""
        report = self.report
        try:
            base_url = self.settings.base_url
        except LmregError:
            base_url = None
        return build_summary(
            school=self.school,
            contact=self.contact,
            base_url=base_url,
            env=self.token.env if self.token else None,
            steps=self.steps,
            models=self.models or ([self.model] if self.model else []),
            checks=self.checks,
            # The probe's figures: the load test's, or those of its single streamed request.
            performance=report.summary if report is not None else None,
            capacity=self.capacity_record(),
            class_size=self.class_size or None,
            lang=current_language(),
            generated_at=generated_at,
            target_urls=[self.model.registry_url] if self.model else [],
        )

    def finish(self) -> None:
        """Record the ``summary``: always, also when steps failed or never ran.

        Interactive, the recorded summary is rewritten in place each time a later
        step finishes, so it never says more than what was done.
        """
        import secrets

        if not self.headless and self._live_id is None:
            self._live_id = f"lmreg-summary-{secrets.token_hex(6)}"
        self._record(update=False)

    def _record(self, *, update: bool) -> None:
        from ..records import record

        record("summary", self.summary(), display_id=self._live_id, update=update)


#: Steps that talk to the platform: once one passed, the client holds a token.
_USES_TOKEN = frozenset({"register", "modify", "list models"})


def _configured_language(settings: Settings | None) -> str | None:
    """LMREG_LANG from the settings (a .env file included), or None: the locale decides."""
    from ..settings import Settings

    try:
        current = settings or Settings.load()
    except LmregError:
        return None
    lang = getattr(current, "lang", None)
    return lang if isinstance(lang, str) and lang else None


def _class_size(value: object) -> int:
    try:
        size = int(str(value).strip() or 0)
    except ValueError:
        raise ValidationError(
            "class_size", _("must be a whole number of students, e.g. 40 (0 skips the test)")
        ) from None
    if size < 0:
        raise ValidationError("class_size", _("must be 0 or more"))
    return size
