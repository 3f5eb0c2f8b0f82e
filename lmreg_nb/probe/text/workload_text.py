"""What a load test or a capacity search sent, and whether the lesson was reused, in words.

One place words the :class:`~lmreg_nb.summary.Workload` and the
:class:`~lmreg_nb.summary.PrefixCache`: the CLI, the record (HTML and text), the
principal's page and the capacity verdict all take their sentences from here, so the
lesson's tokens read the same everywhere (the shared lesson, and the whole prompt
each student sent when the server counted it).
"""

from __future__ import annotations

from ...i18n import _, ngettext
from ...summary import PrefixCache, Workload
from ...summary.workload import SHORT
from ..checks.measured import judge_prefix_cache
from .checks import detail_of

__all__ = [
    "lesson_tokens",
    "prefix_sentence",
    "students_phrase",
    "workload_plain",
    "workload_sentence",
]


def lesson_tokens(workload: Workload) -> str:
    """The shared lesson's length as the server counts it (its instructions included)."""
    return f"{workload.shared_prefix_tokens:,}"


def workload_sentence(workload: Workload) -> str:
    """What was sent, in one plain sentence (the record, the CLI)."""
    if workload.name == SHORT:
        return _(
            "Measured with one short question per request: a quick look at the interface,"
            " not a class in a lesson."
        )
    if workload.prompt_tokens is not None:
        return _(
            "Measured as in a lesson: the app's instructions and a {lesson}-token lesson shared"
            " by the class, then each student's own questions ({prompt} prompt tokens per"
            " request, p50), {turns} turns per conversation, replies of up to {max_tokens}"
            " tokens."
        ).format(
            lesson=lesson_tokens(workload),
            prompt=f"{workload.prompt_tokens:,}",
            turns=workload.turns,
            max_tokens=workload.max_tokens if workload.max_tokens is not None else "-",
        )
    return _(
        "Measured as in a lesson: the app's instructions and a {lesson}-token lesson shared"
        " by the class, then each student's own questions, {turns} turns per conversation,"
        " replies of up to {max_tokens} tokens."
    ).format(
        lesson=lesson_tokens(workload),
        turns=workload.turns,
        max_tokens=workload.max_tokens if workload.max_tokens is not None else "-",
    )


def workload_plain(workload: Workload) -> str:
    """For a principal: what the students were doing while measured, without jargon."""
    if workload.name == SHORT:
        return _("Each sent only one short question: a lesson's longer questions may be slower.")
    return _(
        "They were measured as a class in a lesson: every student asked {turns} questions"
        " in a row about the same long lesson text."
    ).format(turns=workload.turns)


def students_phrase(n: int, workload: Workload) -> str:
    """``"40 students asking at once about a 1,500-token lesson"`` (or a short question)."""
    if workload.name == SHORT:
        return ngettext(
            "{n} student asking one short question at once",
            "{n} students asking one short question at once",
            n,
        ).format(n=n)
    return ngettext(
        "{n} student asking at once about a {lesson}-token lesson",
        "{n} students asking at once about a {lesson}-token lesson",
        n,
    ).format(n=n, lesson=lesson_tokens(workload))


def prefix_sentence(found: PrefixCache) -> str:
    """The prefix-cache finding in one sentence: the same words as its check row."""
    return detail_of(judge_prefix_cache(found))
