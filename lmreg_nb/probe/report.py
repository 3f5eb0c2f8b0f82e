"""The probe's public face: check an endpoint (conformance + figures + load test), stream a chat.

``performance`` has the shape of the contract's ``summary`` (``lmreg-nb check --json``:
lmreg_nb/schemas/check.schema.json).
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
from ..i18n import _
from ..secret import Masker
from ..summary.client import ClientLag
from ..summary.performance import Performance
from ..summary.server import ServerFigures
from ..summary.workload import Workload
from .blocking import blocking
from .checks.conformance import CheckResult, Conformance
from .checks.context_window import DEFAULT_CONTEXT_NEED, ContextNeed
from .checks.measured import judge_load, judge_prefix_cache, load_not_run
from .checks.suite import ChatOutcome, make_client, run_checks
from .load.fixed import MAX_CONCURRENCY, MAX_REQUESTS, LoadResult, run_load
from .load.metrics import RequestRow, request_metrics
from .load.prefix import prefix_probe
from .load.workload import WorkloadSpec, prepare_workload
from .loop_lag import LoopLag
from .target import Target
from .text.checks import worded
from .text.report_text import format_report, sorted_checks
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
    """What :func:`check_endpoint` found: check rows, the figures (``performance``: the JSON's
    ``summary``), per-request rows."""

    url: str
    model: str
    checks: list[CheckResult]
    performance: Performance
    rows: pd.DataFrame | None = None
    metrics: RequestRow | None = None  # the one streamed check request (a table row)
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
        return not any(c.severity == "error" and c.failed for c in self.checks)

    @property
    def failed(self) -> list[CheckResult]:
        """The failed checks, most serious first."""
        return [c for c in _sorted(self.checks) if c.failed]

    def to_json(self) -> dict[str, Any]:
        """``{"checks": [...], "summary": {...}, "workload": {...} | None, "client": {...}
        | None, "server": {...} | None}`` (``check.schema.json``)."""
        return {
            "checks": [c.to_json() for c in self.checks],
            "summary": self.performance.to_json(),
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
            f"failed={bad}, requests={self.performance.requests})"
        )


def _sorted(checks: list[CheckResult]) -> list[CheckResult]:
    return sorted_checks(checks)


def _single_performance(ex: Exchange | None) -> tuple[Performance, LoadResult]:
    """The figures of the one measured check request (see the module docstring)."""
    load = LoadResult()
    if ex is not None:
        row = request_metrics(ex)
        load.rows.append(row)
        if ex.ok:
            load.gaps_ms.extend(g * 1000 for g in ex.gaps)
        load.duration_s = ex.latency or 0.0
    return load.performance(load_test=False), load


#: How a server answers a prompt longer than its window: vLLM and llama.cpp a 400;
#: llama-cpp-python a 200 stream that closes without an event.
TOO_LONG_KINDS = frozenset({"status 400", "bad stream"})


def _load_row(
    load: LoadResult, requests: int, max_duration: float, *, window_refused: bool = False
) -> CheckResult:
    """The load-test row; ``window_refused``: the context-window check saw a prompt refused."""
    figures = load.performance()
    return judge_load(
        done=figures.requests,
        requests=requests,
        errors=figures.errors,
        concurrency=load.concurrency,
        seconds=load.duration_s,
        deadline=max_duration,
        kinds=kinds_text(load.errors_by_kind),
        local_limit=LOCAL_LIMIT in load.errors_by_kind,
        cut_streams=load.cut_streams,
        too_long=window_refused and set(load.errors_by_kind) <= TOO_LONG_KINDS,
        resent=load.resent,
        disbelieved=load.usage_disbelieved,
    )


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
    context_need = ContextNeed(context_need)  # a ContextNeed given is not checked again
    # The load test's workload (the lesson by default), within the context need: made
    # (and so checked) only when there is a load test to send it.
    spec = _load_workload(workload, context_need) if requests > 0 else None
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


def _load_workload(workload: WorkloadSpec | None, context_need: ContextNeed) -> WorkloadSpec:
    """``workload`` (the lesson by default) bounded by ``context_need``."""
    if workload is None:
        return WorkloadSpec(context_need=context_need)
    if workload.context_need != context_need:
        return dataclasses.replace(workload, context_need=context_need)
    return workload


async def _load_part(
    target: Target,
    checks: list[CheckResult],
    conf: Conformance,
    spec: WorkloadSpec | None,
    lag: LoopLag,
    requests: int,
    concurrency: int,
    max_duration: float,
    max_tokens: int,
    progress: bool,
) -> tuple[LoadResult | None, Workload | None]:
    """The prefix probe and the load test (their rows join ``checks``), when asked for."""
    if requests <= 0 or spec is None:
        return None, None
    if not conf.answered_stream:
        checks.append(load_not_run(conf.stage))
        return None, None
    log.info("load test: %d requests at concurrency %d", requests, concurrency)
    work = await prepare_workload(target, spec)
    if work.lesson_mode:  # before the load, students alone: the prefix cache
        _answered, found = await prefix_probe(work, target, target.timeout, lag=lag)
        if found is not None:
            checks.append(judge_prefix_cache(found))
    load = await run_load(
        target,
        requests,
        concurrency,
        max_duration=max_duration,
        max_tokens=max_tokens,
        progress=progress,
        workload=work,
    )
    refused = any(c.name == "context-window" and c.failed and c.severity == "error"
                  for c in checks)  # fmt: skip
    checks.append(_load_row(load, requests, max_duration, window_refused=refused))
    return load, work.info()


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
        figures, errors_by_kind = load.performance(), load.errors_by_kind
    else:
        figures, single = _single_performance(conf.measured)
        errors_by_kind = single.errors_by_kind
    rows = None
    if load is not None:
        import pandas as pd

        rows = pd.DataFrame([r.to_json() for r in load.rows]).set_index("request")
    # Every text that came from the server is masked before anyone can print it.
    mask = Masker([target.api_key])
    return EndpointReport(
        url=target.url,
        model=target.model,
        checks=[_masked(worded(c), mask) for c in checks],
        performance=figures,
        rows=rows,
        metrics=request_metrics(streamed) if streamed is not None else None,
        errors_by_kind={mask(k): n for k, n in errors_by_kind.items()},
        reply_text=mask(streamed.text) if streamed is not None else "",
        chat_reply=chat.reply,
        chat_error=chat.error,
    )


def _masked(check: CheckResult, mask: Masker) -> CheckResult:
    """The check with every text that came from the server masked (detail and facts)."""
    facts = {k: mask(v) if isinstance(v, str) else v for k, v in check.facts.items()}
    return dataclasses.replace(check, detail=mask(check.detail), facts=facts)


def _check_load_args(requests: int, concurrency: int, max_duration: float) -> None:
    if not 0 <= requests <= MAX_REQUESTS:
        raise ValidationError("requests", _("must be between 0 and {n}").format(n=MAX_REQUESTS))
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise ValidationError(
            "concurrency", _("must be between 1 and {n}").format(n=MAX_CONCURRENCY)
        )
    if max_duration <= 0:
        raise ValidationError("max_duration", _("must be a positive number of seconds"))
