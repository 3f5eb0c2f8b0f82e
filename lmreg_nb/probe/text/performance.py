"""The probe's figures in words: the percentiles of a load test (or of one request).

Every view that shows a :class:`~lmreg_nb.summary.performance.Performance` (the CLI's
``check``, the record in text and HTML) takes its sentences from here.
"""

from __future__ import annotations

from ...i18n import _

__all__ = ["answer_wait_sentence", "ms", "pct_line", "rate"]


def answer_wait_sentence() -> str:
    """Which of the two first-token times students feel, in one sentence."""
    return _(
        "Students feel the time to the first answer token (first_answer_ms): a reasoning "
        "model's thinking is not shown to them. The time to first token (ttft_ms) counts "
        "any token, thinking included; for a model that does not reason the two are the same."
    )


def ms(value: float | None) -> str:
    """Milliseconds as people read them: whole ms from 100 ms up, one decimal below ("—": none).

    Never three decimals: the figures are not that exact (a loaded client moves them by
    milliseconds).
    """
    if value is None:
        return "—"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}"


def rate(value: float | None) -> str:
    """A rate (requests or tokens a second) as the record shows it: three significant
    digits below 100 ("2.75"), one decimal from 100 up ("174.4"); "-": not measured."""
    if value is None:
        return "-"
    return f"{value:,.1f}" if abs(value) >= 100 else f"{value:.3g}"


def pct_line(p50: float | None, p90: float | None, p99: float | None) -> str:
    """``p50 12.3 p90 45.6 p99 78.9`` (a "-" for a figure not measured)."""
    return " ".join(
        f"{q} {v:.1f}" if v is not None else f"{q} -"
        for q, v in (("p50", p50), ("p90", p90), ("p99", p99))
    )
