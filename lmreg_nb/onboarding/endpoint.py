"""The onboarding's chat-endpoint steps: checks (with one chat reply), chat, capacity.

Once a model is registered, these call it the way the platform will: the
registryUrl and apiKey registered under its modelName
(:func:`lmreg_nb.probe.registered_target`), never LMREG_MODEL_URL behind the
registration's back. Before that (notebook 05), a ``model_url`` given or the
settings' endpoint.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..display import FigureView, Outcome, Table
from ..errors import ValidationError
from ..i18n import _, ngettext
from ..summary import Check, Step
from .live import LiveLine
from .step import StepsHost, step

if TYPE_CHECKING:
    from ..probe import ChatTarget, EndpointReport
    from ..probe.capacity import Progress
    from ..secret import Secret

__all__ = ["EndpointSteps"]

#: The most chats at once the capacity search may try (its margin level stays below it).
_MAX_CONCURRENCY = 1024


class EndpointSteps(StepsHost):
    """The chat-endpoint part of :class:`~lmreg_nb.onboarding.Onboarding` (a mixin)."""

    class_size: int

    def __init__(self) -> None:
        self.report: EndpointReport | None = None
        self.checks: list[Check] = []
        #: The registered model as the platform will call it (resolved on first use).
        self.target: ChatTarget | None = None
        self.chat_prompt: str | None = None
        self.chat_reply: str | None = None
        self.chat_error: str | None = None
        self.capacity_result: Any = None
        self._capacity_size: int | None = None
        #: The endpoint given to the last checks (url, model), used by capacity and chat after.
        self.checked_endpoint: tuple[str, str] | None = None

    # -- the endpoint --------------------------------------------------------
    def endpoint(self, model_url: str = "", model: str = "") -> tuple[str, Secret, str]:
        """(url, apiKey, body model) to call: given, else the registered model's, else settings."""
        if not model_url.strip() and self.checked_endpoint is not None:
            model_url, model = self.checked_endpoint[0], model or self.checked_endpoint[1]
        registered = self._registered()
        if model_url.strip():
            same = registered is not None and registered.url == model_url.strip()
            key = registered.api_key if same and registered else self._key()
            return model_url.strip(), key, model.strip() or self._name(registered)
        if registered is not None:
            return registered.url, registered.api_key, model.strip() or registered.model
        return self.settings.require("model_url"), self._key(), model.strip() or self._name(None)

    def _registered(self) -> ChatTarget | None:
        if self.model is None:
            return None
        if self.target is None or self.target.registered_name != self.model.model_name:
            from ..probe import registered_target

            self.target = registered_target(
                self.settings, self.model.model_name, client=self.client
            )
        return self.target

    def _key(self) -> Secret:
        key: Secret = self.settings.require("model_api_key")
        return key

    def _name(self, registered: ChatTarget | None) -> str:
        if registered is not None:
            return registered.model
        name: str = self.settings.require("model_name")
        return name

    # -- checks --------------------------------------------------------------
    @step("chat endpoint checks")
    def check_endpoint(
        self,
        requests: int = 0,
        concurrency: int = 1,
        *,
        model_url: str = "",
        model: str = "",
        chat_prompt: str | None = None,
    ) -> Table:
        """Run the chat-endpoint checks (a load test when ``requests`` > 0): one row each.

        With ``chat_prompt``, one streamed chat reply runs concurrently with the
        checks (:meth:`reply` shows it). A server that fails gives failed rows.
        """
        from ..probe import check_endpoint

        url, key, name = self.endpoint(model_url, model)
        if model_url.strip():
            self.checked_endpoint = (url, model.strip())
        self.report = None
        self.chat_prompt = chat_prompt.strip() if chat_prompt and chat_prompt.strip() else None
        kwargs: dict[str, Any] = {"chat_prompt": self.chat_prompt} if self.chat_prompt else {}
        target = self.target
        if target is not None and target.url == url and target.registered_name != name:
            kwargs["also_name"] = target.registered_name  # model-name-served tries both names
        report = check_endpoint(
            url,
            key,
            name,
            requests=max(0, int(requests or 0)),
            concurrency=max(1, int(concurrency or 1)),
            timeout=self.settings.timeout,
            **kwargs,
        )
        self.report = report
        self.checks = [Check.from_json(c) for c in report.checks]
        failed = [c for c in self.checks if not c.passed and c.severity == "error"]
        if failed:
            detail = _("required checks failed: {checks}").format(
                checks="; ".join(f"{c.name} ({_short(c.detail)})" for c in failed)
            )
        else:
            n = len(self.checks)
            detail = ngettext(
                "{n} check, every required one passed",
                "{n} checks, every required one passed",
                n,
            ).format(n=n)
        self.note(Step("chat endpoint checks", not failed, detail))
        if self.chat_prompt:
            reply, error = getattr(report, "chat_reply", None), getattr(report, "chat_error", None)
            self._note_chat(reply, error)
        return self.checks_table()

    def _note_chat(self, reply: str | None, error: str | None) -> None:
        self.chat_reply, self.chat_error = reply, error
        if error:
            self.note(Step("chat", False, error))
        else:
            self.note(Step("chat", True, _("the model replied")))

    def checks_table(self) -> Table:
        """The checks, one row each (names stay as they are: they are identifiers)."""
        return Table(
            [_("check"), _("passed"), _("severity"), _("detail")],
            [[c.name, "✔" if c.passed else "✘", c.severity, c.detail] for c in self.checks],
        )

    def verdict(self) -> Outcome:
        """The chat checks in one line: passed, or which required checks failed."""
        if not self.checks:
            return Outcome(_("chat endpoint: not checked yet"), ok=False, pending=True)
        failed = [c for c in self.checks if not c.passed and c.severity == "error"]
        warned = [c for c in self.checks if not c.passed and c.severity == "warning"]
        rows = [(c.name, c.detail) for c in failed]
        rows += [(_("{name} (warning)").format(name=c.name), c.detail) for c in warned]
        if failed:
            title = ngettext(
                "chat endpoint: {n} required check failed",
                "chat endpoint: {n} required checks failed",
                len(failed),
            ).format(n=len(failed))
            return Outcome(title, rows, ok=False)
        return Outcome(_("chat endpoint: every required check passed"), rows)

    def figure(self) -> Any:
        """The load test's plots, or a note when no load test ran."""
        figure = self.report.figure() if self.report is not None else None
        if figure is None:
            return Outcome(_("no load test ran: set check_requests above 0 to run one"))
        return FigureView(figure)

    # -- chat ----------------------------------------------------------------
    def reply(self) -> Outcome:
        """The reply to the chat prompt sent with the checks (shown escaped, never as HTML)."""
        if self.chat_prompt is None:
            return Outcome(_("no chat prompt was sent"), ok=False, pending=True)
        if self.chat_error:
            return Outcome(_("the model did not reply"), [(_("error"), self.chat_error)], ok=False)
        return Outcome(
            _("the model's reply"),
            [(_("prompt"), self.chat_prompt), (_("reply"), self.chat_reply or "")],
        )

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
        from ..probe import stream_chat

        if not prompt.strip():
            raise ValidationError("prompt", _("type a question for the model first"))
        url, key, name = self.endpoint(model_url, model)
        pieces: list[str] = []
        for piece in stream_chat(url, key, name, prompt, timeout=self.settings.timeout):
            pieces.append(piece)
            if on_piece is not None:
                on_piece(piece)
        return "".join(pieces)

    # -- capacity ------------------------------------------------------------
    @step("capacity")
    def capacity(
        self,
        class_size: int | None = None,
        slo_ttft_ms: float = 2000,
        *,
        model_url: str = "",
        model: str = "",
        on_progress: Callable[[Progress], None] | None = None,
    ) -> Outcome:
        """Measure how many chats at once the model serves within the SLO, against the class.

        ``class_size`` (default: the run's) of 0 skips the test (no step recorded).
        ``model_url``/``model``: the endpoint, as for :meth:`check_endpoint`.
        ``on_progress(progress)``: where the search is (the form's message line);
        without it, in a notebook, one line of output shows it, updated in place.
        """
        from ..probe.capacity import SLO, find_capacity, margin_level

        size = self.class_size if class_size is None else max(0, int(class_size))
        if size <= 0:
            return Outcome(_("capacity test skipped: class_size is 0"))
        self.class_size = size
        url, key, name = self.endpoint(model_url, model)
        line = LiveLine() if on_progress is None else None
        try:
            result = find_capacity(
                url,
                key,
                name,
                slo=SLO(ttft_ms=float(slo_ttft_ms)),
                # Room for the level above the class (the margin), never below the class.
                max_concurrency=max(size, margin_level(size, _MAX_CONCURRENCY)),
                need=size,
                timeout=self.settings.timeout,
                on_progress=on_progress or (line.show if line else None),
            )
        finally:
            if line is not None:
                line.clear()
        self.capacity_result, self._capacity_size = result, size
        sentence = result.verdict(size)
        self.note(Step("capacity", True, sentence))
        return Outcome(
            sentence,
            [(_("chats at once"), str(result.capacity.concurrency)), (_("class size"), str(size))],
            ok=result.capacity.concurrency >= size,
            value=result,
        )

    def capacity_figure(self) -> Any:
        """The capacity charts, or a note when capacity was not measured."""
        if self.capacity_result is None:
            return Outcome(
                _("capacity not measured: set class_size above 0 to measure it"),
                ok=False,
                pending=True,
            )
        return FigureView(self.capacity_result.figure())

    def capacity_record(self) -> dict[str, Any] | None:
        """The summary's ``capacity``: the contract JSON, the verdict and the class size."""
        if self.capacity_result is None:
            return None
        size = self._capacity_size
        data: dict[str, Any] = dict(self.capacity_result.to_json())
        data["verdict"] = self.capacity_result.verdict(size)
        data["class_size"] = size
        return data


def _short(text: str, limit: int = 160) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
