"""An endpoint report in words: the CLI's table of check rows and the figures below it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from ...i18n import _
from ...severity import severity_label
from ...summary import SEVERITIES, Check, Percentiles, Workload
from ...summary.client import ClientLag
from ...summary.performance import Performance
from ...summary.server import ServerFigures
from ..wire.reasons import kinds_text
from .client_text import client_sentence, server_lines
from .performance import answer_wait_sentence, pct_line, rate
from .workload_text import workload_sentence

__all__ = ["check_mark", "format_report", "sorted_checks"]


class Report(Protocol):
    """What :func:`format_report` reads of an :class:`~lmreg_nb.probe.EndpointReport`
    (named here: the report imports its words, never the reverse)."""

    @property
    def checks(self) -> Sequence[Check]: ...
    @property
    def performance(self) -> Performance: ...
    @property
    def errors_by_kind(self) -> Mapping[str, int]: ...
    @property
    def workload(self) -> Workload | None: ...
    @property
    def ok(self) -> bool: ...
    @property
    def client(self) -> ClientLag | None: ...
    @property
    def server(self) -> ServerFigures | None: ...


def sorted_checks(checks: Sequence[Check]) -> list[Check]:
    """Errors first, then warnings, then info; within each, failed, not judged, passed."""
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    order = {False: 0, None: 1, True: 2}
    return sorted(checks, key=lambda c: (rank.get(c.severity, len(rank)), order[c.passed]))


def check_mark(check: Check) -> str:
    """The CLI's mark of a row: ``[ ok ]``, ``[FAIL]`` or ``[ -- ]`` (not judged)."""
    if check.passed is None:
        return "[ -- ]"
    return "[ ok ]" if check.passed else "[FAIL]"


def _pct(p: Percentiles | None) -> str:
    if p is None:
        return pct_line(None, None, None)
    return pct_line(p.p50, p.p90, p.p99)


def format_report(report: Report) -> str:
    """A plain-text table of the checks and the summary (for the CLI)."""
    lines = []
    width = max((len(c.name) for c in report.checks), default=10)
    words = {c.severity: severity_label(c.severity) for c in report.checks}
    column = max((len(w) for w in words.values()), default=7)
    for c in sorted_checks(report.checks):
        lines.append(f"{check_mark(c)} {words[c.severity]:<{column}} {c.name:<{width}}  {c.detail}")
    s = report.performance
    lines.append("")
    lines.append(
        _("requests {requests}, errors {errors}").format(requests=s.requests, errors=s.errors)
    )
    if report.errors_by_kind:
        lines.append(_("errors by kind: {kinds}").format(kinds=kinds_text(report.errors_by_kind)))
    lines.append(_("TTFT ms      {figures}").format(figures=_pct(s.ttft_ms)))
    if s.reasoning_apart:  # a reasoning model: thinking comes first
        lines.append(_("answer ms    {figures}").format(figures=_pct(s.first_answer_ms)))
        lines.append("             " + answer_wait_sentence())
    lines.extend("             " + line for line in server_lines(report.server))
    lines.append(_("ITL ms       {figures}").format(figures=_pct(s.itl_ms)))
    lines.append(_("latency ms   {figures}").format(figures=_pct(s.latency_ms)))
    rps, tps = s.requests_per_s, s.output_tokens_per_s
    if s.load_test:  # one request's 1/latency is no throughput: never stated as measured
        lines.append(
            _("throughput   {rps} requests/s, {tps} output tokens/s").format(
                rps=rate(rps), tps=rate(tps)
            )
        )
    if report.workload is not None:  # what the load test sent
        lines.append(_("workload: {text}").format(text=workload_sentence(report.workload)))
    busy = client_sentence(report.client)
    if busy is not None:
        lines.append(busy)
    lines.append(
        _("verdict: OK") if report.ok else _("verdict: FAILED (a check of severity error failed)")
    )
    return "\n".join(lines)
