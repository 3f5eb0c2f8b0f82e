"""Charts of a load test and of a capacity search.

Built on ``matplotlib.figure.Figure`` directly (no pyplot): no global state, no
window, safe under the Agg backend and in threads. Figures are returned,
never shown; a notebook displays them, the CLI saves them. Texts go through
``fonts.plot_gettext()`` (Chinese only with a CJK font, never boxes).

Throughput over time counts each token when it *arrives*: a request's tokens
are spread evenly from its first token to its end (the mock and most servers
pace them evenly), not all counted when the request ends, which showed 0
tokens/s for the first seconds and then spikes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...fonts import plot_gettext
from .capacity_table import limited_by_label

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..load.capacity_result import CapacityFindings as CapacityResult

__all__ = ["capacity_figure", "load_figure", "peak_concurrency", "token_arrivals"]


def _empty(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)


def _distribution(ax: Axes, values: pd.Series, title: str, color: str) -> None:
    t = plot_gettext()
    ax.set_title(title)
    ax.set_xlabel(t("milliseconds"))
    ax.set_ylabel(t("requests"))
    if values.empty:
        _empty(ax, t("no successful request"))
        return
    ax.hist(values, bins=min(30, max(5, len(values) // 3)), color=color, alpha=0.8)
    for q, style in ((0.5, "-"), (0.9, "--"), (0.99, ":")):
        x = float(values.quantile(q))
        ax.axvline(x, color="black", linestyle=style, linewidth=1, label=f"p{int(q * 100)} {x:.1f}")
    ax.legend(fontsize="small")


def token_arrivals(rows: pd.DataFrame, edges: np.ndarray) -> np.ndarray:
    """Output tokens arriving in each time bin: each request's spread over its decode time."""
    import numpy as np

    good = rows[rows["ok"]]
    if good.empty:
        return np.zeros(len(edges) - 1)
    ends = good["end_s"].to_numpy(dtype=float)
    ttft = good["ttft_ms"].fillna(0).to_numpy(dtype=float) / 1000
    firsts = np.minimum(good["start_s"].to_numpy(dtype=float) + ttft, ends)
    tokens = good["output_tokens"].to_numpy(dtype=float)
    lo, hi = edges[:-1][None, :], edges[1:][None, :]
    a, b = firsts[:, None], ends[:, None]
    span = np.maximum(b - a, 1e-9)
    overlap = np.clip(np.minimum(b, hi) - np.maximum(a, lo), 0, None) / span
    # A reply sent in one piece (no decode time) counts whole in the bin of its end.
    instant = (ends - firsts) <= 1e-9
    share = np.where(instant[:, None], (ends[:, None] >= lo) & (ends[:, None] < hi), overlap)
    return (share * tokens[:, None]).sum(axis=0)


def peak_concurrency(rows: pd.DataFrame) -> int:
    """The most requests in flight at once (from their start and end times)."""
    events = [(s, 1) for s in rows["start_s"]] + [(e, -1) for e in rows["end_s"]]
    peak = level = 0
    for _, step in sorted(events, key=lambda ev: (ev[0], ev[1])):
        level += step
        peak = max(peak, level)
    return peak


def _throughput(ax: Axes, rows: pd.DataFrame) -> None:
    import numpy as np

    t = plot_gettext()
    ax.set_title(t("Throughput over time"))
    ax.set_xlabel(t("seconds since the start"))
    ax.set_ylabel(t("requests/s"), color="tab:blue")
    good = rows[rows["ok"]]
    if good.empty:
        _empty(ax, t("no successful request"))
        return
    end = float(rows["end_s"].max())
    width = max(end / 30, 0.05)
    edges = np.arange(0.0, end + width, width)
    counts, _ = np.histogram(good["end_s"], bins=edges)
    mids = edges[:-1] + width / 2
    ax.step(mids, counts / width, where="mid", color="tab:blue", label=t("requests/s (finished)"))
    twin = ax.twinx()  # its own scale: tokens/s would flatten requests/s on a shared one
    tokens = token_arrivals(rows, edges) / width
    twin.plot(
        mids, tokens, color="tab:orange", linestyle="--", label=t("output tokens/s (arrived)")
    )
    twin.set_ylabel(t("output tokens/s"), color="tab:orange")
    ax.set_ylim(bottom=0)
    twin.set_ylim(bottom=0)
    lines = ax.get_lines() + twin.get_lines()
    ax.legend(
        lines, [str(line.get_label()) for line in lines], fontsize="small", loc="lower center"
    )


def load_figure(
    rows: pd.DataFrame, title: str = "Load test", concurrency: int | None = None
) -> Figure:
    """Four panels: latency, TTFT and inter-token histograms; throughput over time."""
    from matplotlib.figure import Figure

    t = plot_gettext()
    fig = Figure(figsize=(17, 3.8), layout="constrained")
    axes = fig.subplots(1, 4)
    good = rows[rows["ok"]] if not rows.empty else rows
    failed = len(rows) - len(good)
    c = concurrency if concurrency is not None else peak_concurrency(rows)
    fig.suptitle(
        t("{title}: {n} requests at concurrency {c}, {failed} failed").format(
            title=title, n=len(rows), c=c, failed=failed
        )
    )
    _distribution(axes[0], good["latency_ms"].dropna(), t("Latency (whole reply)"), "tab:green")
    _distribution(axes[1], good["ttft_ms"].dropna(), t("Time to first token"), "tab:purple")
    itl = good["itl_mean_ms"].dropna() if "itl_mean_ms" in good else good["ttft_ms"].iloc[:0]
    _distribution(axes[2], itl, t("Inter-token latency (per request)"), "tab:cyan")
    _throughput(axes[3], rows)
    return fig


def _percentile_panel(ax: Axes, result: CapacityResult, key: str, slo: float | None) -> None:
    t = plot_gettext()
    levels = sorted(result.levels, key=lambda lv: lv.concurrency)
    xs = [lv.concurrency for lv in levels]
    for q, style in (("p50", ":"), ("p90", "-")):
        ys = [getattr(lv, key).get(q) for lv in levels]
        ax.plot(xs, [float("nan") if y is None else y for y in ys], style, marker="o", label=q)
    missed = [lv for lv in levels if not lv.meets_slo]
    ax.plot(
        [lv.concurrency for lv in missed],
        [getattr(lv, key).get("p90") or float("nan") for lv in missed],
        "x",
        color="tab:red",
        markersize=10,
        label=t("SLO missed"),
    )
    if slo is not None:
        ax.axhline(slo, color="tab:red", linestyle="--", linewidth=1, label=t("SLO"))
    if all(getattr(lv, key).get("p90") is None for lv in levels):
        _empty(ax, t("no successful request"))
    _knee(ax, result)
    ax.set_xlabel(t("chats at once (concurrency)"))
    ax.set_ylabel(t("milliseconds"))
    ax.legend(fontsize="small")


def _knee(ax: Axes, result: CapacityResult) -> None:
    t = plot_gettext()
    cap = result.capacity.concurrency
    if cap:
        ax.axvline(cap, color="tab:green", linewidth=1.5, label=t("capacity {n}").format(n=cap))
    knee = result.saturation
    if knee is not None and knee != cap:
        ax.axvline(knee, color="grey", linestyle="-.", linewidth=1, label=t("throughput knee"))


def capacity_figure(result: CapacityResult) -> Figure:
    """TTFT and ITL percentiles against concurrency (SLO line, capacity marked); throughput."""
    from matplotlib.figure import Figure

    t = plot_gettext()
    fig = Figure(figsize=(15, 4), layout="constrained")
    axes = fig.subplots(1, 3)
    cap = result.capacity
    fig.suptitle(
        t("Capacity: {n} chats at once within the SLO (limited by {limited_by})").format(
            n=cap.concurrency, limited_by=limited_by_label(cap.limited_by, t)
        )
    )
    axes[0].set_title(t("Time to first token"))
    axes[1].set_title(t("Inter-token latency"))
    axes[2].set_title(t("Throughput"))
    if not result.levels:
        for ax in axes:
            _empty(ax, t("nothing measured"))
        return fig
    _percentile_panel(axes[0], result, "ttft_ms", result.slo.ttft_ms)
    _percentile_panel(axes[1], result, "itl_ms", result.slo.itl_ms)
    _throughput_levels(axes[2], result)
    measured = sorted({lv.concurrency for lv in result.levels})
    for ax in axes:
        ax.set_xscale("log", base=2)
        # Ticks at the levels measured only (a class's search measures 40 and 60, not 32
        # and 64), and limits from them: when nothing was served no point is drawn, and
        # matplotlib's default limits (0, 1) cannot be log-scaled.
        ax.set_xlim(measured[0] / 1.3, measured[-1] * 1.3)
        ax.set_xticks(measured)
        ax.xaxis.set_minor_locator(_no_ticks())
        ax.xaxis.set_major_formatter(_int_formatter())
    return fig


def _throughput_levels(ax: Axes, result: CapacityResult) -> None:
    t = plot_gettext()
    levels = sorted(result.levels, key=lambda lv: lv.concurrency)
    xs = [lv.concurrency for lv in levels]
    # Bars and a line: tokens/s is often requests/s times a constant, and two lines on
    # twin axes would then lie exactly on top of each other.
    widths = [x * 0.3 for x in xs]  # equal widths on the log axis
    ax.bar(
        xs,
        [lv.requests_per_s or 0.0 for lv in levels],
        width=widths,
        color="tab:blue",
        alpha=0.45,
        label=t("requests/s"),
    )
    ax.set_ylabel(t("requests/s"), color="tab:blue")
    ax.set_xlabel(t("chats at once (concurrency)"))
    twin = ax.twinx()
    twin.plot(
        xs,
        [lv.output_tokens_per_s or 0.0 for lv in levels],
        "--s",
        color="tab:orange",
        label=t("output tokens/s"),
    )
    twin.set_ylabel(t("output tokens/s"), color="tab:orange")
    ax.set_ylim(bottom=0)
    twin.set_ylim(bottom=0)
    _knee(ax, result)
    handles = ax.get_legend_handles_labels()
    more = twin.get_legend_handles_labels()
    ax.legend(handles[0] + more[0], handles[1] + more[1], fontsize="small", loc="lower right")


def _no_ticks() -> Any:
    from matplotlib.ticker import NullLocator

    return NullLocator()


def _int_formatter() -> Any:
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda x, _pos: f"{x:g}")
