"""The capacity result in words and tables: the verdict sentence, the levels table, CLI text."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..i18n import _, ngettext
from .levels import SLO, Level
from .reasons import kinds_text

if TYPE_CHECKING:
    from pandas import DataFrame

    from .capacity import CapacityResult

__all__ = ["format_capacity", "slo_phrase", "table", "verdict"]

#: Columns of the levels table (identifiers, as in the JSON; never translated).
COLUMNS = (
    "concurrency",
    "requests",
    "errors",
    "ttft_p50_ms",
    "ttft_p90_ms",
    "itl_p50_ms",
    "itl_p90_ms",
    "latency_p90_ms",
    "requests_per_s",
    "output_tokens_per_s",
    "meets_slo",
)


def _duration(ms: float) -> str:
    if ms >= 1000:
        return _("{seconds} s").format(seconds=f"{ms / 1000:.3g}")
    return _("{ms} ms").format(ms=f"{ms:.3g}")


def slo_phrase(slo: SLO) -> str:
    """``first token p90 under 2 s`` (and the ITL part when the SLO has one)."""
    if slo.itl_ms is None:
        return _("first token p90 under {ttft}").format(ttft=_duration(slo.ttft_ms))
    return _("first token p90 under {ttft} and time between tokens p90 under {itl}").format(
        ttft=_duration(slo.ttft_ms), itl=_duration(slo.itl_ms)
    )


def _served(n: int, slo: str, class_size: int | None, at_least: bool) -> str:
    if class_size is None:
        if at_least:
            text = ngettext(
                "The model serves at least {n} chat at once with {slo} (the most tried).",
                "The model serves at least {n} chats at once with {slo} (the most tried).",
                n,
            )
        else:
            text = ngettext(
                "The model serves {n} chat at once with {slo}.",
                "The model serves {n} chats at once with {slo}.",
                n,
            )
    elif n >= class_size:
        text = ngettext(
            "The model serves {n} chat at once with {slo}; enough for a class of {size}.",
            "The model serves {n} chats at once with {slo}; enough for a class of {size}.",
            n,
        )
    else:
        text = ngettext(
            "The model serves {n} chat at once with {slo}; a class of {size} needs more.",
            "The model serves {n} chats at once with {slo}; a class of {size} needs more.",
            n,
        )
    return text.format(n=n, slo=slo, size=class_size)


def _none_served(result: CapacityResult) -> str:
    first = min(result.levels, key=lambda lv: lv.concurrency, default=None)
    slo = slo_phrase(result.slo)
    if first is None:
        return _("Nothing was measured: the search stopped before its first level.")
    if first.failed == "ttft":
        return _(
            "The model serves no chat with {slo}: even alone, first token p90 was {got}."
        ).format(slo=slo, got=_duration(first.ttft_ms.get("p90") or 0.0))
    if first.failed == "itl":
        return _(
            "The model serves no chat with {slo}: even alone, time between tokens p90 was {got}."
        ).format(slo=slo, got=_duration(first.itl_ms.get("p90") or 0.0))
    return ngettext(
        "The model serves no chat: {errors} of {n} request failed, even alone ({error}).",
        "The model serves no chat: {errors} of {n} requests failed, even alone ({error}).",
        first.requests,
    ).format(errors=first.errors, n=first.requests, error=first.first_error or "-")


def verdict(result: CapacityResult, class_size: int | None = None) -> str:
    """The verdict: one sentence, then a sentence for each thing a person must know."""
    cap = result.capacity
    if cap.concurrency == 0:
        sentences = [_none_served(result)]
    else:
        at_least = cap.limited_by in ("max-concurrency", "saturation", "time", "interrupted")
        sentences = [_served(cap.concurrency, slo_phrase(result.slo), class_size, at_least)]
    if result.cut_streams or result.capacity.limited_by == "cut-streams":
        sentences.append(
            _(
                "The server cuts a running reply when a new request arrives (llama.cpp"
                " interrupt_requests), so it really serves only what is counted here;"
                " start llama-cpp-python with --interrupt_requests False, or for Ollama"
                " set OLLAMA_NUM_PARALLEL."
            )
        )
    knee = result.saturation
    if knee is not None and cap.concurrency > 0:
        sentences.append(
            ngettext(
                "Throughput stops rising past {n} chat at once: more chats only wait longer.",
                "Throughput stops rising past {n} chats at once: more chats only wait longer.",
                knee,
            ).format(n=knee)
        )
    if result.tokens_from_chunks:
        sentences.append(_("The server sent no usage, so token figures are counted from chunks."))
    if result.stopped == "time":
        sentences.append(_("The search reached its time limit before it finished."))
    elif result.stopped == "interrupted":
        sentences.append(_("The search was interrupted: this is what was measured so far."))
    return " ".join(sentences)


def _row(level: Level) -> dict[str, Any]:
    return {
        "concurrency": level.concurrency,
        "requests": level.requests,
        "errors": level.errors,
        "ttft_p50_ms": level.ttft_ms.get("p50"),
        "ttft_p90_ms": level.ttft_ms.get("p90"),
        "itl_p50_ms": level.itl_ms.get("p50"),
        "itl_p90_ms": level.itl_ms.get("p90"),
        "latency_p90_ms": level.latency_ms.get("p90"),
        "requests_per_s": level.requests_per_s,
        "output_tokens_per_s": level.output_tokens_per_s,
        "meets_slo": level.meets_slo,
    }


def table(result: CapacityResult) -> DataFrame:
    """One row per level, by concurrency."""
    import pandas as pd

    rows = [_row(lv) for lv in sorted(result.levels, key=lambda lv: lv.concurrency)]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def format_capacity(result: CapacityResult, class_size: int | None = None) -> str:
    """Plain text for the CLI: the levels table, the capacity and the verdict."""
    from .capacity_table import levels_text, limited_by_label

    lines = levels_text(result.levels).splitlines()  # the record's columns, in words
    for level in result.levels:
        if level.errors_by_kind:
            kinds = kinds_text(level.errors_by_kind)
            lines.append(
                _("concurrency {c}: errors by kind: {kinds}").format(
                    c=level.concurrency, kinds=kinds
                )
            )
    cap = result.capacity
    lines.append("")
    lines.append(
        _("capacity: {n} (limited by {limited_by})").format(
            n=cap.concurrency, limited_by=limited_by_label(cap.limited_by)
        )
    )
    lines.append(_("verdict: {text}").format(text=verdict(result, class_size)))
    return "\n".join(lines)
