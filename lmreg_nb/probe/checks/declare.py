"""A check as a declaration: its name, severity, what it sends, how it is judged, its words.

Each family module (:mod:`.conformance`, :mod:`.streams`, :mod:`.golive`,
:mod:`.function`, :mod:`.context_window`) declares its checks with :class:`Declared`;
:mod:`.catalog` lists them in the order of the rows and :mod:`.suite` runs what is
listed. A new check is one declaration (plus its test and the catalogs' words):

```python
ECHO = Declared(
    "echo-honoured", "warning",
    sends=(Request("echo", lambda ctx, t: ctx.chat(t, chat_body(t.model, "say ok"))),),
    judge=lambda seen: ECHO.passed() if seen.exchange("echo").ok else ECHO.failed("no-echo"),
    says={"passed": Words(N_("answered")), "no-echo": Words(N_("no answer: {why}"))},
)
```

A judge returns a :class:`~lmreg_nb.summary.Check` without words: its ``cause``
(a key of ``says``), its owner and its ``facts`` (the numbers, quotes and the fix's
data). :mod:`lmreg_nb.probe.text.checks` makes the ``detail`` from them, once.
``parts`` are pieces of a detail that vary on their own: a fact holding a part's
variant (``"how": "estimate"``) is replaced by that variant's words.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ...i18n import N_
from ...summary import Check, Fact, Owner, Severity

if TYPE_CHECKING:
    import httpx

    from ..target import Target
    from ..wire.exchange import Exchange

__all__ = [
    "COMMON",
    "DECLARED",
    "STAGES",
    "Context",
    "Declared",
    "Request",
    "Seen",
    "Stage",
    "Words",
    "redirected",
]

T = TypeVar("T")

#: How far the plain chat request got, which decides what can be judged:
#: ``unreached`` no HTTP answer; ``wrong-path`` HTTP 404/405 from a path that is not the
#: chat path while the chat path beside it answers; ``refused`` HTTP 401/403; ``failed``
#: another non-2xx; ``answered`` a 2xx.
Stage = Literal["unreached", "wrong-path", "refused", "failed", "answered"]
STAGES: tuple[Stage, ...] = ("unreached", "wrong-path", "refused", "failed", "answered")


@dataclass(frozen=True)
class Words:
    """A catalog message with named placeholders (and its plural, chosen by ``count``).

    ``raw``: not a sentence (``HTTP {status}``), shown as it is in every language.
    """

    text: str
    plural: str | None = None
    #: The fact whose number picks the plural form.
    count: str | None = None
    raw: bool = False


#: Every declaration made, by check name (the last one made of a name counts).
DECLARED: dict[str, Declared] = {}


def redirected(status: int | None) -> bool:
    """A 3xx: the address answers with another one (a trailing slash), judging nothing."""
    return status is not None and 300 <= status < 400


#: Causes any check may have: not judged, for the stage that left nothing to judge.
COMMON: Mapping[str, Words] = {
    "not-judged:wrong-path": Words(
        N_(
            "not judged: {registered} serves nothing (HTTP {status}), so no answer came to "
            "judge; see url-path"
        )
    ),
    "not-judged:redirected": Words(
        N_(
            "not judged: {registered} redirects (HTTP {status}) before the request is read, "
            "so no answer came to judge; see chat-answers"
        )
    ),
    "not-judged:refused": Words(
        N_(
            "not judged: the server refused the key (HTTP {status}) before it read the rest "
            "of the request; see key-accepted"
        )
    ),
}


@dataclass
class Context:
    """What every request of the checks is sent with."""

    client: httpx.AsyncClient
    max_tokens: int = 64
    chat_prompt: str | None = None
    context_need: int = 8000
    #: A made-up key (wrong-key-rejected), the same for the whole run.
    wrong_key: str = ""


#: Sends one request (or a few that belong together) and returns what came back.
Send = Callable[[Context, "Target"], Awaitable[Any]]


@dataclass(frozen=True)
class Request:
    """A request of the checks under the name its answer is kept by (shared by name: two
    checks sending the same request name it alike, and it is sent once)."""

    name: str
    send: Send


class Seen:
    """What the requests brought back, by request name."""

    def __init__(self, found: Mapping[str, object] | None = None) -> None:
        self._found: dict[str, object] = dict(found or {})
        #: How far the plain chat got (set by the suite before anything is judged).
        self.stage: Stage = "answered"

    def __contains__(self, name: str) -> bool:
        return name in self._found

    def get(self, name: str) -> object:
        """The answer kept under ``name`` (None: not sent)."""
        return self._found.get(name)

    def of(self, name: str, kind: type[T]) -> T | None:
        """The answer kept under ``name`` when it is a ``kind`` (else None)."""
        found = self._found.get(name)
        return found if isinstance(found, kind) else None

    def exchanges(self, name: str) -> list[Exchange]:
        """The exchanges kept under ``name`` (a request that is several, as two streams at
        once; an empty list when none was sent)."""
        from ..wire.exchange import Exchange

        found = self._found.get(name)
        items = found if isinstance(found, list) else [found]
        return [ex for ex in items if isinstance(ex, Exchange)]

    def set(self, name: str, value: object) -> None:
        """Keep ``value`` under ``name`` (an answer asked for again)."""
        self._found[name] = value

    def names(self) -> list[str]:
        """The names of what was sent, in the order it was sent."""
        return list(self._found)

    def exchange(self, name: str) -> Exchange:
        """The exchange kept under ``name`` (a request every judge of it can rely on)."""
        from ..wire.exchange import Exchange

        found = self._found.get(name)
        if not isinstance(found, Exchange):
            raise KeyError(name)
        return found

    def maybe(self, name: str) -> Exchange | None:
        """The exchange kept under ``name``, or None (not sent, or something else)."""
        from ..wire.exchange import Exchange

        found = self._found.get(name)
        return found if isinstance(found, Exchange) else None


#: How a check is judged: what the requests brought back -> its outcome (None: no row).
Judge = Callable[[Seen, "Target"], "Check | None"]
#: A second look before judging (a request sent again alone, on suspicion).
Again = Callable[[Context, "Target", Seen], Awaitable[None]]


@dataclass(frozen=True)
class Declared:
    """One check: name, severity, what it sends, how it is judged, its causes' words."""

    name: str
    severity: Severity
    #: cause -> its words; ``passed`` for the usual passing row.
    says: Mapping[str, Words]
    #: The requests its judge reads (the suite sends each named request once).
    sends: tuple[Request, ...] = ()
    judge: Judge | None = None
    #: Sent after the others, before judging, when what came back calls for a second look.
    again: Again | None = None
    #: The stages where it is judged (see :data:`Stage`).
    when: frozenset[Stage] = frozenset({"answered"})
    #: The stages where it is shown as not judged (``passed`` None), with the cause.
    unjudged: frozenset[Stage] = frozenset()
    #: Who acts when it fails (a cause of another owner names it in :attr:`owners`).
    owner: Owner = "school"
    owners: Mapping[str, Owner] = field(default_factory=dict)
    #: Pieces of its details that vary on their own: fact name -> variant -> words.
    parts: Mapping[str, Mapping[str, Words]] = field(default_factory=dict)
    #: Sentences said after the detail, whatever the cause, when their fact (a count) is
    #: above 0: fact name -> words (``count`` names that fact).
    notes: Mapping[str, Words] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Declared once, found by name (the words of an outcome read back from a record).
        DECLARED[self.name] = self

    def outcome(
        self, cause: str, passed: bool | None, severity: Severity | None = None, /, **facts: Fact
    ) -> Check:
        """The check's outcome for ``cause`` (a key of :attr:`says`), without words."""
        if cause not in self.says and cause not in COMMON:
            raise KeyError(f"{self.name}: no words for the cause {cause!r}")
        owner = None if passed else self.owners.get(cause, self.owner)
        return Check(self.name, passed, severity or self.severity, "", cause, owner, facts)

    def passed(self, cause: str = "passed", /, **facts: Fact) -> Check:
        """A passing outcome."""
        return self.outcome(cause, True, None, **facts)

    def passed_as(self, severity: Severity, cause: str, /, **facts: Fact) -> Check:
        """A passing outcome of a cause that weighs otherwise than the check."""
        return self.outcome(cause, True, severity, **facts)

    def failed(self, cause: str, /, **facts: Fact) -> Check:
        """A failing outcome."""
        return self.outcome(cause, False, None, **facts)

    def failed_as(self, severity: Severity, cause: str, /, **facts: Fact) -> Check:
        """A failing outcome of a cause that weighs otherwise than the check."""
        return self.outcome(cause, False, severity, **facts)

    def not_judged(self, cause: str, /, **facts: Fact) -> Check:
        """Neither passed nor failed: the answer it would be judged on never came."""
        return self.outcome(cause, None, None, **facts)
