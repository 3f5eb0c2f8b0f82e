"""The class workload: what the load test and the capacity search send (docs/reference.md).

``lesson`` (the default): every request begins with the app's system message
(:data:`~lmreg_nb.probe.load.lesson_text.SYSTEM_MESSAGE`), then a Chinese lesson
shared by the whole class and the student's own question; each simulated
student asks :data:`TURNS` questions in one conversation (turns 2 and 3
carry the earlier questions and the answers actually received), then starts
a new one. ``short``: one short question per request, today's quick look.

Lengths are the server's tokens. Two short prompts (``max_tokens`` 1)
calibrate its count from ``usage.prompt_tokens`` with the context-window
check's scale (:class:`~lmreg_nb.probe.checks.context_window.ContextFinding`:
units to tokens, fitted on two points; here a unit is a character of the
user's text); a server without usage gets one token per character, an
estimate. A prompt, history included, plus its reply never exceeds
``context_need``: the oldest turns are dropped from the history first.

Each chat of a level is a :class:`StudentConnection`: the lean client's
connection (:mod:`lmreg_nb.probe.wire.stream_client`) whose next request is the
conversation's next turn.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
from dataclasses import dataclass, field

from ...errors import ValidationError
from ...i18n import _
from ...summary.workload import LESSON, SHORT, Workload, WorkloadName
from ..checks.context_window import DEFAULT_CONTEXT_NEED, ContextFinding, ContextNeed
from ..checks.token_counts import CJK_BOUNDS, plausible_prompt_tokens, token_bounds
from ..target import Target
from ..wire.exchange import DEFAULT_PROMPT, Exchange, chat_body
from ..wire.stream_client import ChatConnection
from .lesson_text import SYSTEM_MESSAGE, lesson_text, question

__all__ = [
    "DEFAULT_LESSON_TOKENS",
    "DEFAULT_MAX_TOKENS",
    "TURNS",
    "WORKLOADS",
    "ClassWorkload",
    "StudentConnection",
    "WorkloadSpec",
    "check_workload",
    "prepare_workload",
]

WORKLOADS: tuple[WorkloadName, ...] = (LESSON, SHORT)
DEFAULT_LESSON_TOKENS = 1500
DEFAULT_MAX_TOKENS = 300
MAX_LESSON_TOKENS = 100_000
#: The longest reply a workload asks for (max_tokens).
MAX_REPLY_TOKENS = 32_768
#: Questions per conversation before a student starts a new one.
TURNS = 3
#: Tokens kept for the system message, a question and the chat template (before calibration).
_ROOM = 250
#: The shortest lesson worth the name: a longer one is shortened to fit ``context_need``.
_LEAST_LESSON = 100
#: Characters of the user's text of the two calibration prompts.
_CALIBRATION = (200, 800)
#: A chat template's tokens per message beyond the first two (a margin for the history).
_PER_MESSAGE = 8


@dataclass(frozen=True)
class WorkloadSpec:
    """What to send: the workload's name, the lesson's and replies' tokens, the context bound.

    Checked once, when it is made (:func:`check_workload`; a bad value is a
    ValidationError naming its field): the load test, the capacity search and
    :func:`prepare_workload` take a ``WorkloadSpec`` as sendable, by its type.
    """

    name: WorkloadName = LESSON
    lesson_tokens: int = DEFAULT_LESSON_TOKENS
    max_tokens: int = DEFAULT_MAX_TOKENS
    context_need: int = DEFAULT_CONTEXT_NEED
    seed: int | None = None  # None: a new lesson for this run

    def __post_init__(self) -> None:
        # The context need has its own check (a ContextNeed is not checked again).
        object.__setattr__(self, "context_need", ContextNeed(self.context_need))
        check_workload(self)


def check_workload(spec: WorkloadSpec) -> WorkloadSpec:
    """``spec`` if it can be sent; else a ValidationError naming what to change (the rules
    a :class:`WorkloadSpec` is made under; its ``context_need`` is already checked).

    A lesson longer than ``context_need`` leaves room for (with the instructions,
    a question and a reply) is shortened to fit when it is sized, not refused:
    the workload then says how long it was.
    """
    if spec.name not in WORKLOADS:
        raise ValidationError("workload", _("must be lesson or short"))
    if not 1 <= spec.max_tokens <= MAX_REPLY_TOKENS:
        raise ValidationError("max_tokens", _("must be between 1 and 32768"))
    if spec.name == LESSON:
        if not 1 <= spec.lesson_tokens <= MAX_LESSON_TOKENS:
            raise ValidationError(
                "lesson_tokens", _("must be between 1 and {n}").format(n=MAX_LESSON_TOKENS)
            )
        if _ROOM + _LEAST_LESSON + spec.max_tokens > spec.context_need:
            raise ValidationError(
                "context_need",
                _(
                    "{need} tokens leave no room for a lesson, the instructions and a"
                    " {reply}-token reply: raise context_need or lower max_tokens"
                ).format(reply=spec.max_tokens, need=spec.context_need),
            )
    return spec


@dataclass
class ClassWorkload:
    """One run's workload: its lesson, the server's token scale, and what was sent."""

    spec: WorkloadSpec
    model: str
    lesson: str = ""
    # Its unit is a character of Chinese text: a byte-level tokenizer counts 3 for each.
    scale: ContextFinding = field(default_factory=lambda: ContextFinding(0, rate_bounds=CJK_BOUNDS))
    #: ``usage.prompt_tokens`` the server reported, and the toolkit's own counts.
    seen: list[int] = field(default_factory=list)
    counted: list[int] = field(default_factory=list)
    turns_sent: int = 0  # requests that carried history (turn 2 or later)
    students: int = 0
    #: The calibration had no answer at all within its bound (the server is silent).
    silent: bool = False
    #: Why every calibration request was refused before reaching a server (the checks'
    #: one sentence: nothing listens there, a name that does not resolve); "" otherwise.
    refused: str = ""

    @property
    def lesson_mode(self) -> bool:
        return self.spec.name == LESSON

    def next_student(self) -> int:
        """A new student's number (each asks their own questions)."""
        self.students += 1
        return self.students - 1

    def messages(self, history: list[tuple[str, str]], asked: str) -> list[dict[str, str]]:
        """The messages of one request: instructions, lesson, the conversation, the question."""
        if not self.lesson_mode:
            return [{"role": "user", "content": asked}]
        turns = list(history)
        while True:
            out = [{"role": "system", "content": SYSTEM_MESSAGE}]
            pending = f"课文：\n{self.lesson}\n\n"  # the lesson opens the first user message
            for before, answer in turns:
                out += [
                    {"role": "user", "content": pending + before},
                    {"role": "assistant", "content": answer},
                ]
                pending = ""
            out.append({"role": "user", "content": pending + asked})
            if not turns or self.tokens(out) + self.spec.max_tokens <= self.spec.context_need:
                return out
            turns = turns[1:]  # the oldest turn goes first; the lesson stays

    def tokens(self, messages: list[dict[str, str]]) -> int:
        """The prompt's tokens as the server counts them (the calibrated scale)."""
        chars = sum(len(m["content"]) for m in messages)
        return self.scale.tokens(chars) + _PER_MESSAGE * max(0, len(messages) - 2)

    def payload(self, history: list[tuple[str, str]], asked: str) -> bytes:
        """The request body of one turn."""
        messages = self.messages(history, asked)
        body = chat_body(self.model, "", stream=True, max_tokens=self.spec.max_tokens)
        body["messages"] = messages
        self.counted.append(self.tokens(messages))
        if len(messages) > 2:
            self.turns_sent += 1
        return json.dumps(body, ensure_ascii=False).encode()

    def short_payload(self, max_tokens: int | None = None) -> bytes:
        """One short question, no lesson (the warm-up of ``short``, a look whether the server
        answers again): ``max_tokens`` or the workload's."""
        tokens = max_tokens if max_tokens is not None else self.spec.max_tokens
        body = chat_body(self.model, DEFAULT_PROMPT, stream=True, max_tokens=tokens)
        return json.dumps(body).encode()

    def connect(self, target: Target, _payload: bytes = b"") -> StudentConnection:
        """A new chat: a student of this run (``connect`` of the level and the load test)."""
        return StudentConnection(self, target)

    def saw(self, ex: Exchange) -> None:
        usage = ex.usage or {}
        tokens = usage.get("prompt_tokens")
        if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0:
            self.seen.append(tokens)

    def info(self) -> Workload:
        """What was sent, for the JSON and the record."""
        tokens = self.seen or self.counted
        p50 = round(statistics.median(tokens)) if tokens else None
        if not self.lesson_mode:
            return Workload(SHORT, p50, 0, 1, self.spec.max_tokens)
        # The instructions and the lesson, as the server counts them (no template overhead).
        shared = self.scale.tokens(len(SYSTEM_MESSAGE) + len(self.lesson)) - self.scale.tokens(0)
        return Workload(
            LESSON,
            p50,
            max(0, shared),
            TURNS,
            self.spec.max_tokens,
        )


class StudentConnection(ChatConnection):
    """One student's chat: each :meth:`send` is the conversation's next turn."""

    def __init__(self, workload: ClassWorkload, target: Target) -> None:
        self.workload = workload
        self.student = workload.next_student()
        self.history: list[tuple[str, str]] = []
        self.asked = question(self.student, 0) if workload.lesson_mode else DEFAULT_PROMPT
        super().__init__(target, workload.payload(self.history, self.asked))

    async def send(self) -> Exchange:
        # A kept-alive connection the server closed is the lean client's to handle: it sends
        # the turn once more on a fresh one (llama-server closes after every stream).
        ex = await super().send()
        self.workload.saw(ex)
        self._next(ex.text if ex.ok and ex.text else None)
        return ex

    def _next(self, answer: str | None) -> None:
        """The next turn: a follow-up carrying the history, or a new conversation."""
        if not self.workload.lesson_mode:
            return  # the short question, again
        if answer is None or len(self.history) + 1 >= TURNS:
            self.student = self.workload.next_student()
            self.history, self.asked = [], question(self.student, 0)
        else:
            self.history.append((self.asked, answer))
            self.asked = question(self.student, len(self.history))
        self.use_payload(self.workload.payload(self.history, self.asked))


async def prepare_workload(
    target: Target, spec: WorkloadSpec, bound_s: float | None = None
) -> ClassWorkload:
    """The run's workload: a new lesson, sized in the server's tokens (two short requests).

    The calibration waits at most ``bound_s`` (and the request timeout); with no
    answer by then, ``silent`` is set and the lesson is sized by the estimate.
    """
    work = ClassWorkload(spec, target.model)  # checked when it was made
    if not work.lesson_mode:
        return work
    seed = spec.seed if spec.seed is not None else random.SystemRandom().randrange(2**31)
    bound = min(target.timeout, 60.0, bound_s if bound_s is not None else 60.0)
    # Another text than the lesson's: the lesson's prefix stays cold for the prefix probe.
    work.silent = not await _calibrate(work, target, seed + 1, bound)
    scale = work.scale
    chars = scale.words(scale.tokens(0) + spec.lesson_tokens)
    # Within context_need with the instructions, the first question and the reply (the
    # scale may say otherwise than the estimate checked up front).
    first = len(SYSTEM_MESSAGE) + len(question(0, 0)) + 8
    most = scale.words(spec.context_need - spec.max_tokens) - first
    work.lesson = lesson_text(max(1, min(chars, most)), seed)
    return work


async def _calibrate(work: ClassWorkload, target: Target, seed: int, bound_s: float) -> bool:
    """Two prompts of known length, answered with one token: the server's count of them.

    False when neither was answered at all within ``bound_s``.
    """
    text = lesson_text(max(_CALIBRATION), seed)

    async def ask(chars: int) -> tuple[int, int | None]:
        user = text[:chars]
        # Not streamed: every server counts usage in a whole reply, not all in a stream
        # (llama-cpp-python's has none, and the lesson went out sized by the estimate).
        body = chat_body(target.model, user, stream=False, max_tokens=1, system=SYSTEM_MESSAGE)
        chars += len(SYSTEM_MESSAGE)  # the scale's unit: a character of any message
        conn = ChatConnection(target, json.dumps(body, ensure_ascii=False).encode())
        try:
            ex = await conn.send()
        finally:
            conn.close()
        if ex.failure == "timeout":
            raise TimeoutError  # no answer within the request timeout: the server is silent
        refused = ex.failure in ("connect", "transport") and ex.status is None
        refusals.append(ex.failure_detail if refused else "")
        answered = ex.status is not None and 200 <= ex.status < 300  # one token, maybe thought
        tokens = (ex.usage or {}).get("prompt_tokens") if answered else None
        good = isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0
        return chars, tokens if good else None

    answered = False
    refusals: list[str] = []
    try:
        async with asyncio.timeout(bound_s):  # one after the other: one slot is enough
            for size in _CALIBRATION:
                chars, tokens = await ask(size)
                answered = True
                if tokens is not None:
                    work.scale.counts[chars] = tokens
                    # A count no tokenizer gives for this text is not believed at all.
                    said = SYSTEM_MESSAGE + text[:size]
                    work.scale.unbelievable |= not plausible_prompt_tokens(tokens, said)
    except TimeoutError:
        pass  # what came back counts; nothing at all: the estimate, one token per character
    if refusals and len(set(refusals)) == 1:  # each refused, for the same reason
        work.refused = refusals[0]
    if work.scale.counts and not work.scale.estimate:
        # A believable slope with an absurd intercept (characters + 100,000) is no count
        # either: the chat template's share is at most about the system prompt's size.
        most = token_bounds(SYSTEM_MESSAGE)[1]
        work.scale.unbelievable |= not -most <= work.scale.tokens(0) <= most
    return answered
