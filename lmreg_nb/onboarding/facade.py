"""The onboarding facade: one method per notebook cell, every step's outcome recorded.

The onboarding notebook calls one method of :class:`Onboarding` per cell; the
forms of :mod:`lmreg_nb.ui` call the same methods, so a headless run and an
interactive one leave the same trace. In a headless run a failing step is
recorded and shown as a failed outcome (the cell does not raise), later steps
are skipped, and :meth:`Onboarding.finish` always records the summary.
Interactive callers (the forms) get the toolkit error raised, one line.

The work is done by plain functions (:mod:`.registry_steps`, :mod:`.endpoint_steps`)
that take the client and settings explicitly; the class keeps the run's state.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Unpack

from ..display import Outcome, Table
from ..errors import LmregError, ValidationError
from ..i18n import _, current_language, pgettext, set_language
from ..secret import Secret
from ..summary import CapacityRecord, Check, Step, StepName, Summary, build_summary
from . import endpoint_steps as endpoint_
from . import registry_steps as registry_
from .chat_endpoint import ChatEndpoint
from .contact import Contact, card_outcome, check_contact
from .live import StepView
from .parameters import (
    checked_workload,
    class_size_of,
    configured_language,
    context_need_of,
    lesson_tokens_of,
    max_tokens_of,
    workload_of,
)
from .step import failure_line, step

if TYPE_CHECKING:
    from ..models import RegisteredModel, Token
    from ..probe import EndpointReport, Target
    from ..probe.load.capacity import CapacityResult, Progress
    from ..probe.load.workload import WorkloadSpec
    from ..registry.client import RegistryClient
    from ..settings import Settings

__all__ = ["Onboarding"]

log = logging.getLogger("lmreg_nb")

#: Steps that talk to the platform: once one passed, the client holds a token.
_USES_TOKEN = frozenset({StepName.REGISTER, StepName.MODIFY, StepName.LIST_MODELS})


class Onboarding:
    """One school's onboarding: each method is one step, recorded in :attr:`steps`."""

    def __init__(
        self,
        school: str,
        contact: Contact | None = None,
        *,
        settings: Settings | None = None,
        client: RegistryClient | None = None,
        class_size: int = 0,
        context_need: int | None = None,
        lesson_tokens: int | None = None,
        max_tokens: int | None = None,
    ) -> None:
        self.school = school.strip()
        self.contact = contact
        self._settings = settings
        self._client = client
        self.steps: list[Step] = []
        self.models: list[RegisteredModel] = []
        self.token: Token | None = None
        #: The last modify's changes: (field, old, new) for each field sent.
        self.changes: list[registry_.Change] = []
        self.class_size = max(0, int(class_size or 0))
        #: Tokens of the longest prompt the course apps send (None: the check's default).
        self.context_need = context_need
        #: Tokens of the lesson the load test and capacity send (None: the default, 1500).
        self.lesson_tokens = lesson_tokens
        #: Tokens of each reply the load test and capacity ask for (None: the default, 300).
        self.max_tokens = max_tokens
        #: True when the notebook's parameters drive the run (no forms); set by :meth:`begin`.
        self.headless = False
        #: The first step that failed in a headless run (later steps are skipped).
        self.stopped_by: StepName | None = None
        # The settings given (or None: the environment's), to go back to after use_credentials.
        self._given_settings = settings
        self._live_id: str | None = None  # the live summary's display id (interactive runs)
        self._views: list[StepView] = []  # cells that follow the run (interactive runs)
        #: The chat endpoint in use: the registered model, or the address given to the checks.
        self.chat_endpoint = ChatEndpoint(lambda: self.settings, lambda: self.client)
        self.report: EndpointReport | None = None
        self.checks: list[Check] = []
        self.chat_prompt: str | None = None
        self.chat_reply: str | None = None
        self.chat_error: str | None = None
        self.capacity_result: CapacityResult | None = None
        self._capacity_size: int | None = None
        # The workload made from (context_need, lesson_tokens, max_tokens): made once.
        self._workload: tuple[tuple[int | None, ...], WorkloadSpec] | None = None

    @classmethod
    def begin(
        cls,
        school: str = "",
        contact_name: str = "",
        contact_mobile: str = "",
        contact_email: str = "",
        *,
        class_size: int = 0,
        context_need: int | None = None,
        lesson_tokens: int | None = None,
        max_tokens: int | None = None,
        lang: str = "",
        settings: Settings | None = None,
    ) -> Onboarding:
        """Begin an onboarding from the notebook's parameters (``lang`` empty: LMREG_LANG or
        the locale). All contact parameters empty: an interactive run (the notebook shows
        forms); else a headless run whose first step checks the school and contact.
        ``context_need``: tokens of the longest prompt the course apps send (None: 8000,
        the context-window check's default); ``lesson_tokens``: the lesson shared by the class
        in the load test and capacity (None: 1500); ``max_tokens``: each reply's (None: 300)."""
        set_language(lang.strip() or configured_language(settings))
        size, bad_size = class_size_of(class_size)
        need, bad_need = context_need_of(context_need)
        lesson, bad_lesson = lesson_tokens_of(lesson_tokens)
        reply, bad_reply = max_tokens_of(max_tokens)
        bad_size = bad_size or bad_need or bad_lesson or bad_reply
        spec: WorkloadSpec | None = None
        if bad_size is None:
            spec, bad_size = checked_workload(need, lesson, reply)
        given = (school, contact_name, contact_mobile, contact_email)
        interactive = not any(str(x).strip() for x in given)
        if interactive and bad_size is not None:
            raise bad_size
        run = cls(
            "" if interactive else school,
            settings=settings,
            class_size=size,
            context_need=need,
            lesson_tokens=lesson,
            max_tokens=reply,
        )
        if spec is not None:
            run._workload = ((need, lesson, reply), spec)  # checked once, here
        if interactive:
            return run
        run.headless = True
        if bad_size is not None:
            # A bad parameter stops the run before anything is sent, like a bad contact card.
            run.note(Step(StepName.PARAMETERS, False, str(bad_size)))
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
            from ..registry.client import RegistryClient

            self._client = RegistryClient(self.settings)
        return self._client

    def failure_text(self, exc: BaseException) -> str:
        """One line for a failed step, with every known secret masked."""
        secrets: list[str | Secret] = []
        with contextlib.suppress(LmregError):  # settings that do not load hold no secret
            secrets += self.settings.secret_values()
        if self.target is not None:
            secrets.append(self.target.api_key)  # the registered key may differ from ours
        return failure_line(exc, secrets)

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
        for view in self._views:
            try:
                view.refresh()
            except Exception:  # a stale picture must never fail the step that was clicked
                log.exception("redrawing a result after step %s failed", done.name)

    def live(self, render: Callable[[], Any]) -> Any:
        """``render()`` headless; interactive, a view of it redrawn after every step, so the
        cells below the forms follow the latest run (verdict, figures) instead of going stale."""
        if self.headless:
            return render()
        view = StepView(render)
        self._views.append(view)
        return view

    # -- contact and token ---------------------------------------------------
    def contact_card(self) -> Outcome:
        """The contact card as shown in the notebook (or why there is none)."""
        failed = next((s for s in self.steps if s.name == StepName.CONTACT_CARD), None)
        return card_outcome(self.school, self.contact, failed)

    @step(StepName.CONTACT_CARD)
    def set_contact(self, name: str, mobile: str, email: str, school: str = "") -> Outcome:
        """Validate and keep a contact card (and the school, when given): the form's action."""
        if school.strip():
            self.school = school.strip()
        errors = [] if self.school else [
            ValidationError("school", _("must name the school, e.g. Example Middle School"))
        ]  # fmt: skip
        try:
            card = check_contact(name, mobile, email)
        except ValidationError as exc:
            errors.append(exc)
        if errors:  # every mistake at once: a batch row is fixed in one go
            raise ValidationError.every(errors)
        self.contact = card
        listed = pgettext("list separator", ", ").join([card.name, card.mobile, card.email])
        self.note(Step(StepName.CONTACT_CARD, True, listed))
        return self.contact_card()

    @step(StepName.TOKEN)
    def connect(self) -> Outcome:
        """Get a token (cached or exchanged for appId/appSecret)."""
        return registry_.token_outcome(str(self.settings.base_url), self._take_token())

    def _take_token(self) -> Token:
        token = self.token = self.client.token()
        self.note(Step(StepName.TOKEN, True, registry_.token_detail(token)))
        return token

    def use_credentials(self, app_id: str, app_secret: str | Secret | None) -> None:
        """Use this appId (and appSecret, when given) instead of the environment's; an
        empty appSecret goes back to LMREG_APP_SECRET, never to one typed before."""
        self._settings = registry_.with_credentials(self._given_settings, app_id, app_secret)
        if self._client is not None:
            self._client.close()
        self._client = None
        self.token = None
        self.chat_endpoint.forget_key()

    # -- the models ----------------------------------------------------------
    @step(StepName.REGISTER)
    def register(
        self,
        model_name: str,
        registry_url: str = "",
        api_key: str | Secret | None = None,
        *,
        update_existing: bool = True,
        **extra: Unpack[registry_.Examples],
    ) -> Outcome:
        """Register the model (``update_existing``: update the one of that name); empty
        ``registry_url``/``api_key``: LMREG_MODEL_URL/LMREG_MODEL_API_KEY. ``extra``:
        reqParams, reqExample, resExample (``req_params=[...]`` and so on)."""
        model, action = registry_.register(
            self.client, self.settings, model_name, registry_url, api_key,
            update_existing=update_existing, **extra,
        )  # fmt: skip
        self._use_model(model)
        shown = self._shown(model)
        self.note(Step(StepName.REGISTER, True, registry_.registered_detail(shown, action)))
        return self.address_checked(registry_.registered_outcome(shown, action).holding(model))

    @step(StepName.MODIFY)
    def modify(
        self, model_id: str, model_name: str, registry_url: str, api_key: str | Secret | None = None
    ) -> Outcome:
        """Overwrite a model's modelName, registryUrl and apiKey (empty ``api_key``: the
        current key, else LMREG_MODEL_API_KEY); shows old -> new values."""
        model, self.changes = registry_.modify(
            self.client, self.settings, model_id, model_name, registry_url, api_key
        )
        self._use_model(model)
        shown = self._shown(model)
        self.note(Step(StepName.MODIFY, True, registry_.modified_detail(shown)))
        return self.address_checked(registry_.modify_outcome(shown, self.changes).holding(model))

    def update(
        self, model_name: str, *, new_model_name: str = "", new_registry_url: str = "",
        api_key_from_env: bool = False,
    ) -> Outcome:  # fmt: skip
        """Modify the model called ``model_name``; empty new values keep the current ones
        (the apiKey too, or LMREG_MODEL_API_KEY with ``api_key_from_env``)."""
        current = self.client.find_model(name=model_name)
        if current is None:
            error = registry_.no_such_model(model_name)
            self.note(Step(StepName.MODIFY, False, str(error)))
            raise error
        key = self.settings.require("model_api_key") if api_key_from_env else None
        return self.modify(
            current.model_id,
            new_model_name.strip() or current.model_name,
            new_registry_url.strip() or current.registry_url,
            key,
        )

    def address_checked(self, outcome: Outcome) -> Outcome:
        """A register or modify ``outcome``, red with the fix when the registered address
        does not answer a chat (404/405: not the chat path of spec 4.5, the school's own
        address to register named; 401/403: the key), amber (⚠) with the cause when it does
        not answer from here or not in time. One short request to the address registered."""
        from .address import with_address_verdict

        if self.model is None:
            return outcome
        try:
            target = self.chat_endpoint.resolve()
        except LmregError:
            return outcome  # no key returned, say: the checks of notebook 05 say why
        return with_address_verdict(outcome, target)

    def use_registered(self, model_name: str) -> Outcome:
        """Check, chat with and measure the model registered as ``model_name`` from now on,
        as the platform will call it: its registryUrl and apiKey (``check --registered``);
        LMREG_MODEL_URL and LMREG_MODEL_API_KEY are not needed."""
        found = self.find(model_name=model_name)
        if found is None:
            raise registry_.no_such_model(model_name)
        self._use_model(found)
        outcome = registry_.model_outcome(_("checking the registered model"), self._shown(found))
        return outcome.holding(found)

    def _shown(self, model: RegisteredModel) -> RegisteredModel:
        """``model`` as people may see it (:meth:`RegistryClient.shown`)."""
        return self.client.shown([model])[0]

    def _use_model(self, model: RegisteredModel) -> None:
        # The checks, chat and capacity now call what is registered.
        self.chat_endpoint.use(model)

    @property
    def model(self) -> RegisteredModel | None:
        """The registered model the checks, chat and capacity call (None: none yet)."""
        return self.chat_endpoint.model

    @property
    def target(self) -> Target | None:
        """:attr:`model` as the platform calls it, once resolved (its registryUrl and apiKey)."""
        return self.chat_endpoint.target

    def refresh(self) -> list[RegisteredModel]:
        """Query the account's models again (kept in :attr:`models`); records no step."""
        self.models = self.client.query_models()
        return self.models

    def find(self, *, model_id: str = "", model_name: str = "") -> RegisteredModel | None:
        """The account's model with this modelId or modelName (asks the platform)."""
        if model_id:
            return self.client.find_model(model_id=model_id)
        return self.client.find_model(name=model_name) if model_name.strip() else None

    @step(StepName.LIST_MODELS)
    def list_models(self, name_contains: str = "") -> Table:
        """List the account's models (apiKey masked, local times); checks ours is there."""
        self.models = self.client.query_models()
        registry_.check_listed(self.models, self.model)
        self.note(Step(StepName.LIST_MODELS, True, registry_.listed_detail(len(self.models))))
        return registry_.models_table(self.client.shown(self.models), name_contains)

    def models_frame(self, name_contains: str = "") -> Any:
        """The account's models as a pandas DataFrame (apiKey masked, times tz-aware UTC)."""
        from ..registry.frames import models_frame

        self.list_models()
        shown = self.client.shown(self.models)
        return models_frame([m for m in shown if name_contains.strip() in m.model_name])

    # -- the chat endpoint ---------------------------------------------------
    def endpoint(self, model_url: str = "", model: str = "") -> Target:
        """The endpoint to call: given, else the last checks', else the registered model's,
        else the settings'."""
        return self.chat_endpoint.resolve(model_url, model)

    @step(StepName.CHECKS)
    def check_endpoint(
        self, requests: int = 0, concurrency: int = 1, *, model_url: str = "", model: str = "",
        chat_prompt: str | None = None,
    ) -> Table:  # fmt: skip
        """Run the chat-endpoint checks (a load test when ``requests`` > 0): one row each.
        With ``chat_prompt``, a streamed chat reply runs with them (:meth:`reply` shows it)."""
        target = self.chat_endpoint.checked(model_url, model)
        self.report = None
        self.chat_prompt = chat_prompt.strip() if chat_prompt and chat_prompt.strip() else None
        report = self.report = endpoint_.run_checks(
            target, requests=requests, concurrency=concurrency, chat_prompt=self.chat_prompt,
            context_need=self.context_need, workload=self.workload(),
        )  # fmt: skip
        self.checks = list(report.checks)
        self.note(endpoint_.checks_step(self.checks))
        if self.chat_prompt:
            self.chat_reply, self.chat_error = report.chat_reply, report.chat_error
            self.note(endpoint_.chat_step(report.chat_error, self.checks))
        return self.checks_table()

    def checks_table(self) -> Table:
        """The checks, one row each (names stay as they are: they are identifiers)."""
        return endpoint_.checks_table(self.checks)

    def verdict(self) -> Outcome:
        """The chat checks in one line: passed, or which required checks failed."""
        return endpoint_.verdict(self.checks)

    def figure(self) -> Any:
        """The load test's plots, or a note when no load test ran."""
        return endpoint_.load_figure(self.report, self._step_of(StepName.CHECKS))

    def reply(self) -> Outcome:
        """The reply to the chat prompt sent with the checks (shown escaped, never as HTML)."""
        return endpoint_.reply_outcome(self.chat_prompt, self.chat_reply, self.chat_error)

    def chat(
        self, prompt: str, on_piece: Callable[[str], None] | None = None, *,
        model_url: str = "", model: str = "",
    ) -> str:  # fmt: skip
        """Send one prompt to the school's model; the reply (streamed to ``on_piece``) is
        untrusted text: callers show it escaped, never as HTML."""
        if not prompt.strip():
            raise ValidationError("prompt", _("type a question for the model first"))
        return endpoint_.stream_reply(self.endpoint(model_url, model), prompt, on_piece)

    @step(StepName.CAPACITY)
    def capacity(
        self, class_size: int | None = None, slo_ttft_ms: float = 2000, *,
        model_url: str = "", model: str = "",
        on_progress: Callable[[Progress], None] | None = None,
    ) -> Outcome:  # fmt: skip
        """Measure how many chats at once the model serves within the SLO, against the class
        (``class_size``, default the run's; 0 skips it); the endpoint as for the checks.
        ``on_progress``: where the search is (default: a line in the notebook's output)."""
        size = self.class_size if class_size is None else max(0, int(class_size))
        if size <= 0:
            return Outcome(_("capacity test skipped: class_size is 0"))
        self.class_size = size
        target = self.endpoint(model_url, model)
        result = endpoint_.measure_capacity(
            target, size, slo_ttft_ms, on_progress, workload=self.workload()
        )
        self.capacity_result, self._capacity_size = result, size
        self.note(Step(StepName.CAPACITY, True, endpoint_.capacity_detail(result, size)))
        return endpoint_.capacity_outcome(result, size)

    def workload(self) -> WorkloadSpec:
        """What the load test and capacity send: the lesson, sized by the parameters."""
        sized = (self.context_need, self.lesson_tokens, self.max_tokens)
        if self._workload is None or self._workload[0] != sized:
            self._workload = (sized, workload_of(*sized))
        return self._workload[1]

    def capacity_figure(self) -> Any:
        """The capacity charts, or a note when capacity was not measured."""
        return endpoint_.capacity_figure(self.capacity_result, self._step_of(StepName.CAPACITY))

    def _step_of(self, name: StepName) -> Step | None:
        """The recorded step called ``name`` (None: not run)."""
        return next((s for s in self.steps if s.name == name), None)

    def capacity_record(self) -> CapacityRecord | None:
        """The summary's ``capacity``: the contract JSON, the verdict and the class size."""
        if self.capacity_result is None:
            return None
        return endpoint_.capacity_record(self.capacity_result, self._capacity_size)

    # -- the summary ---------------------------------------------------------
    def summary(self, *, generated_at: datetime | None = None) -> Summary:
        """The ``summary`` of this run: status and go-live decided from what happened."""
        report = self.report
        try:
            base_url = self.settings.base_url
        except LmregError:
            base_url = None
        # performance: the probe's figures (the load test's, or its one streamed request's).
        return build_summary(
            school=self.school, contact=self.contact, base_url=base_url,
            env=self.token.env if self.token else None, steps=self.steps,
            models=self.models or ([self.model] if self.model else []), checks=self.checks,
            performance=report.performance if report is not None else None,
            capacity=self.capacity_record(), class_size=self.class_size or None,
            lang=current_language(), generated_at=generated_at,
            target_urls=[self.model.registry_url] if self.model else [],
            workload=report.workload if report is not None else None,
            client=report.client if report is not None else None,
            server=report.server if report is not None else None,
        )  # fmt: skip

    def finish(self) -> None:
        """Record the ``summary``: always, also when steps failed or never ran. Interactive,
        it is rewritten in place as later steps finish (it never says more than was done)."""
        import secrets

        if not self.headless and self._live_id is None:
            self._live_id = f"lmreg-summary-{secrets.token_hex(6)}"
        self._record(update=False)

    def _record(self, *, update: bool) -> None:
        from ..records import record

        record("summary", self.summary(), display_id=self._live_id, update=update)
