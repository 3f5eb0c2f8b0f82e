"""The capacity result in words and tables: the verdict sentence, the levels table, CLI text."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ...i18n import _, ngettext
from ...i18n import sentences as join_sentences
from ...summary.workload import Workload
from ..load.levels import SLO, Level
from ..wire.reasons import kinds_text
from .load_text import busy_sentence, resent_sentence, usage_sentence
from .workload_text import prefix_sentence, students_phrase, workload_sentence

if TYPE_CHECKING:
    from pandas import DataFrame

    from ..load.capacity_result import CapacityFindings as CapacityResult

__all__ = [
    "capacity_line",
    "format_capacity",
    "progress_text",
    "slo_phrase",
    "table",
    "verdict",
]


class Progress(Protocol):
    """Where a search is (:class:`lmreg_nb.probe.load.search.Progress`; typed here, not imported:
    the search imports its words, never the reverse)."""

    @property
    def concurrency(self) -> int: ...
    @property
    def requests(self) -> int: ...
    @property
    def level(self) -> Level | None: ...
    @property
    def slo(self) -> SLO | None: ...


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
    """``first token p90 under 2 s`` (and the pace's parts when the SLO has them)."""
    ttft = _duration(slo.ttft_ms)
    if slo.itl_ms is None and slo.pause_ms is None:
        return _("first token p90 under {ttft}").format(ttft=ttft)
    if slo.pause_ms is None:
        return _("first token p90 under {ttft} and time between tokens p90 under {itl}").format(
            ttft=ttft, itl=_duration(slo.itl_ms or 0.0)
        )
    if slo.itl_ms is None:
        return _("first token p90 under {ttft} and no pause in a reply over {pause}").format(
            ttft=ttft, pause=_duration(slo.pause_ms)
        )
    return _(
        "first token p90 under {ttft}, time between tokens p90 under {itl} and no pause in a"
        " reply over {pause}"
    ).format(ttft=ttft, itl=_duration(slo.itl_ms), pause=_duration(slo.pause_ms))


def _got(level: Level, slo: SLO) -> str:
    """``first token p90 0.6 s`` (and the ITL p90 when the SLO has an ITL limit)."""
    ttft = level.ttft_ms.get("p90")
    got = _("first token p90 {got}").format(got=_duration(ttft)) if ttft is not None else ""
    itl = level.itl_ms.get("p90")
    if slo.itl_ms is None or itl is None:
        return got
    return _("first token p90 {got}, time between tokens p90 {itl}").format(
        got=_duration(ttft or 0.0), itl=_duration(itl)
    )


def _pace_missed(level: Level) -> str:
    """Why a level missed the SLO on its replies' pace, in a few words."""
    if not level.paced:
        return _("the time between tokens could not be measured: no reply streamed two tokens")
    if level.failed == "pause":
        return _("the longest pause in a reply p90 {pause}").format(
            pause=_duration(level.longest_pause_ms or 0.0)
        )
    return _("time between tokens p90 {itl}").format(itl=_duration(level.itl_ms.get("p90") or 0.0))


def _figures(level: Level, slo: SLO) -> str:
    """``first token p90 0.6 s of 2 s``: what was measured against the SLO's limit."""
    ttft = level.ttft_ms.get("p90") or 0.0
    if slo.itl_ms is None:
        return _("first token p90 {got} of {limit}").format(
            got=_duration(ttft), limit=_duration(slo.ttft_ms)
        )
    return _(
        "first token p90 {got} of {limit}, time between tokens p90 {itl} of {itl_limit}"
    ).format(
        got=_duration(ttft),
        limit=_duration(slo.ttft_ms),
        itl=_duration(level.itl_ms.get("p90") or 0.0),
        itl_limit=_duration(slo.itl_ms),
    )


def _why(level: Level, slo: SLO) -> str:
    """Why a level missed the SLO, in a few words."""
    failed = level.failed
    if failed is None:  # read back from a record, which keeps only the first failure's kind
        over = level.requests and level.errors / level.requests > slo.max_error_rate
        failed = "errors" if over or level.ttft_ms.get("p90") is None else "ttft"
    if failed in ("itl", "pause") and (failed == "pause" or not level.paced):
        return _pace_missed(level)
    if failed in ("ttft", "itl"):
        return _got(level, slo)
    if failed == "cut-streams":
        return ngettext(
            "{cut} of {n} stream was cut", "{cut} of {n} streams were cut", level.requests
        ).format(cut=level.cut_streams, n=level.requests)
    return ngettext(
        "{errors} of {n} request failed", "{errors} of {n} requests failed", level.requests
    ).format(errors=level.errors, n=level.requests)


def _served(result: CapacityResult, base: Level, above: Level | None) -> str:
    """What was measured at ``base`` (the need, or the capacity) and at the level above it."""
    n, slo = base.concurrency, result.slo
    figures = _figures(base, slo)
    if above is not None and above.meets_slo:
        text = ngettext(
            "The model serves {n} chat at once within the SLO ({figures});"
            " at {more} it still did ({more_figures}).",
            "The model serves {n} chats at once within the SLO ({figures});"
            " at {more} it still did ({more_figures}).",
            n,
        )
        more_figures = _got(above, slo)
    elif above is not None:
        text = ngettext(
            "The model serves {n} chat at once within the SLO ({figures});"
            " at {more} it did not ({more_figures}).",
            "The model serves {n} chats at once within the SLO ({figures});"
            " at {more} it did not ({more_figures}).",
            n,
        )
        more_figures = _why(above, slo)
    elif result.capacity.limited_by == "need-met":
        # The search stopped once the class was served, one level above it: the number is
        # the largest measured, said as the one capacity every view says.
        text = ngettext(
            "The model serves {n} chat at once within the SLO ({figures}), the most the"
            " search measured: it stops once the class is served.",
            "The model serves {n} chats at once within the SLO ({figures}), the most the"
            " search measured: it stops once the class is served.",
            n,
        )
        more_figures = ""
    elif result.capacity.limited_by == "max-concurrency":
        text = ngettext(
            "The model serves at least {n} chat at once within the SLO ({figures}),"
            " the most tried.",
            "The model serves at least {n} chats at once within the SLO ({figures}),"
            " the most tried.",
            n,
        )
        more_figures = ""
    else:
        text = ngettext(
            "The model serves at least {n} chat at once within the SLO ({figures}).",
            "The model serves at least {n} chats at once within the SLO ({figures}).",
            n,
        )
        more_figures = ""
    more = above.concurrency if above is not None else 0
    return text.format(n=n, figures=figures, more=more, more_figures=more_figures)


#: A top level at this share of the SLO's limit or more has little room left.
CLOSE = 0.8


def _closeness(level: Level, slo: SLO) -> str | None:
    """A sentence when the top level within the SLO came close to its limit, else None."""
    n = level.concurrency
    ttft = (level.ttft_ms.get("p90") or 0.0) / slo.ttft_ms
    itl = (level.itl_ms.get("p90") or 0.0) / slo.itl_ms if slo.itl_ms else 0.0
    if max(ttft, itl) < CLOSE:
        return None
    if ttft >= itl:
        text = ngettext(
            "Little room is left: at {n} chat at once the first token p90 is already"
            " {share} % of the limit.",
            "Little room is left: at {n} chats at once the first token p90 is already"
            " {share} % of the limit.",
            n,
        )
        return text.format(n=n, share=round(100 * ttft))
    text = ngettext(
        "Little room is left: at {n} chat at once the time between tokens p90 is already"
        " {share} % of the limit.",
        "Little room is left: at {n} chats at once the time between tokens p90 is already"
        " {share} % of the limit.",
        n,
    )
    return text.format(n=n, share=round(100 * itl))


def _for_class(capacity: int, class_size: int, workload: Workload | None) -> str:
    """Enough for the class or not, naming what a class sends (the lesson)."""
    if workload is None:  # a result made elsewhere, or an old record: not known what was sent
        if capacity >= class_size:
            return _("That is enough for a class of {size}.").format(size=class_size)
        return _("A class of {size} needs more.").format(size=class_size)
    students = students_phrase(class_size, workload)
    if capacity >= class_size:
        return _("That is enough for a class of {size}: {students}.").format(
            size=class_size, students=students
        )
    return _("A class of {size} needs more: {students} are not served.").format(
        size=class_size, students=students
    )


def _cut_sentence(result: CapacityResult) -> str | None:
    """What the cut streams say: the interrupt of a new request, or replies ending alone.

    A reply cut while it was the only chat was not cut by another request: the
    sentence says what was seen, never llama.cpp's interrupt_requests.
    """
    cut = [lv for lv in result.levels if lv.cut_streams]
    if not cut and result.capacity.limited_by != "cut-streams":
        return None
    alone = next((lv for lv in cut if lv.concurrency == 1), None)
    if alone is not None or not cut:
        return _(
            "Replies ended early even with one chat at a time ({seen}): the server cut them"
            " without another request arriving; look at its log."
        ).format(seen=(alone.first_error if alone else "") or _("no whole reply"))
    return _(
        "The server cuts a running reply when a new request arrives (llama.cpp"
        " interrupt_requests), so it really serves only what is counted here;"
        " start llama-cpp-python with --interrupt_requests False, or for Ollama"
        " set OLLAMA_NUM_PARALLEL."
    )


def _unanswered(result: CapacityResult) -> bool:
    """Nothing measured because the model did not answer the first request in time."""
    return not result.levels and result.no_reply_s is not None


def _none_served(result: CapacityResult) -> str:
    first = min(result.levels, key=lambda lv: lv.concurrency, default=None)
    slo = slo_phrase(result.slo)
    if result.stopped == "unreachable":  # the checks' own sentence, nothing else to say
        return _("The model cannot be reached: {reason}").format(reason=result.unreachable)
    if first is None and result.no_reply_s is not None:
        return _(
            "Nothing was measured: the model did not answer a first request within {seconds} s."
        ).format(seconds=f"{result.no_reply_s:g}")
    if first is None:
        return _("Nothing was measured: the search stopped before its first level.")
    if first.concurrency > 1:
        return ngettext(
            "No level measured met the SLO: at {n} chat at once, {why}.",
            "No level measured met the SLO: at {n} chats at once, {why}.",
            first.concurrency,
        ).format(n=first.concurrency, why=_why(first, result.slo))
    if first.failed == "ttft" and first.waiting and first.waiting == first.requests - first.errors:
        return _("The model serves no chat: even alone, no reply started within {got}.").format(
            got=_duration(first.ttft_ms.get("p90") or 0.0)
        )
    if first.failed == "ttft":
        return _(
            "The model serves no chat with {slo}: even alone, first token p90 was {got}."
        ).format(slo=slo, got=_duration(first.ttft_ms.get("p90") or 0.0))
    if first.failed in ("itl", "pause"):
        return _("The model serves no chat with {slo}: even alone, {why}.").format(
            slo=slo, why=_pace_missed(first)
        )
    return ngettext(
        "The model serves no chat: {errors} of {n} request failed, even alone ({error}).",
        "The model serves no chat: {errors} of {n} requests failed, even alone ({error}).",
        first.requests,
    ).format(errors=first.errors, n=first.requests, error=first.first_error or "-")


def _anchor(result: CapacityResult) -> tuple[Level, Level | None]:
    """The level the verdict speaks of, the capacity (``capacity.concurrency``, the one
    number every view says the model serves), and the level measured above it."""
    levels = sorted(result.levels, key=lambda lv: lv.concurrency)
    n = result.capacity.concurrency
    base = next(lv for lv in levels if lv.concurrency == n)
    above = next((lv for lv in levels if lv.concurrency > n), None)
    return base, above


def verdict(result: CapacityResult, class_size: int | None = None) -> str:
    """The verdict: what was measured, in one sentence, then a sentence for each thing to know."""
    cap = result.capacity
    if cap.concurrency == 0:
        sentences = [_none_served(result)]
    else:
        base, above = _anchor(result)
        sentences = [_served(result, base, above)]
        top = next(lv for lv in result.levels if lv.concurrency == cap.concurrency)
        close = _closeness(top, result.slo)
        if close:
            sentences.append(close)
    if result.stopped == "unreachable":
        return join_sentences(sentences)
    if class_size is not None and (cap.concurrency or result.levels):
        sentences.append(_for_class(cap.concurrency, class_size, result.workload))
    elif result.workload is not None and result.levels:
        sentences.append(workload_sentence(result.workload))
    cut = _cut_sentence(result)
    if cut:
        sentences.append(cut)
    knee = result.saturation
    if knee is not None and cap.concurrency > 0:
        sentences.append(
            ngettext(
                "Throughput stops rising past {n} chat at once: more chats only wait longer.",
                "Throughput stops rising past {n} chats at once: more chats only wait longer.",
                knee,
            ).format(n=knee)
        )
    disbelieved = usage_sentence(sum(lv.usage_disbelieved for lv in result.levels))
    if disbelieved:
        sentences.append(disbelieved)
    elif result.tokens_from_chunks:
        sentences.append(_("The server sent no usage, so token figures are counted from chunks."))
    resent = resent_sentence(sum(lv.resent for lv in result.levels))
    sentences += [note for note in (resent, busy_sentence(result.skew)) if note]
    if result.stopped == "refused":
        sentences.append(
            _(
                "Every request got HTTP {status}, so the search stopped there: `lmreg-nb "
                "check` with the same address says what to fix (the key, or the address's path)."
            ).format(status=result.refused_status)
        )
    if result.stopped == "time" and not _unanswered(result):  # the first sentence says why
        sentences.append(_("The search reached its time limit before it finished."))
    elif result.stopped == "interrupted":
        sentences.append(_("The search was interrupted: this is what was measured so far."))
    return join_sentences(sentences)


def capacity_line(served: int, class_size: int | None) -> str:
    """The one capacity number in one line: ``capacity.concurrency`` within the SLO, and
    enough or not for the class (the step's detail, the CLI, the batch index)."""
    if not served:
        text = _("The model serves no chat at once within the SLO.")
    else:
        text = ngettext(
            "The model serves {n} chat at once within the SLO.",
            "The model serves {n} chats at once within the SLO.",
            served,
        ).format(n=served)
    if not class_size:
        return text
    enough = (
        _("Enough for a class of {size}.")
        if served >= class_size
        else _("Not enough for a class of {size}.")
    ).format(size=class_size)
    return join_sentences([text, enough])


def progress_text(progress: Progress) -> str:
    """One line: the warm-up, a level and its requests so far, or a level done and its figures."""
    c, n, level = progress.concurrency, progress.requests, progress.level
    if c == 0:
        return _("Warming up: one request before the first level…")
    if level is None:
        return ngettext(
            "concurrency {c}: {n} request so far…", "concurrency {c}: {n} requests so far…", n
        ).format(c=c, n=n)
    slo = progress.slo or SLO()
    if level.meets_slo:
        text = ngettext(
            "concurrency {c}: {n} request, meets the SLO ({figures})",
            "concurrency {c}: {n} requests, meets the SLO ({figures})",
            level.requests,
        )
        figures = _got(level, slo)
    else:
        text = ngettext(
            "concurrency {c}: {n} request, misses the SLO ({figures})",
            "concurrency {c}: {n} requests, misses the SLO ({figures})",
            level.requests,
        )
        figures = _why(level, slo)
    return text.format(c=c, n=level.requests, figures=figures)


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

    if result.stopped == "unreachable" or _unanswered(result):
        # One line, as the checks say it: no table of levels that never ran.
        return _("verdict: {text}").format(text=verdict(result, class_size))
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
    if result.workload is not None:
        lines.append(_("workload: {text}").format(text=workload_sentence(result.workload)))
    if result.prefix_cache is not None:
        lines.append(_("prefix cache: {text}").format(text=prefix_sentence(result.prefix_cache)))
    return "\n".join(lines)
