"""The probe's public face: check an endpoint (conformance + figures + load test), stream a chat.

``summary`` has the contract's shape (DESIGN.md, ``lmreg-nb check --json``).
With ``requests=0``, or when the load test is skipped because the streamed
check request failed, it describes that single streamed check request
(``requests`` 1; its TTFT, ITL and latency as every percentile; the rates are
1/latency and tokens/latency); when the checks stopped before any request got
an HTTP answer, it counts that one failed request.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ValidationError
from ..i18n import _, sentences
from ..secret import Masker
from ..severity import severity_label
from ..summary import Severity
from ..summary.client import ClientLag
from ..summary.server import ServerFigures
from ..summary.workload import PrefixCache, Workload
from .blocking import blocking
from .checks.conformance import SEVERITIES, CheckResult, Conformance
from .checks.context_window import DEFAULT_CONTEXT_NEED, check_context_need
from .checks.suite import ChatOutcome, make_client, run_checks
from .load.fixed import MAX_CONCURRENCY, MAX_REQUESTS, LoadResult, run_load
from .load.metrics import answer_wait_sentence, request_metrics
from .load.prefix import prefix_probe
from .load.workload import WorkloadSpec, check_workload, prepare_workload
from .loop_lag import LoopLag
from .target import Target
from .text.client_text import client_sentence, server_lines
from .text.load_text import load_notes
from .wire.chat import ChatEndpointError
from .wire.exchange import Exchange
from .wire.reasons import LOCAL_LIMIT, kinds_text
from .wire.server_metrics import figures_between, llamacpp_figures, read_metrics

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = [
    "ChatEndpointError",
    "EndpointReport",
    "check_endpoint",
    "check_endpoint_async",
    "format_report",
]

log = logging.getLogger("lmreg_nb")


@dataclass
class EndpointReport:
    """What :func:`check_endpoint` found: check rows, the summary, per-request rows."""

    url: str
    model: str
    checks: list[CheckResult]
    summary: dict[str, Any]
    rows: pd.DataFrame | None = None
    metrics: dict[str, Any] | None = None  # the one streamed check request
    errors_by_kind: dict[str, int] = field(default_factory=dict)
    reply_text: str = ""  # the streamed check reply (untrusted: escape before showing)
    chat_reply: str | None = None  # the reply to ``chat_prompt`` (masked; untrusted)
    chat_error: str | None = None  # why that reply failed (one line, masked)
    #: What the load test sent (None: no load test ran).
    workload: Workload | None = None
    #: The toolkit's own stalls over the whole run (checks, prefix probe, load test).
    client: ClientLag | None = None
    #: What the server measured itself over the run (None: it publishes nothing we read).
    server: ServerFigures | None = None

    @property
    def ok(self) -> bool:
        """No check of severity error failed."""
        return not any(c.severity == "error" and not c.passed for c in self.checks)

    @property
    def failed(self) -> list[CheckResult]:
        """The failed checks, most serious first."""
        return [c for c in _sorted(self.checks) if not c.passed]

    def to_json(self) -> dict[str, Any]:
        """``{"checks": [...], "summary": {...}, "workload": {...} | None, "client": {...}
        | None, "server": {...} | None}`` (DESIGN.md)."""
        return {
            "checks": [c.to_json() for c in self.checks],
            "summary": dict(self.summary),
            "workload": self.workload.to_json() if self.workload is not None else None,
            "client": self.client.to_json() if self.client is not None else None,
            "server": self.server.to_json() if self.server is not None else None,
        }

    def checks_frame(self) -> pd.DataFrame:
        """The checks as a table: errors first, then warnings, then info; failed first."""
        import pandas as pd

        return pd.DataFrame(
            [c.to_json() for c in _sorted(self.checks)],
            columns=["name", "passed", "severity", "detail"],
        )

    def figure(self) -> Figure | None:
        """Latency and TTFT distributions and throughput over time; None without a load test."""
        if self.rows is None or self.rows.empty:
            return None
        from .text.plots import load_figure

        return load_figure(self.rows, title=_("Load test of {model}").format(model=self.model))

    def __repr__(self) -> str:
        bad = len(self.failed)
        return (
            f"EndpointReport(url={self.url!r}, ok={self.ok}, checks={len(self.checks)}, "
            f"failed={bad}, requests={self.summary.get('requests')})"
        )


def _sorted(checks: list[CheckResult]) -> list[CheckResult]:
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(checks, key=lambda c: (rank.get(c.severity, len(rank)), c.passed))


def _single_summary(ex: Exchange | None) -> tuple[dict[str, Any], LoadResult]:
    """The summary of the one measured check request (see the module docstring)."""
    load = LoadResult()
    if ex is not None:
        row = request_metrics(ex)
        load.rows.append(row)
        if ex.ok:
            load.gaps_ms.extend(g * 1000 for g in ex.gaps)
        load.duration_s = ex.latency or 0.0
    return load.summary(), load


#: How a server answers a prompt longer than its window: vLLM and llama.cpp a 400;
#: llama-cpp-python a 200 stream that closes without an event.
TOO_LONG_KINDS = frozenset({"status 400", "bad stream"})


def _load_row(
    load: LoadResult, requests: int, max_duration: float, *, window_refused: bool = False
) -> CheckResult:
    """The load-test row; ``window_refused``: the context-window check saw a prompt refused."""
    summary = load.summary()
    done, errors = summary["requests"], summary["errors"]
    kinds = kinds_text(load.errors_by_kind)
    facts = {
        "done": done,
        "requests": requests,
        "c": load.concurrency,
        "seconds": f"{load.duration_s:.1f}",
        "deadline": f"{max_duration:g}",
    }
    if done < requests:
        head = _(
            "{done} of {requests} requests at concurrency {c} in {seconds} s "
            "(stopped at the {deadline} s deadline)"
        ).format(**facts)
    else:
        head = _("{done} of {requests} requests at concurrency {c} in {seconds} s").format(**facts)
    notes = load_notes(load)  # what to know beside the figures (said once each)
    if not errors:
        detail = _("{head}, no error").format(head=head)
        return CheckResult("load-test", True, "warning", _with_notes(detail, notes))
    severity: Severity = "error" if errors == done else "warning"
    if LOCAL_LIMIT in load.errors_by_kind:
        # Requests this computer could not even send say nothing about the server.
        detail = _(
            "{head}: {errors} failed ({kinds}). This computer ran out of open files "
            "(ulimit -n), so some requests were never sent: raise the limit or lower the "
            "concurrency, then run the load test again"
        ).format(head=head, errors=errors, kinds=kinds)
        return CheckResult("load-test", False, severity, detail)
    if window_refused and errors == done and set(load.errors_by_kind) <= TOO_LONG_KINDS:
        # The lesson's prompts are longer than the server's window: not a matter of load.
        detail = _(
            "{head}: {errors} failed ({kinds}). The lesson's prompts are longer than the "
            "server's context window takes (see context-window): raise the window, or "
            "measure with a shorter lesson (--lesson-tokens) and shorter replies (--max-tokens)"
        ).format(head=head, errors=errors, kinds=kinds)
        return CheckResult("load-test", False, severity, detail)
    detail = _(
        "{head}: {errors} failed ({kinds}). The platform will see such failures under load: "
        "check the server's capacity, rate limits and timeouts"
    ).format(head=head, errors=errors, kinds=kinds)
    if load.cut_streams:  # cut streams: name the fix
        detail += " " + load.advice()
    return CheckResult("load-test", False, severity, _with_notes(detail, notes))


def _with_notes(detail: str, notes: list[str]) -> str:
    """The row's detail, then its notes (whole sentences), as the language joins them."""
    if not notes:
        return detail
    return sentences([_("{text}.").format(text=detail.rstrip(".")), *notes])


async def check_endpoint_async(
    target: Target,
    *,
    requests: int = 0,
    concurrency: int = 1,
    progress: bool = False,
    max_duration: float = 300.0,
    max_tokens: int = 256,
    chat_prompt: str | None = None,
    context_need: int = DEFAULT_CONTEXT_NEED,
    workload: WorkloadSpec | None = None,
) -> EndpointReport:
    """Check a chat endpoint (spec 4.5 and go-live), measure one streamed reply, load-test it.

    ``requests`` > 0 runs a load test of that many streamed requests,
    ``concurrency`` at a time, stopped after ``max_duration`` seconds.
    ``chat_prompt``: one streamed chat reply made concurrently with the checks
    (``report.chat_reply`` / ``report.chat_error``). A ``target`` with a
    registered name (:meth:`Target.from_registered`) has that name tried as
    ``model`` too when it differs. ``context_need``: tokens of the longest prompt
    the course apps send (the context-window check, 1 to 131072). A server that
    fails gives failed check rows, not an exception; a bad argument raises
    :class:`~lmreg_nb.errors.ValidationError`.
    :func:`check_endpoint` is the blocking twin (also inside Jupyter's loop).
    """
    _check_load_args(requests, concurrency, max_duration)
    context_need = check_context_need(context_need)
    # The load test's workload (the lesson by default), within the context need.
    spec = dataclasses.replace(workload or WorkloadSpec(), context_need=context_need)
    if requests > 0:
        check_workload(spec)
    # One watch on the toolkit's own stalls over the whole run (contract: "The client
    # checks itself"), and the server's own figures read before and after it.
    async with LoopLag() as lag, make_client(target.timeout) as client:
        before = await read_metrics(client, target)
        conf, chat = await run_checks(
            client,
            target,
            max_tokens=min(max_tokens, 64),
            chat_prompt=chat_prompt,
            context_need=context_need,
            lag=lag,
        )
        checks = list(conf.checks)
        load, used = await _load_part(
            target, checks, conf, spec, lag, requests, concurrency, max_duration, max_tokens,
            progress,
        )  # fmt: skip
        after = await read_metrics(client, target) if before is not None else None
    report = _report(target, checks, conf, chat, load)
    report.workload = used
    report.client = lag.result()
    report.server = figures_between(before, after) or llamacpp_figures(conf.exchanges())
    return report


async def _load_part(
    target: Target,
    checks: list[CheckResult],
    conf: Conformance,
    spec: WorkloadSpec,
    lag: LoopLag,
    requests: int,
    concurrency: int,
    max_duration: float,
    max_tokens: int,
    progress: bool,
) -> tuple[LoadResult | None, Workload | None]:
    """The prefix probe and the load test (their rows join ``checks``), when asked for."""
    if requests <= 0:
        return None, None
    if not conf.answered_stream:
        checks.append(
            CheckResult(
                "load-test",
                False,
                "info",
                _("not run: the streamed check request failed (see the rows above)"),
            )
        )
        return None, None
    log.info("load test: %d requests at concurrency %d", requests, concurrency)
    work = await prepare_workload(target, spec)
    if work.lesson_mode:  # before the load, students alone: the prefix cache
        _answered, found = await prefix_probe(work, target, target.timeout, lag=lag)
        if found is not None:
            checks.append(_prefix_row(found))
    load = await run_load(
        target,
        requests,
        concurrency,
        max_duration=max_duration,
        max_tokens=max_tokens,
        progress=progress,
        workload=work,
    )
    refused = any(c.name == "context-window" and not c.passed and c.severity == "error"
                  for c in checks)  # fmt: skip
    checks.append(_load_row(load, requests, max_duration, window_refused=refused))
    return load, work.info()


def _prefix_row(found: PrefixCache) -> CheckResult:
    """The prefix-cache finding as an info row (passed when the lesson is reused)."""
    return CheckResult("prefix-cache", found.reused is not False, "info", found.sentence())


#: The blocking twin of :func:`check_endpoint_async` (same parameters).
check_endpoint = blocking(check_endpoint_async)


def _report(
    target: Target,
    checks: list[CheckResult],
    conf: Conformance,
    chat: ChatOutcome,
    load: LoadResult | None,
) -> EndpointReport:
    streamed = conf.streamed
    if load is not None:
        summary, errors_by_kind = load.summary(), load.errors_by_kind
    else:
        summary, single = _single_summary(conf.measured)
        errors_by_kind = single.errors_by_kind
    rows = None
    if load is not None:
        import pandas as pd

        rows = pd.DataFrame(load.rows).set_index("request")
    # Every text that came from the server is masked before anyone can print it.
    mask = Masker([target.api_key])
    return EndpointReport(
        url=target.url,
        model=target.model,
        checks=[dataclasses.replace(c, detail=mask(c.detail)) for c in checks],
        summary=summary,
        rows=rows,
        metrics=request_metrics(streamed) if streamed is not None else None,
        errors_by_kind={mask(k): n for k, n in errors_by_kind.items()},
        reply_text=mask(streamed.text) if streamed is not None else "",
        chat_reply=chat.reply,
        chat_error=chat.error,
    )


def _check_load_args(requests: int, concurrency: int, max_duration: float) -> None:
    if not 0 <= requests <= MAX_REQUESTS:
        raise ValidationError("requests", _("must be between 0 and {n}").format(n=MAX_REQUESTS))
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise ValidationError(
            "concurrency", _("must be between 1 and {n}").format(n=MAX_CONCURRENCY)
        )
    if max_duration <= 0:
        raise ValidationError("max_duration", _("must be a positive number of seconds"))


def format_report(report: EndpointReport) -> str:
    """A plain-text table of the checks and the summary (for the CLI)."""
    lines = []
    width = max((len(c.name) for c in report.checks), default=10)
    words = {c.severity: severity_label(c.severity) for c in report.checks}
    column = max((len(w) for w in words.values()), default=7)
    for c in _sorted(report.checks):
        mark = " ok " if c.passed else "FAIL"
        lines.append(f"[{mark}] {words[c.severity]:<{column}} {c.name:<{width}}  {c.detail}")
    s = report.summary
    lines.append("")

    def pct(key: str) -> str:
        p = s.get(key) or {}
        return " ".join(
            f"{q} {p[q]:.1f}" if p.get(q) is not None else f"{q} -" for q in ("p50", "p90", "p99")
        )

    lines.append(
        _("requests {requests}, errors {errors}").format(requests=s["requests"], errors=s["errors"])
    )
    if report.errors_by_kind:
        lines.append(_("errors by kind: {kinds}").format(kinds=kinds_text(report.errors_by_kind)))
    lines.append(_("TTFT ms      {figures}").format(figures=pct("ttft_ms")))
    if s.get("first_answer_ms") != s.get("ttft_ms"):  # a reasoning model: thinking comes first
        lines.append(_("answer ms    {figures}").format(figures=pct("first_answer_ms")))
        lines.append("             " + answer_wait_sentence())
    lines.extend("             " + line for line in server_lines(report.server))
    lines.append(_("ITL ms       {figures}").format(figures=pct("itl_ms")))
    lines.append(_("latency ms   {figures}").format(figures=pct("latency_ms")))
    rps, tps = s.get("requests_per_s"), s.get("output_tokens_per_s")
    lines.append(
        _("throughput   {rps} requests/s, {tps} output tokens/s").format(
            rps=rps if rps is not None else "-", tps=tps if tps is not None else "-"
        )
    )
    if report.workload is not None:  # what the load test sent
        lines.append(_("workload: {text}").format(text=report.workload.sentence()))
    busy = client_sentence(report.client)
    if busy is not None:
        lines.append(busy)
    lines.append(
        _("verdict: OK") if report.ok else _("verdict: FAILED (a check of severity error failed)")
    )
    return "\n".join(lines)
