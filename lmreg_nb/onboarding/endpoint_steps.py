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

from ..display import FigureView, Outcome, Table
from ..errors import ConfigurationError
from ..i18n import _, ngettext, pgettext
from ..severity import severity_label
from ..summary import CapacityRecord, Check, Step, StepName
from .live import LiveLine

if TYPE_CHECKING:
    from ..models import RegisteredModel
    from ..probe import EndpointReport, Target
    from ..probe.load.capacity import CapacityResult, Progress
    from ..probe.load.workload import WorkloadSpec
    from ..registry.client import RegistryClient
    from ..settings import Settings

__all__ = [
    "capacity_detail",
    "capacity_figure",
    "capacity_outcome",
    "capacity_record",
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
    try:
        return Target.from_settings(settings, url=url, model=model)
    except ConfigurationError as exc:
        # Nothing registered named and the address not configured: the model registered
        # in notebook 02 is the other way, named by its modelName (no copying into .env).
        raise ConfigurationError(
            _(
                "{message}; or check the model registered in notebook 02: set `registered` "
                "to its modelName"
            ).format(message=str(exc).rstrip(".")),
            variable=exc.variable,
        ) from exc


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
    failed = [c for c in checks if c.failed and c.severity == "error"]
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
        [[c.name, _mark(c.passed), severity_label(c.severity), c.detail] for c in checks],
    )


def verdict(checks: Sequence[Check]) -> Outcome:
    """The chat checks in one line: passed, or which required checks failed."""
    if not checks:
        return Outcome(_("chat endpoint: not checked yet"), ok=False, pending=True)
    failed = [c for c in checks if c.failed and c.severity == "error"]
    warned = [c for c in checks if c.failed and c.severity == "warning"]
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


def load_figure(report: EndpointReport | None, skipped: Step | None = None) -> Any:
    """The load test's plots, or why no load test ran: the streamed check failed, or none
    was asked for (``check_requests`` 0); nothing when the checks were skipped (their own
    cell says why)."""
    figure = report.figure() if report is not None else None
    if figure is not None:
        return FigureView(figure)
    if skipped is not None and skipped.skipped_after is not None:
        return None  # the checks' cell above says they were skipped, and why
    row = next((c for c in report.checks if c.name == "load-test"), None) if report else None
    if row is not None and not row.judged:  # asked for, not run: the load-test row says why
        return Outcome(_("no load test: {why}").format(why=row.detail), ok=False, pending=True)
    return Outcome(_("no load test ran: set check_requests above 0 to run one"))


# -- chat -----------------------------------------------------------------------------------
def chat_step(error: str | None, checks: Sequence[Check] = ()) -> Step:
    """The chat step: passed when the model replied. When the checks found why nothing can
    answer (the server does not answer, the address serves no chat), that is the chat's
    failure too, in the same words: one cause, said once."""
    if error:
        found = next((c for c in checks if c.failed and c.cause in _NOTHING_ANSWERS), None)
        return Step(StepName.CHAT, False, found.detail if found is not None else error)
    return Step(StepName.CHAT, True, _("the model replied"))


#: Check causes that leave nothing to answer a chat (the chat step fails for them too).
_NOTHING_ANSWERS = frozenset(
    {"chat-path", "server-down", "server-down-unsaid", "connection-failed"}
)


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


def capacity_detail(result: CapacityResult, size: int) -> str:
    """The capacity step's detail: the one number, enough for the class or not (the verdict
    itself is said once, by the capacity cell and the record's capacity section)."""
    from ..probe.text.capacity_text import capacity_line

    return capacity_line(result.capacity.concurrency, size)


def capacity_outcome(result: CapacityResult, size: int) -> Outcome:
    """The capacity against the class size, in a sentence and two rows."""
    from ..probe.text.capacity_text import verdict as capacity_verdict

    return Outcome(
        capacity_verdict(result, size),
        [(_("chats at once"), str(result.capacity.concurrency)), (_("class size"), str(size))],
        ok=result.capacity.concurrency >= size,
        value=result,
    )


def capacity_record(result: CapacityResult, size: int | None) -> CapacityRecord:
    """The summary's ``capacity``: the contract JSON, the verdict and the class size."""
    from ..probe.text.capacity_text import verdict as capacity_verdict

    return result.record(size, capacity_verdict(result, size))


def capacity_figure(result: CapacityResult | None, step: Step | None = None) -> Any:
    """The capacity charts, or why capacity was not measured: the step failed, or no class
    size was asked for; nothing when it was skipped (its own cell says why)."""
    if result is not None:
        from ..probe.text.plots import capacity_figure as draw

        return FigureView(draw(result))
    if step is not None and step.skipped_after is not None:
        return None  # the capacity cell above says it was skipped, and why
    if step is not None and step.failed:
        text = _("capacity not measured: the capacity step failed ({detail})").format(
            detail=_short(step.detail)
        )
    else:
        text = _("capacity not measured: set class_size above 0 to measure it")
    return Outcome(text, ok=False, pending=True)


def _mark(passed: bool | None) -> str:
    """✔ passed, ✘ failed, – not judged."""
    return "–" if passed is None else "✔" if passed else "✘"


def _short(text: str, limit: int = 160) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
