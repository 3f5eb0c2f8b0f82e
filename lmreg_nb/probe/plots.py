"""Figures of a load test: latency and TTFT distributions, throughput over time.

Built on ``matplotlib.figure.Figure`` directly (no pyplot): no global state, no
window, safe under the Agg backend and in threads. The figure is returned,
never shown; a notebook displays it, the CLI saves it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["load_figure"]


def _distribution(ax: Axes, values: pd.Series, title: str, color: str) -> None:
    ax.set_title(title)
    ax.set_xlabel("milliseconds")
    ax.set_ylabel("requests")
    if values.empty:
        ax.text(0.5, 0.5, "no successful request", ha="center", va="center", transform=ax.transAxes)
        return
    ax.hist(values, bins=min(30, max(5, len(values) // 3)), color=color, alpha=0.8)
    for q, style in ((0.5, "-"), (0.9, "--"), (0.99, ":")):
        x = float(values.quantile(q))
        ax.axvline(x, color="black", linestyle=style, linewidth=1, label=f"p{int(q * 100)} {x:.0f}")
    ax.legend(fontsize="small")


def _throughput(ax: Axes, rows: pd.DataFrame) -> None:
    import numpy as np

    ax.set_title("Throughput over time")
    ax.set_xlabel("seconds since the start")
    ax.set_ylabel("requests/s")
    good = rows[rows["ok"]]
    if good.empty:
        ax.text(0.5, 0.5, "no successful request", ha="center", va="center", transform=ax.transAxes)
        return
    end = float(rows["end_s"].max())
    width = max(end / 30, 0.05)
    edges = np.arange(0.0, end + width, width)
    counts, _ = np.histogram(good["end_s"], bins=edges)
    tokens, _ = np.histogram(good["end_s"], bins=edges, weights=good["output_tokens"])
    mids = edges[:-1] + width / 2
    ax.plot(mids, counts / width, color="tab:blue", marker=".", label="requests/s")
    twin = ax.twinx()
    twin.plot(mids, tokens / width, color="tab:orange", marker=".", label="output tokens/s")
    twin.set_ylabel("output tokens/s")
    lines = ax.get_lines() + twin.get_lines()
    ax.legend(
        lines, [str(line.get_label()) for line in lines], fontsize="small", loc="lower center"
    )


def load_figure(rows: pd.DataFrame, title: str = "Load test") -> Figure:
    """Three panels: latency and TTFT histograms (p50/p90/p99 marked), throughput over time."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13, 3.8), layout="constrained")
    axes = fig.subplots(1, 3)
    good = rows[rows["ok"]] if not rows.empty else rows
    failed = len(rows) - len(good)
    fig.suptitle(f"{title}: {len(rows)} requests, {failed} failed")
    _distribution(axes[0], good["latency_ms"].dropna(), "Latency (whole reply)", "tab:green")
    _distribution(axes[1], good["ttft_ms"].dropna(), "Time to first token", "tab:purple")
    _throughput(axes[2], rows)
    return fig
