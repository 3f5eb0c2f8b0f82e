"""A check's outcome in words: its ``detail``, made once from its cause and facts.

The words are the declaration's (:mod:`lmreg_nb.probe.checks.declare`): the cause's
message, in the current language, with the facts in its placeholders. A fact that
names a variant of one of the declaration's ``parts`` becomes that variant's words,
whose placeholders read the facts under the part's name first (``{status}`` in the
part ``seen`` reads ``seen_status``), then the check's own.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ...i18n import _, clauses, ngettext, sentences
from ...summary import Check, Fact
from ..checks.catalog import declared
from ..checks.declare import COMMON, Declared, Seen, Stage, Words
from ..target import Target

__all__ = ["detail_of", "judged", "note", "worded"]

_FORMATTER = string.Formatter()


def worded(check: Check) -> Check:
    """``check`` with its ``detail`` made from its cause and facts (as it was when it has
    no declared cause, or already has words)."""
    if check.detail or check.cause is None:
        return check
    return replace(check, detail=detail_of(check))


def judged(
    declaration: Declared,
    target: Target,
    found: Mapping[str, Any] | None = None,
    *,
    stage: Stage = "answered",
) -> Check | None:
    """One declared check judged on what its requests brought back (``found``, by request
    name), in words: what a check's test calls. None when it shows no row."""
    seen = Seen(found)
    seen.stage = stage
    if declaration.judge is None:
        return None
    row = declaration.judge(seen, target)
    return worded(row) if row is not None else None


def detail_of(check: Check) -> str:
    """The words of ``check``'s cause with its facts ("" when its cause has no words)."""
    found = declared(check.name)
    if check.cause is None:
        return check.detail
    words = found.says.get(check.cause) if found is not None else None
    if words is None:
        words = COMMON.get(check.cause)
    if words is None:
        return check.detail
    detail = _render(words, found, check.facts, "")
    notes = [
        _render(note, found, check.facts, "")
        for fact, note in (found.notes.items() if found is not None else ())
        if _positive(check.facts.get(fact))
    ]
    if not notes:
        return detail
    return sentences([_("{text}.").format(text=detail.rstrip(".")), *notes])


def note(check: str, fact: str, value: int) -> str | None:
    """The note ``check`` declares for ``fact`` at ``value`` (None when it is 0, or none is
    declared): the load test's notes are said of a capacity search too, in the same words."""
    found = declared(check)
    words = found.notes.get(fact) if found is not None else None
    if words is None or not _positive(value):
        return None
    return _render(words, found, {fact: value}, "")


def _positive(value: Fact) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _message(words: Words, facts: Mapping[str, Fact], scope: str) -> str:
    if not words.text:
        return ""
    if words.raw:
        return words.text
    if words.plural is not None and words.count is not None:
        count = _lookup(facts, scope, words.count)
        n = count if isinstance(count, int) and not isinstance(count, bool) else 0
        return ngettext(words.text, words.plural, n)
    return _(words.text)


def _found(facts: Mapping[str, Fact], scope: str, key: str) -> tuple[str, Fact]:
    """(the fact's full name, its value): the part's own first, then the check's."""
    if scope and f"{scope}_{key}" in facts:
        return f"{scope}_{key}", facts[f"{scope}_{key}"]
    return key, facts.get(key)


def _lookup(facts: Mapping[str, Fact], scope: str, key: str) -> Fact:
    return _found(facts, scope, key)[1]


def _render(
    words: Words, declaration: Declared | None, facts: Mapping[str, Fact], scope: str
) -> str:
    text = _message(words, facts, scope)
    parts = declaration.parts if declaration is not None else {}
    values: dict[str, str] = {}
    for _literal, key, _spec, _conv in _FORMATTER.parse(text):
        if not key or key in values:
            continue
        sub, value = _found(facts, scope, key)
        variants = parts.get(key)
        if variants is not None and isinstance(value, str) and value in variants:
            values[key] = _render(variants[value], declaration, facts, sub)
        elif variants is not None and isinstance(value, str) and _listed(value, variants):
            # A list of variants ("role-only,crlf"): each in words, joined as clauses.
            pieces = (_render(variants[v], declaration, facts, sub) for v in value.split(","))
            values[key] = clauses(pieces)
        else:
            values[key] = _shown(value)
    return text.format_map(values)


def _listed(value: str, variants: Mapping[str, Words]) -> bool:
    return "," in value and all(v in variants for v in value.split(","))


def _shown(value: Fact) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return _("yes") if value else _("no")
    return str(value)
