"""The onboarding flow as plain functions: contact card, steps, chat checks, summary record.

The onboarding notebook calls one method of :class:`Onboarding` per cell; the
forms of :mod:`lmreg_nb.ui` call the same methods, so a headless run and an
interactive one leave the same trace. :func:`build_summary` makes the
``summary`` record of DESIGN.md from what happened.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import LmregError, ValidationError
from .secret import Secret
from .ui._views import FigureView, Outcome, Table
from .validate import check_email, check_mobile, url_warnings

if TYPE_CHECKING:
    from .client import RegistryClient
    from .models import RegisteredModel, Token
    from .probe import EndpointReport
    from .settings import Settings

__all__ = [
    "PHASES",
    "Contact",
    "FigureView",
    "Onboarding",
    "Outcome",
    "Step",
    "Table",
    "build_summary",
    "check_contact",
    "configuration",
    "notebook_path",
    "notebook_setup",
    "summary_status",
]

log = logging.getLogger("lmreg_nb")

#: The three onboarding phases of spec section 1, in order.
PHASES = ("preparation", "technical integration", "go-live")
_MAX_NAME = 64


@dataclass(frozen=True)
class Contact:
    """The school's contact for the local model (spec 1, phase 2): alerts go here."""

    name: str
    mobile: str
    email: str

    def to_dict(self) -> dict[str, str]:
        """The record's ``contact`` object."""
        return {"name": self.name, "mobile": self.mobile, "email": self.email}


def check_contact(name: object, mobile: object, email: object) -> Contact:
    """Validate a contact card; raises ValidationError naming the field to fix."""
    if not isinstance(name, str) or not name.strip():
        raise ValidationError("contact_name", "must be the contact's name, e.g. Li Hua")
    clean = " ".join(name.split())
    if len(clean) > _MAX_NAME or not clean.isprintable():
        raise ValidationError("contact_name", f"must be at most {_MAX_NAME} printable characters")
    return Contact(name=clean, mobile=check_mobile(mobile), email=check_email(email))


@dataclass(frozen=True)
class Step:
    """One step of the onboarding and how it went."""

    name: str
    passed: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        """The record's form."""
        return {"name": self.name, "passed": self.passed, "detail": self.detail}


def summary_status(steps: Sequence[Step | Mapping[str, Any]], checks: Sequence[Any]) -> str:
    """ "ok" when there was a step, every step passed and every error-severity check passed."""
    step_ok = [_get(s, "passed") for s in steps]
    errors_ok = [_get(c, "passed") for c in checks if _get(c, "severity") == "error"]
    return "ok" if step_ok and all(step_ok) and all(errors_ok) else "failed"


def build_summary(
    *,
    school: str,
    contact: Contact | Mapping[str, str] | None,
    base_url: str | None,
    env: str | None,
    steps: Sequence[Step | Mapping[str, Any]],
    models: Sequence[RegisteredModel | Mapping[str, Any]],
    checks: Sequence[Any],
    performance: Mapping[str, Any] | None,
    generated_at: datetime | None = None,
) -> dict[str, Any]:
    """The onboarding ``summary`` record (DESIGN.md, records contract); never holds an apiKey."""
    step_dicts = [s.to_dict() if isinstance(s, Step) else dict(s) for s in steps]
    check_dicts = [
        {k: _get(c, k) for k in ("name", "passed", "severity", "detail")} for c in checks
    ]
    status = summary_status(step_dicts, check_dicts)
    if isinstance(contact, Contact):
        contact_dict: dict[str, str] | None = contact.to_dict()
    else:
        contact_dict = (
            None
            if contact is None
            else {k: str(contact.get(k, "")) for k in ("name", "mobile", "email")}
        )
    when = generated_at or datetime.now(UTC)
    return {
        "school": school,
        "contact": contact_dict,
        "base_url": base_url,
        "env": env,
        "phases": _phases(step_dicts, check_dicts, status),
        "steps": step_dicts,
        "models": [_model_dict(m) for m in models],
        "checks": check_dicts,
        "performance": dict(performance) if performance is not None else None,
        "status": status,
        "generated_at": when.isoformat(timespec="seconds"),
    }


def _phases(
    steps: list[dict[str, Any]], checks: list[dict[str, Any]], status: str
) -> list[dict[str, Any]]:
    passed = {s["name"] for s in steps if s["passed"]}
    token = "token" in passed
    integration = {"contact card", "token", "register", "list models"} <= passed
    return [
        {
            "name": "preparation",
            "done": token,
            "detail": "the platform answers and the provider's appId/appSecret work"
            if token
            else "no token yet: the provider must create the platform and hand out appId/appSecret",
        },
        {
            "name": "technical integration",
            "done": integration,
            "detail": "contact given, model registered and listed"
            if integration
            else "missing: "
            + ", ".join(sorted({"contact card", "token", "register", "list models"} - passed)),
        },
        {
            "name": "go-live",
            "done": False,
            "detail": "ready: the provider switches the active model in the back office"
            if status == "ok"
            else "not ready: fix the failed steps and checks, then run onboarding again",
        },
    ]


def _model_dict(model: RegisteredModel | Mapping[str, Any]) -> dict[str, Any]:
    data = dict(model) if isinstance(model, Mapping) else model.summary()
    # The record never holds an apiKey, not even masked.
    return {
        k: data.get(k) for k in ("modelName", "modelId", "registryUrl", "createTime", "updateTime")
    }


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, Mapping) else getattr(item, key)


class Onboarding:
    """One school's onboarding: each method is one step, recorded in :attr:`steps`.

    A failing step is recorded and its toolkit error raised again (one line).
    """

    def __init__(
        self,
        school: str,
        contact: Contact | None = None,
        *,
        settings: Settings | None = None,
        client: RegistryClient | None = None,
    ) -> None:
        self.school = school.strip()
        self.contact = contact
        self._settings = settings
        self._client = client
        self.steps: list[Step] = []
        self.models: list[RegisteredModel] = []
        self.token: Token | None = None
        self.report: EndpointReport | None = None
        self.checks: list[dict[str, Any]] = []
        self.model: RegisteredModel | None = None
        #: True when the notebook's parameters drive the run (no forms); set by :meth:`begin`.
        self.headless = False

    @classmethod
    def begin(
        cls,
        school: str = "",
        contact_name: str = "",
        contact_mobile: str = "",
        contact_email: str = "",
        *,
        settings: Settings | None = None,
    ) -> Onboarding:
        """Begin an onboarding from the notebook's parameters.

        All empty: an interactive run (the notebook shows forms). Otherwise a
        headless run: the school and the contact card are checked first, so an
        invalid card stops everything before anything is sent.
        """
        if not any(x.strip() for x in (school, contact_name, contact_mobile, contact_email)):
            return cls("", settings=settings)
        if not school.strip():
            raise ValidationError("school", "must name the school, e.g. Example Middle School")
        run = cls(school, settings=settings)
        run.headless = True
        with run._step("contact card") as note:
            run.contact = check_contact(contact_name, contact_mobile, contact_email)
            note["detail"] = f"{run.contact.name}, {run.contact.mobile}, {run.contact.email}"
        return run

    # -- configuration -------------------------------------------------------
    @property
    def settings(self) -> Settings:
        """The settings (from the environment unless given)."""
        if self._settings is None:
            from .settings import Settings

            self._settings = Settings.load()
        return self._settings

    @property
    def client(self) -> RegistryClient:
        """The registry client, created on first use."""
        if self._client is None:
            from .client import RegistryClient

            self._client = RegistryClient(self.settings)
        return self._client

    @contextmanager
    def _step(self, name: str) -> Iterator[dict[str, Any]]:
        note: dict[str, Any] = {"passed": True, "detail": "done"}
        try:
            yield note
        except LmregError as exc:
            self._note(Step(name, False, str(exc)))
            raise
        self._note(Step(name, bool(note["passed"]), str(note["detail"])))

    def _note(self, step: Step) -> None:
        # A step run twice (a form clicked again) keeps its latest outcome only.
        self.steps = [s for s in self.steps if s.name != step.name] + [step]
        log.info("onboarding step %s: %s", step.name, "passed" if step.passed else "failed")

    # -- steps ---------------------------------------------------------------
    def contact_card(self) -> Outcome:
        """The contact card as shown in the notebook."""
        if self.contact is None:
            return Outcome("no contact card yet: fill in the form below", ok=False)
        return Outcome(
            f"contact for {self.school or 'the school'}",
            [
                ("name", self.contact.name),
                ("mobile", self.contact.mobile),
                ("e-mail", self.contact.email),
            ],
            value=self.contact,
        )

    def set_contact(self, name: str, mobile: str, email: str, school: str = "") -> Outcome:
        """Validate and keep a contact card (and the school, when given): the form's action."""
        with self._step("contact card") as note:
            if school.strip():
                self.school = school.strip()
            self.contact = check_contact(name, mobile, email)
            note["detail"] = f"{self.contact.name}, {self.contact.mobile}, {self.contact.email}"
        return self.contact_card()

    def connect(self) -> Outcome:
        """Get a token (cached or exchanged for appId/appSecret)."""
        with self._step("token") as note:
            token = self.token = self.client.token()
            expires = f"{token.expires_at:%Y-%m-%d %H:%M} UTC"
            note["detail"] = f"env {token.env}, expires {expires}"
        return Outcome(
            "token obtained",
            [
                ("platform", str(self.settings.base_url)),
                ("env", token.env),
                ("token", token.token.masked),
                ("expires", expires),
            ],
            value=token,
        )

    def use_credentials(self, app_id: str, app_secret: str | Secret | None) -> None:
        """Use this appId (and appSecret, when given) instead of the environment's."""
        changes: dict[str, Any] = {"app_id": app_id.strip() or None}
        if app_secret:
            changes["app_secret"] = _secret(app_secret)
        # A token from other credentials must not be reused: drop LMREG_TOKEN too.
        self._settings = self.settings.with_(token=None, env=None, **changes)
        if self._client is not None:
            self._client.close()
        self._client = None

    def register(
        self,
        model_name: str,
        registry_url: str = "",
        api_key: str | Secret | None = None,
        *,
        update_existing: bool = True,
        req_params: list[str] | None = None,
        req_example: str | None = None,
        res_example: str | None = None,
    ) -> Outcome:
        """Register the model; with ``update_existing``, update it when the name is taken.

        Empty ``registry_url``/``api_key`` mean LMREG_MODEL_URL/LMREG_MODEL_API_KEY.
        """
        from .models import ModelDraft

        with self._step("register") as note:
            url = registry_url.strip() or self.settings.require("model_url")
            key = _secret(api_key) if api_key else self.settings.require("model_api_key")
            draft = ModelDraft(
                model_name=model_name,
                registry_url=url,
                api_key=key,
                req_params=req_params,
                req_example=req_example,
                res_example=res_example,
            )
            if update_existing:
                model, action = self.client.register_or_update(draft)
            else:
                model, action = self.client.register_model(draft), "registered"
            self.model = model
            note["detail"] = f"{action} {model.model_name} (modelId {model.model_id})"
        return _model_outcome(f"model {action}", model)

    def modify(
        self,
        model_id: str,
        model_name: str,
        registry_url: str,
        api_key: str | Secret | None = None,
    ) -> Outcome:
        """Overwrite a model's modelName, registryUrl and apiKey.

        The spec's modify overwrites apiKey, so one is always sent: empty
        ``api_key`` keeps the key the platform returned for this model, else
        LMREG_MODEL_API_KEY.
        """
        from .models import ModelDraft

        with self._step("modify") as note:
            key: Secret | None = _secret(api_key) if api_key else None
            if key is None:
                current = self.find(model_id=model_id)
                key = current.api_key if current is not None and current.api_key else None
            if key is None:
                key = self.settings.require("model_api_key")
            draft = ModelDraft(
                model_name=model_name, registry_url=registry_url, api_key=key, model_id=model_id
            )
            model = self.client.modify_model(draft)
            self.model = model
            note["detail"] = f"modified {model.model_name} (modelId {model.model_id})"
        return _model_outcome("model modified", model)

    def update(
        self,
        model_name: str,
        *,
        new_model_name: str = "",
        new_registry_url: str = "",
        api_key_from_env: bool = False,
    ) -> Outcome:
        """Modify the model called ``model_name``; empty new values keep the current ones.

        The apiKey sent is the current one, or LMREG_MODEL_API_KEY with ``api_key_from_env``.
        """
        current = self.find(model_name=model_name)
        if current is None:
            error = LmregError(
                f"no model named {model_name.strip()!r} in this account; "
                "list the models (notebook 04) and use one of their names"
            )
            self._note(Step("modify", False, str(error)))
            raise error
        key = self.settings.require("model_api_key") if api_key_from_env else None
        return self.modify(
            current.model_id,
            new_model_name.strip() or current.model_name,
            new_registry_url.strip() or current.registry_url,
            key,
        )

    def refresh(self) -> list[RegisteredModel]:
        """Query the account's models again (kept in :attr:`models`); records no step."""
        self.models = self.client.query_models()
        return self.models

    def find(self, *, model_id: str = "", model_name: str = "") -> RegisteredModel | None:
        """The account's model with this modelId or modelName (queries the platform)."""
        for m in self.refresh():
            if (model_id and m.model_id == model_id) or (
                model_name and m.model_name == model_name.strip()
            ):
                return m
        return None

    def list_models(self, name_contains: str = "") -> Table:
        """List the account's models (apiKey never shown); checks ours is there."""
        with self._step("list models") as note:
            self.models = self.client.query_models()
            if self.model is not None and not any(
                m.model_id == self.model.model_id for m in self.models
            ):
                raise LmregError(
                    f"model {self.model.model_name} (modelId {self.model.model_id}) is not in "
                    "query-models; ask provider support"
                )
            note["detail"] = f"{len(self.models)} model(s) in the account"
        columns = ["modelName", "modelId", "registryUrl", "apiKey", "createTime", "updateTime"]
        rows = [
            [
                m.model_name,
                m.model_id,
                m.registry_url,
                m.api_key.masked,
                _iso(m.create_time),
                _iso(m.update_time),
            ]
            for m in self.models
            if name_contains.strip() in m.model_name
        ]
        return Table(columns, rows)

    def models_frame(self, name_contains: str = "") -> Any:
        """The account's models as a pandas DataFrame (apiKey masked, times tz-aware UTC)."""
        from .frames import models_frame

        self.list_models()
        return models_frame([m for m in self.models if name_contains.strip() in m.model_name])

    def overview(self) -> Outcome:
        """The account's models in short: name, modelId and times (after :meth:`list_models`)."""
        rows = [
            (
                m.model_name,
                f"modelId {m.model_id}, created {_iso(m.create_time)}, "
                f"updated {_iso(m.update_time)}",
            )
            for m in self.models
        ]
        return Outcome(f"{len(self.models)} model(s) in the account", rows)

    def check_endpoint(
        self,
        requests: int = 0,
        concurrency: int = 1,
        *,
        model_url: str = "",
        model: str = "",
    ) -> Table:
        """Run the chat-endpoint checks (and a load test when ``requests`` > 0): one row each.

        An endpoint that cannot be reached is a failed check, not a crash, so the
        onboarding still records its summary. Missing settings still raise.
        """
        from .probe import check_endpoint

        url, name = self._endpoint(model_url, model)
        key = self.settings.require("model_api_key")
        self.report = None
        try:
            self.report = check_endpoint(
                url,
                key,
                name,
                requests=max(0, int(requests)),
                concurrency=max(1, int(concurrency or 1)),
                timeout=self.settings.timeout,
            )
            self.checks = [c.to_json() for c in self.report.checks]
        except LmregError as exc:
            self.checks = [
                {
                    "name": "endpoint reachable",
                    "passed": False,
                    "severity": "error",
                    "detail": str(exc),
                }
            ]
        failed = [c["name"] for c in self.checks if not c["passed"] and c["severity"] == "error"]
        detail = (
            "failed: " + ", ".join(failed)
            if failed
            else f"{len(self.checks)} checks, every required one passed"
        )
        self._note(Step("chat endpoint checks", not failed, detail))
        return Table(
            ["check", "passed", "severity", "detail"],
            [
                [c["name"], "✔" if c["passed"] else "✘", c["severity"], c["detail"]]
                for c in self.checks
            ],
        )

    def _endpoint(self, model_url: str, model: str) -> tuple[str, str]:
        """The chat endpoint and model name: given, else the registered model's, else settings."""
        url = (
            model_url.strip()
            or (self.model.registry_url if self.model else "")
            or self.settings.require("model_url")
        )
        return url, model.strip() or self.settings.require("model_name")

    def verdict(self) -> Outcome:
        """The chat checks in one line: passed, or which required checks failed."""
        if not self.checks:
            return Outcome("chat endpoint: not checked yet", ok=False)
        failed = [c for c in self.checks if not c["passed"] and c["severity"] == "error"]
        warned = [c for c in self.checks if not c["passed"] and c["severity"] == "warning"]
        rows = [(c["name"], c["detail"]) for c in failed] + [
            (f"{c['name']} (warning)", c["detail"]) for c in warned
        ]
        if failed:
            return Outcome(f"chat endpoint: {len(failed)} required check(s) failed", rows, ok=False)
        return Outcome("chat endpoint: every required check passed", rows)

    def figure(self) -> Any:
        """The load test's plots (a matplotlib Figure), or a note when no load test ran."""
        figure = self.report.figure() if self.report is not None else None
        if figure is None:
            return Outcome("no load test ran: set check_requests above 0 to run one", ok=True)
        return FigureView(figure)

    def chat(
        self,
        prompt: str,
        on_piece: Callable[[str], None] | None = None,
        *,
        model_url: str = "",
        model: str = "",
    ) -> str:
        """Send one prompt to the school's model and return the reply (streamed to ``on_piece``).

        The reply is untrusted text: callers show it escaped, never as HTML.
        """
        from .probe import stream_chat

        if not prompt.strip():
            raise ValidationError("prompt", "type a question for the model first")
        url, name = self._endpoint(model_url, model)
        pieces: list[str] = []
        for piece in stream_chat(
            url, self.settings.require("model_api_key"), name, prompt, timeout=self.settings.timeout
        ):
            pieces.append(piece)
            if on_piece is not None:
                on_piece(piece)
        return "".join(pieces)

    def summary(self, *, generated_at: datetime | None = None) -> dict[str, Any]:
        """The ``summary`` record of this run."""
        report = self.report
        return build_summary(
            school=self.school,
            contact=self.contact,
            base_url=self.settings.base_url,
            env=self.token.env if self.token else None,
            steps=self.steps,
            models=self.models or ([self.model] if self.model else []),
            checks=self.checks,
            # The probe's figures: the load test's, or those of its single streamed request.
            performance=report.summary if report is not None else None,
            generated_at=generated_at,
        )

    def finish(self) -> Outcome:
        """Record the ``summary`` (when a step ran) and show it in short."""
        if not self.steps:
            return Outcome(
                "nothing done yet: fill in the forms above, then run this cell again", ok=False
            )
        from .records import record

        summary = self.summary()
        record("summary", summary)
        rows = [
            (s["name"], ("passed" if s["passed"] else "FAILED") + f": {s['detail']}")
            for s in summary["steps"]
        ]
        rows += [
            (p["name"], ("done" if p["done"] else "open") + f": {p['detail']}")
            for p in summary["phases"]
        ]
        return Outcome(
            f"onboarding of {self.school}: {summary['status']}",
            rows,
            ok=summary["status"] == "ok",
            value=summary,
        )


def configuration(settings: Settings | None = None) -> Outcome:
    """What is configured, secrets masked: the first thing to look at when a step fails."""
    from .settings import SECRET_VARIABLES, VARIABLES, Settings

    current = settings or Settings.load()
    rows = []
    for name in (
        "base_url",
        "app_id",
        "app_secret",
        "token",
        "env",
        "model_url",
        "model_api_key",
        "model_name",
    ):
        var = VARIABLES[name]
        value = getattr(current, name)
        if value is None or value == "":
            shown = "not set"
        elif var in SECRET_VARIABLES:
            shown = f"set ({value.masked})"
        else:
            shown = str(value)
        rows.append((var, shown))
    missing = [
        v for v, shown in rows if shown == "not set" and v in ("LMREG_BASE_URL", "LMREG_APP_ID")
    ]
    title = "configuration" if not missing else "configuration: set " + ", ".join(missing)
    return Outcome(title, rows, ok=not missing)


def _model_outcome(title: str, model: RegisteredModel) -> Outcome:
    rows = [(k, str(v)) for k, v in model.summary().items() if v is not None]
    rows += [("warning", w.message) for w in url_warnings(model.registry_url)]
    return Outcome(title, rows, value=model)


def _secret(value: str | Secret) -> Secret:
    return value if isinstance(value, Secret) else Secret(value)


def _iso(value: datetime | None) -> str:
    return value.isoformat(timespec="seconds") if value else "unknown"


def notebook_path(stem: str) -> Path:
    """The shipped notebook ``<stem>.ipynb`` (``$LMREG_NOTEBOOKS``, then the repo's notebooks/)."""
    candidates = []
    if os.environ.get("LMREG_NOTEBOOKS"):
        candidates.append(Path(os.environ["LMREG_NOTEBOOKS"]))
    here = Path(__file__).resolve().parent
    candidates += [here.parent / "notebooks", here / "notebooks"]
    for folder in candidates:
        path = folder / f"{stem}.ipynb"
        if path.is_file():
            return path
    from .errors import ConfigurationError

    raise ConfigurationError(
        f"notebook {stem}.ipynb not found; set LMREG_NOTEBOOKS to the folder holding the notebooks",
        variable="LMREG_NOTEBOOKS",
    )


def notebook_setup() -> None:
    """In a notebook: show toolkit errors as one line (``error: ...``), not a traceback.

    The cell still fails (papermill stops and marks it); other errors keep
    their usual traceback.
    """
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - notebooks always have IPython
        return
    shell = get_ipython()
    if shell is None:
        return

    def _one_line(
        self: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None
    ) -> list[str]:
        line = f"error: {value}"
        # _showtraceback emits an "error" output (ipykernel) or prints (terminal);
        # the execute reply is marked failed either way, so papermill stops here.
        self._showtraceback(etype, value, [line])
        return [line]

    shell.set_custom_exc((LmregError,), _one_line)
    log.debug("toolkit errors show as one line in %s", sys.argv[0] if sys.argv else "IPython")
