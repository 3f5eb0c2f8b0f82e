"""The client's own stalls in words: the report's one sentence about them.

A stall is a wake of the toolkit's event loop more than 50 ms late
(:class:`~lmreg_nb.summary.ClientLag`): whatever held this computer then (the model
server itself on the same cores, another program) delayed the toolkit's clocks too.
"""

from __future__ import annotations

from ...i18n import _, ngettext
from ...summary.client import ClientLag
from ...summary.server import VLLM_METRICS, ServerFigures

__all__ = ["MARGIN_MS", "client_sentence", "seconds", "server_lines"]

#: A stall this long (ms) can move a first-token percentile or a finding past its margin.
MARGIN_MS = 100.0


def seconds(ms: float) -> str:
    """Milliseconds as seconds for a sentence: ``1.2``."""
    return f"{ms / 1000:.1f}"


def client_sentence(lag: ClientLag | None) -> str | None:
    """The report's one sentence when the client's stalls could have moved its figures
    (None: no stall long enough to matter, or not measured)."""
    if lag is None or not lag.stalls or lag.worst_stall_ms < MARGIN_MS:
        return None
    return ngettext(
        "Measured from a busy machine: this computer stalled {n} time, up to {seconds} s "
        "({share} % of the run), so first-token times may read up to {seconds} s longer "
        "than the server's. Run the check from another computer for the server's own times.",
        "Measured from a busy machine: this computer stalled {n} times, up to {seconds} s "
        "({share} % of the run), so first-token times may read up to {seconds} s longer "
        "than the server's. Run the check from another computer for the server's own times.",
        lag.stalls,
    ).format(
        n=lag.stalls,
        seconds=seconds(lag.worst_stall_ms),
        share=f"{lag.stalled_share * 100:.0f}",
    )


def server_lines(server: ServerFigures | None) -> list[str]:
    """The server's own figures beside the client's (lines of the report; none without)."""
    if server is None:
        return []

    def ms(q: str) -> str:
        value = server.ttft_ms.get(q)
        if value is None:
            return "-"
        return (_("<= {ms}") if server.bucketed else "{ms}").format(ms=f"{value:.0f}")

    figures = " ".join(f"{q} {ms(q)}" for q in ("p50", "p90", "p99"))
    if server.source == VLLM_METRICS:
        head = ngettext(
            "server's own TTFT ms (vLLM /metrics, {n} request): {figures}",
            "server's own TTFT ms (vLLM /metrics, {n} requests): {figures}",
            server.requests,
        )
    else:
        head = ngettext(
            "server's own prompt ms (llama.cpp timings, {n} request): {figures}",
            "server's own prompt ms (llama.cpp timings, {n} requests): {figures}",
            server.requests,
        )
    lines = [head.format(n=server.requests, figures=figures)]
    if server.prefix_cache_hit_share is not None:
        lines.append(
            _("server's prefix cache: {share} % of prompt tokens looked up were hits").format(
                share=f"{server.prefix_cache_hit_share * 100:.0f}"
            )
        )
    return lines
