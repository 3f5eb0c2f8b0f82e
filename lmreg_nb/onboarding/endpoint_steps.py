"""The chat-endpoint steps as plain functions: which endpoint, the checks, the chat, capacity.

Once a model is registered, these call it the way the platform will: the
registryUrl and apiKey registered under its modelName
(:meth:`lmreg_nb.probe.Target.from_registered`), never LMREG_MODEL_URL behind the
registration's back. Before that (notebook 05), a ``model_url`` given or the
settings' endpoint. Each takes the settings (and the client) it needs;
:class:`~lmreg_nb.onboarding.Onboarding` keeps the state and records the steps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..i18n import _, ngettext, pgettext
from ..severity import severity_label
from ..summary import CapacityRecord, Check, Step, StepName
from .display import FigureView, Outcome, Table
from .live import LiveLine

if TYPE_CHECKING:
    from ..models import RegisteredModel
    from ..probe import EndpointReport, Target
    from ..probe.load.capacity import CapacityResult, Progress
    from ..probe.load.workload import WorkloadSpec
    from ..registry.client import RegistryClient
    from ..settings import Settings

__all__ = [
    "capacity_figure",
    "capacity_outcome",
    "capacity_record",
    "capacity_verdict",
    "chat_step",
    "checks_step",
    "checks_table",
    "endpoint",
    "load_figure",
    "measure_capacity",
    "registered",
    "reply_outcome",
    "run_checks",
    "stream_reply",
    "verdict",
]

#: The most chats at once the capacity search may try (its margin level stays below it).
_MAX_CONCURRENCY = 1024


# -- which endpoint -------------------------------------------------------------------------
def registered(
    settings: Settings,
    client: RegistryClient,
    model: RegisteredModel,
    current: Target | None = None,
) -> Target:
    """``model`` as the platform will call it (``current`` when it already is that one)."""
    if current is not None and current.registered_name == model.model_name.strip():
        return current
    from ..probe import Target

    return Target.from_registered(settings, model.model_name, client=client)


def endpoint(
    settings: Settings, registered: Target | None, model_url: str = "", model: str = ""
) -> Target:
    """The endpoint to call: given, else the ``registered`` model's, else the settings'.

    A given ``model_url`` that is the registered one keeps the registered apiKey
    and name; another is called with LMREG_MODEL_API_KEY.
    """
    from ..probe import Target

    url, model = model_url.strip(), model.strip()
    if registered is not None and url in ("", registered.url):
        return replace(registered, model=model) if model else registered
    if url and registered is not None:
        return Target.from_settings(settings, url=url, model=model or registered.model)
    return Target.from_settings(settings, url=url, model=model)


# -- checks ---------------------------------------------------------------------------------
def run_checks(
    target: Target,
    *,
    requests: int = 0,
    concurrency: int = 1,
    chat_prompt: str | None = None,
    context_need: int | None = None,
    workload: WorkloadSpec | None = None,
) -> EndpointReport:
    """The chat-endpoint checks (a load test when ``requests`` > 0; a chat reply with a prompt).

    ``context_need``: tokens of the longest prompt the course apps send (None: the
    context-window check's default).
    A registered ``target`` has its modelName tried as ``model`` too when it differs
    (model-name-served).
    """
    from ..probe import check_endpoint

    extra: dict[str, Any] = {"chat_prompt": chat_prompt} if chat_prompt else {}
    if context_need is not None:
        extra["context_need"] = context_need
    if workload is not None:
        extra["workload"] = workload
    return check_endpoint(
        target,
        requests=max(0, int(requests or 0)),
        concurrency=max(1, int(concurrency or 1)),
        **extra,
    )


def checks_step(checks: Sequence[Check]) -> Step:
    """The checks step: passed when every required check passed; the failed ones named."""
    failed = [c for c in checks if not c.passed and c.severity == "error"]
    if failed:
        # Checks failing for one reason name it once ("nothing listens on ..." once).
        causes: dict[str, list[str]] = {}
        for c in failed:
            causes.setdefault(_short(c.detail), []).append(c.name)
        detail = _("required checks failed: {checks}").format(
            checks=pgettext("clause separator", "; ").join(
                _("{names} ({cause})").format(
                    names=pgettext("list separator", ", ").join(names), cause=cause
                )
                for cause, names in causes.items()
            )
        )
    else:
        detail = ngettext(
            "{n} check, every required one passed",
            "{n} checks, every required one passed",
            len(checks),
        ).format(n=len(checks))
    return Step(StepName.CHECKS, not failed, detail)


def checks_table(checks: Sequence[Check]) -> Table:
    """The checks, one row each (names stay as they are: they are identifiers)."""
    return Table(
        [_("check"), _("passed"), _("severity"), _("detail")],
        [[c.name, "✔" if c.passed else "✘", severity_label(c.severity), c.detail] for c in checks],
    )


def verdict(checks: Sequence[Check]) -> Outcome:
    """The chat checks in one line: passed, or which required checks failed."""
    if not checks:
        return Outcome(_("chat endpoint: not checked yet"), ok=False, pending=True)
    failed = [c for c in checks if not c.passed and c.severity == "error"]
    warned = [c for c in checks if not c.passed and c.severity == "warning"]
    rows = [(c.name, c.detail) for c in failed]
    rows += [
        (_("{name} ({severity})").format(name=c.name, severity=severity_label(c.severity)),
         c.detail)
        for c in warned
    ]  # fmt: skip
    if failed:
        title = ngettext(
            "chat endpoint: {n} required check failed",
            "chat endpoint: {n} required checks failed",
            len(failed),
        ).format(n=len(failed))
        return Outcome(title, rows, ok=False)
    return Outcome(_("chat endpoint: every required check passed"), rows)


def load_figure(report: EndpointReport | None) -> Any:
    """The load test's plots, or a note when no load test ran."""
    figure = report.figure() if report is not None else None
    if figure is None:
        return Outcome(_("no load test ran: set check_requests above 0 to run one"))
    return FigureView(figure)


# -- chat -----------------------------------------------------------------------------------
def chat_step(error: str | None) -> Step:
    """The chat step: passed when the model replied."""
    if error:
        return Step(StepName.CHAT, False, error)
    return Step(StepName.CHAT, True, _("the model replied"))


def reply_outcome(prompt: str | None, reply: str | None, error: str | None) -> Outcome:
    """The reply to the chat prompt sent with the checks (shown escaped, never as HTML)."""
    if prompt is None:
        return Outcome(_("no chat prompt was sent"), ok=False, pending=True)
    if error:
        return Outcome(_("the model did not reply"), [(_("error"), error)], ok=False)
    return Outcome(_("the model's reply"), [(_("prompt"), prompt), (_("reply"), reply or "")])


def stream_reply(target: Target, prompt: str, on_piece: Callable[[str], None] | None = None) -> str:
    """Send one prompt and return the reply (streamed to ``on_piece``); untrusted text."""
    from ..probe import stream_chat

    pieces: list[str] = []
    for piece in stream_chat(target, prompt):
        pieces.append(piece)
        if on_piece is not None:
            on_piece(piece)
    return "".join(pieces)


# -- capacity -------------------------------------------------------------------------------
def measure_capacity(
    target: Target,
    size: int,
    slo_ttft_ms: float,
    on_progress: Callable[[Progress], None] | None = None,
    *,
    workload: WorkloadSpec | None = None,
) -> CapacityResult:
    """Whether the model serves ``size`` chats at once within the SLO, and with what margin.

    ``on_progress(progress)``: where the search is (the form's message line);
    without it, in a notebook, one line of output shows it, updated in place.
    """
    from ..probe.load.capacity import DEFAULT_SLO, DEFAULT_WORKLOAD, find_capacity, margin_level
    from .parameters import check_class_size

    check_class_size(size)  # never a search's limit named after the onboarding
    line = LiveLine() if on_progress is None else None
    try:
        return find_capacity(
            target,
            slo=replace(DEFAULT_SLO, ttft_ms=float(slo_ttft_ms)),  # reading pace kept
            # Room for the level above the class (the margin), never below the class.
            max_concurrency=max(size, margin_level(size, _MAX_CONCURRENCY)),
            need=size,
            on_progress=on_progress or (line.show if line else None),
            workload=workload or DEFAULT_WORKLOAD,
        )
    finally:
        if line is not None:
            line.clear()


def capacity_verdict(result: CapacityResult, size: int | None) -> str:
    """The capacity's verdict sentence against the class size (probe/text renders it)."""
    from ..probe.text.capacity_text import verdict

    return verdict(result, size)


def capacity_outcome(result: CapacityResult, size: int) -> Outcome:
    """The capacity against the class size, in a sentence and two rows."""
    return Outcome(
        capacity_verdict(result, size),
        [(_("chats at once"), str(result.capacity.concurrency)), (_("class size"), str(size))],
        ok=result.capacity.concurrency >= size,
        value=result,
    )


def capacity_record(result: CapacityResult, size: int | None) -> CapacityRecord:
    """The summary's ``capacity``: the contract JSON, the verdict and the class size."""
    return result.record(size, capacity_verdict(result, size))


def capacity_figure(result: CapacityResult | None) -> Any:
    """The capacity charts, or a note when capacity was not measured."""
    if result is None:
        return Outcome(
            _("capacity not measured: set class_size above 0 to measure it"),
            ok=False,
            pending=True,
        )
    from ..probe.text.plots import capacity_figure as drawn

    return FigureView(drawn(result))


def _short(text: str, limit: int = 160) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
