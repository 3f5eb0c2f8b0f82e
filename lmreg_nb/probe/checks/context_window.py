"""The context-window check: is a prompt as long as the course apps' longest lesson answered whole?

No tokenizer is needed. The prompt is filler made of common English words,
each one token in the vocabularies schools' models use (Llama, Qwen, GLM,
Gemma, Mistral, DeepSeek: no vocabulary merges words across a space). Two
short prompts sent at once calibrate the server's own count from its
``usage.prompt_tokens`` (tokens per word, and the chat template's overhead),
so the long prompt is sized to ``need`` tokens as the server counts them.
A server that reports no usage gets one token per word, and the detail says
the figure is an estimate.

Then one prompt of ``need`` tokens, ``max_tokens`` 1:

- answered, and ``usage.prompt_tokens`` near what was sent: passed;
- answered, but counted far below it: the server cut the prompt silently
  (Ollama truncates to ``num_ctx``): a warning;
- refused (an HTTP error, or the connection closed): an error, after a few
  requests that halve the gap between the longest prompt accepted and the
  shortest refused, so the detail says how long a prompt the server takes;
- no answer in time: an error with the plain reason, no search.

llama.cpp's own server gives each request one of its parallel slots, a share of
``-c`` (:mod:`lmreg_nb.probe.checks.llamacpp`): when the replies show it is that
server, ``GET /props`` tells the slots, the detail names them and the advice
is about the split (raise ``-c`` to slots x need, fewer slots, ``--kv-unified``).

The whole search stays within ``budget`` seconds.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from dataclasses import dataclass, field

import httpx

from ...errors import ValidationError
from ...i18n import N_, _, clauses, ngettext
from ..target import Target
from ..wire.exchange import Exchange, chat_body, send
from .conformance import CheckResult
from .function import has_reply, server_said
from .llamacpp import Slots, is_llamacpp, read_slots, refused_slot
from .token_counts import plausible_prompt_tokens

__all__ = [
    "DEFAULT_CONTEXT_NEED",
    "MAX_CONTEXT_NEED",
    "ContextFinding",
    "check_context_need",
    "context_row",
    "filler_prompt",
    "probe_context",
]

#: Tokens of the longest prompt the course apps send (the onboarding's ``context_need``).
DEFAULT_CONTEXT_NEED = 8000
#: The most a check asks for: 128 Ki tokens, the longest window schools' models commonly have.
MAX_CONTEXT_NEED = 131072
#: Requests of the search after a refusal.
MAX_STEPS = 4
#: Counted below this share of what was sent: the prompt was cut.
CUT_BELOW = 0.8
#: Rounds that lengthen a long prompt the server counted under the need.
TOP_UPS = 3
#: Tokens per filler word a real tokenizer counts (each is one token in the usual
#: vocabularies; a character count gives about 4.5, a constant count about 0):
#: outside these bounds the server's usage.prompt_tokens is not believed.
RATE_BOUNDS = (0.5, 2.0)
#: The most bytes a prompt of the check may have, however the server counts (a server
#: counting 1 token for everything would make the check build a prompt of 78 MB).
MAX_PROMPT_BYTES = 4 * MAX_CONTEXT_NEED * 4

_INSTRUCTION = "Reply with one word.\n"
_FILLER = (
    "the of and to in is was for on that with as by at from this have not are but one all "
    "were when we there can more if no out other so what time up about than into only new "
    "year some take come know see use get like then first work now day also after way many "
    "good people school class book read learn"
)
_WORDS = tuple(_FILLER.split())
#: Words of the two calibration prompts: they differ by whole cycles of the filler, so the
#: tokens per word are its average, and both fit any window a chat model has.
CALIBRATION = (8, 8 + 2 * len(_WORDS))


def check_context_need(value: object) -> int:
    """``value`` as a number of tokens, 1 to :data:`MAX_CONTEXT_NEED`; else a ValidationError."""
    try:
        need = int(str(value).strip())
    except ValueError:
        need = 0
    if not 1 <= need <= MAX_CONTEXT_NEED:
        raise ValidationError(
            "context_need",
            _(
                "must be a whole number of tokens from 1 to {most}, e.g. 8000 (the longest "
                "lesson the course apps send), got {value}"
            ).format(most=MAX_CONTEXT_NEED, value=repr(str(value))),
        )
    return need


#: The most filler words a prompt has: MAX_PROMPT_BYTES at the filler's longest word.
_MAX_WORDS = MAX_PROMPT_BYTES // (1 + max(len(w) for w in _WORDS))


def filler_prompt(words: int) -> str:
    """An instruction and ``words`` filler words (one token each in the usual vocabularies)."""
    count = len(_WORDS)
    return _INSTRUCTION + " ".join(_WORDS[k % count] for k in range(words))


@dataclass
class ContextFinding:
    """What the context-window requests found.

    Prompts are measured in filler words; :meth:`tokens` turns words into
    tokens as the server counts them, fitted on every answered prompt whose
    ``usage.prompt_tokens`` came back (the two farthest apart), so every figure
    of the detail is on the same scale.
    """

    need: int
    counts: dict[int, int] = field(default_factory=dict)  # words -> usage.prompt_tokens
    long: Exchange | None = None  # the prompt of ``need`` tokens
    long_words: int = 0
    broken: Exchange | None = None  # a calibration prompt that failed
    longest_ok: int | None = None  # words of the longest prompt answered
    shortest_refused: int | None = None  # words of the shortest prompt refused
    seconds: float = 0.0
    stopped: bool = False  # the budget ran out
    server: Slots | None = None  # llama.cpp's slots, when the replies show that server
    unbelievable: bool = False  # a count no tokenizer gives for its prompt came back
    #: words -> usage.prompt_tokens of long prompts counted whole (not cut), outside the fit.
    exact: dict[int, int] = field(default_factory=dict)
    #: Tokens per unit a tokenizer can give: per filler word here; the class workload
    #: measures in Chinese characters (token_counts.CJK_BOUNDS: byte fallback gives 3).
    rate_bounds: tuple[float, float] = RATE_BOUNDS

    @property
    def estimate(self) -> bool:
        """No believable count came back: one token per word is assumed."""
        return not self.counts or self.implausible

    @property
    def implausible(self) -> bool:
        """The server's counts give tokens per word no tokenizer gives (characters counted,
        or a constant): they are not believed, and the check cannot pass."""
        if self.unbelievable:
            return True
        low, high = self.rate_bounds
        return bool(self.counts) and not low <= self._counted_fit()[0] <= high

    def _counted_fit(self) -> tuple[float, float]:
        """(tokens per word, overhead) as the server's counts say."""
        instruction = len(_INSTRUCTION.split())
        low, high = min(self.counts), max(self.counts)
        if high > low:
            rate = (self.counts[high] - self.counts[low]) / (high - low)
            if rate > 0:
                return rate, self.counts[low] - rate * low
            return 0.0, float(self.counts[high])
        # One point: proportional (the chat template's overhead spread over the words).
        return self.counts[high] / (high + instruction), 0.0

    def _fit(self) -> tuple[float, float]:
        """(tokens per word, overhead) from the counts; the estimate without believable ones."""
        if self.estimate:
            return 1.0, float(len(_INSTRUCTION.split()))
        return self._counted_fit()

    def tokens(self, words: int) -> int:
        """The tokens of a prompt of ``words`` filler words (the server's count when known)."""
        if not self.implausible and (words in self.counts or words in self.exact):
            return self.counts.get(words) or self.exact[words]
        rate, overhead = self._fit()
        return round(overhead + rate * words)

    def words(self, tokens: int) -> int:
        """The filler words of a prompt of ``tokens`` tokens (never over MAX_PROMPT_BYTES)."""
        rate, overhead = self._fit()
        return min(max(1, math.ceil((tokens - overhead) / rate)), _MAX_WORDS)

    def answered(self, ex: Exchange, words: int, *, fit: bool = True) -> None:
        """Note an answered prompt; ``fit``: its count joins the scale (not a cut one's)."""
        count = _prompt_tokens(ex)
        # Only counts that size prompts are judged: a prompt cut short (Ollama) is counted
        # low on purpose, and the cut-prompt warning judges that.
        if fit and count is not None and not plausible_prompt_tokens(count, filler_prompt(words)):
            self.unbelievable = True
        if fit and count is not None:
            self.counts[words] = count
        self.longest_ok = max(words, self.longest_ok or 0)

    @property
    def sent(self) -> int:
        """Tokens of the prompt of ``need`` tokens, as the calibration sized it."""
        return self.tokens(self.long_words)


def _prompt_tokens(ex: Exchange) -> int | None:
    """``usage.prompt_tokens`` of a whole reply, when it is a positive count."""
    body = ex.json_body
    usage = body.get("usage") if isinstance(body, dict) else None
    tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0:
        return tokens
    return None


def _answered(ex: Exchange) -> bool:
    # An empty 200 (no body, {}, a stream with no event) answered nothing.
    return has_reply(ex)


async def _ask(client: httpx.AsyncClient, target: Target, words: int) -> Exchange:
    body = chat_body(target.model, filler_prompt(words), stream=False, max_tokens=1)
    return await send(client, target, body, stream=False)


async def probe_context(
    client: httpx.AsyncClient, target: Target, need: int, budget: float
) -> ContextFinding:
    """Calibrate, send a prompt of ``need`` tokens, and search on a refusal; never raises."""
    found = ContextFinding(need)
    start = time.perf_counter()
    try:
        async with asyncio.timeout(budget):
            await _search(client, target, found)
    except TimeoutError:
        found.stopped = True
    found.seconds = time.perf_counter() - start
    return found


async def _search(client: httpx.AsyncClient, target: Target, found: ContextFinding) -> None:
    small, large = await asyncio.gather(*(_ask(client, target, n) for n in CALIBRATION))
    if not _answered(small):
        found.broken = small
        return
    for ex, words in ((small, CALIBRATION[0]), (large, CALIBRATION[1])):
        if _answered(ex):
            found.answered(ex, words)
    if not _answered(large) and large.failure != "timeout":  # a tiny window: a second point
        middle = sum(CALIBRATION) // 2
        ex = await _ask(client, target, middle)
        if _answered(ex):
            found.answered(ex, middle)
    hi = found.long_words = found.words(found.need)
    found.long = await _ask(client, target, hi)
    if any(is_llamacpp(ex) for ex in (small, large, found.long)):
        found.server = await read_slots(client, target, found.long)
    if _answered(found.long):
        found.answered(found.long, hi, fit=False)  # its count is what is judged
        await _reach_need(client, target, found)
        if _answered(found.long):
            return
        hi = found.long_words
    if found.long.failure == "timeout":
        return
    lo = found.longest_ok or CALIBRATION[0]
    found.shortest_refused = hi
    for _step in range(MAX_STEPS):
        if hi - lo <= max(1, hi // 32):
            break
        mid = (lo + hi) // 2
        ex = await _ask(client, target, mid)
        if _answered(ex):
            lo = mid
            found.answered(ex, mid)
        elif ex.failure == "timeout":
            break
        else:
            hi = found.shortest_refused = mid


async def _reach_need(client: httpx.AsyncClient, target: Target, found: ContextFinding) -> None:
    """Lengthen an answered long prompt until the server counts at least the need.

    The calibration's tokens per word are exact over whole cycles of the filler; the
    long prompt ends in a partial cycle, which a tokenizer may count a little lower
    (vLLM: 4,089 tokens for a need of 4,096). A prompt under the need proves nothing
    about the need, so words are added (a few rounds) until the count reaches it; a
    longer prompt that is refused then is the verdict. A prompt counted far below what
    was sent was cut (Ollama): that is judged as it is.
    """
    for _round in range(TOP_UPS):
        long, words = found.long, found.long_words
        counted = _prompt_tokens(long) if long is not None else None
        if counted is None or found.implausible or counted < CUT_BELOW * found.sent:
            return  # no count, no believable count, or a cut prompt
        found.exact[words] = counted
        if counted >= found.need:
            return
        rate, _overhead = found._fit()
        more = words + max(1, math.ceil((found.need - counted) / rate))
        ex = await _ask(client, target, more)
        found.long, found.long_words = ex, more
        if not _answered(ex):
            return
        found.answered(ex, more, fit=False)


def _how_counted(found: ContextFinding) -> str:
    if found.implausible:
        return _(
            "estimated at one token per word: the server's usage.prompt_tokens is not believable"
        )
    if found.estimate:
        return _("estimated at one token per word: the server reports no usage")
    return _("as the server counts them")


def _fix() -> str:
    return _(
        "vLLM: --max-model-len; SGLang: --context-length; LMDeploy: --session-len; llama.cpp: "
        "-c (llama-cpp-python: --n_ctx); Ollama: num_ctx or OLLAMA_CONTEXT_LENGTH; Xinference: "
        "the model's max_model_len at launch"
    )


def context_row(found: ContextFinding) -> CheckResult:
    """context-window: error when a prompt of ``need`` tokens is refused, warning when cut."""
    need, how = found.need, _how_counted(found)
    long = found.long
    if found.broken is not None:
        return _fail(
            _("not judged: a short prompt already got {seen}").format(
                seen=server_said(found.broken)
            )
        )
    if long is None:
        return _fail(
            _("no verdict within {seconds} s: the server answered the short prompts only").format(
                seconds=f"{found.seconds:.0f}"
            )
        )
    if _answered(long) and found.implausible:
        return CheckResult("context-window", False, "warning", _implausible(found, long))
    if _answered(long):
        counted = _prompt_tokens(long)
        scaled = len(found.counts) >= 2  # one count cannot tell the template from the words
        if scaled and counted is not None and counted < CUT_BELOW * found.sent:
            return CheckResult(
                "context-window",
                False,
                "warning",
                _(
                    "a prompt of {sent} tokens was answered, but the server counted only "
                    "{counted}: it cut the prompt silently, so the model never sees the start "
                    "of a long lesson (Ollama cuts to num_ctx). Raise the context window to at "
                    "least {need} tokens ({fix})"
                ).format(sent=found.sent, counted=counted, need=need, fix=_fix()),
            )
        answered = _("a prompt of {tokens} tokens ({how}; {need} needed) was answered in {ms} ms")
        return CheckResult(
            "context-window",
            True,
            "error",
            _joined(
                answered.format(
                    tokens=counted or found.sent,
                    how=how,
                    need=need,
                    ms=f"{(long.latency or 0) * 1000:.0f}",
                ),
                _slots_told(found.server),
            ),
        )
    if long.failure == "timeout":
        return _fail(
            _(
                "a prompt of {sent} tokens ({how}): {why}. The platform would wait as long "
                "for a long lesson: check the server's prefill speed and its context window, "
                "or raise LMREG_TIMEOUT"
            ).format(sent=found.sent, how=how, why=long.failure_detail.rstrip("."))
        )
    longest = found.longest_ok
    stopped = (
        " " + _("(the search stopped after {seconds} s)").format(seconds=f"{found.seconds:.0f}")
        if found.stopped
        else ""
    )
    refused = _(REFUSED).format(
        sent=found.sent,
        how=how,
        seen=server_said(long),
        longest=found.tokens(longest) if longest is not None else "?",
        refused=found.tokens(found.shortest_refused or found.long_words),
        stopped=stopped,
    )
    return _fail(_joined(refused, _advice(found, long)))


def _implausible(found: ContextFinding, long: Exchange) -> str:
    """Why a prompt that was answered proves nothing: the server's counts are not tokens."""
    low, high = min(found.counts), max(found.counts)
    return _(
        "not judged: the server's usage.prompt_tokens cannot be believed: it counted "
        "{low_count} and {high_count} tokens for prompts of {low} and {high} common English "
        "words (a tokenizer counts about one per word; a proxy counting characters, or a "
        "fixed number, gives this). A prompt of about {sent} tokens ({how}) was answered in "
        "{ms} ms, but whether the model saw all of it is unknown: make usage count the "
        "model's tokens, then check again"
    ).format(
        low_count=found.counts[low],
        high_count=found.counts[high],
        low=low,
        high=high,
        sent=found.sent,
        how=_("estimated at one token per word"),
        ms=f"{(long.latency or 0) * 1000:.0f}",
    )


def _joined(*parts: str) -> str:
    return clauses(part for part in parts if part)


def _slots_told(server: Slots | None) -> str:
    """The llama.cpp slots, as the server told them ("" when it did not)."""
    if server is None or server.slots is None or server.per_slot is None:
        return ""
    return ngettext(
        "llama.cpp server with {slots} parallel slot of {tokens} tokens",
        "llama.cpp server with {slots} parallel slots of {tokens} tokens each",
        server.slots,
    ).format(slots=server.slots, tokens=server.per_slot)


def _advice(found: ContextFinding, long: Exchange) -> str:
    """What to change: the split of llama.cpp's slots when it is that server, else the window."""
    need, server = found.need, found.server
    if server is None:
        return _(
            "raise the model's context window to at least {need} tokens ({fix}), or serve a "
            "model with a longer one"
        ).format(need=need, fix=_fix())
    per_slot = server.per_slot or refused_slot(long)
    if server.trained is not None and server.trained < need:
        return _(
            "the model itself takes at most {trained} tokens (n_ctx_train): llama.cpp caps "
            "every slot there, whatever -c says. Serve a model made for prompts of {need} "
            "tokens or more"
        ).format(trained=server.trained, need=need)
    if server.slots is not None and per_slot is not None:
        return _(
            "llama.cpp's server splits its context (-c) among its {slots} parallel slots "
            "(-np {slots}), so each request gets {per_slot} tokens: raise -c to at least "
            "{total} ({slots} x {need}), run fewer slots (-np), or add --kv-unified (the slots "
            "share one context)"
        ).format(slots=server.slots, per_slot=per_slot, total=server.slots * need, need=need)
    return _(
        "llama.cpp's server splits its context (-c) among its parallel slots (-np), so each "
        "request gets -c divided by -np tokens{here}: raise -c to at least the number of slots "
        "x {need}, run fewer slots (-np), or add --kv-unified (the slots share one context)"
    ).format(
        need=need,
        here=_(" ({per_slot} here)").format(per_slot=per_slot) if per_slot is not None else "",
    )


#: The detail of a refused long prompt; :func:`longest_answered` reads it back.
REFUSED = N_(
    "a prompt of {sent} tokens ({how}), as long as the course apps' longest lesson, got "
    "{seen}. The longest prompt answered had {longest} tokens, one of {refused} tokens "
    "was refused{stopped}"
)


def longest_answered(detail: str) -> int | None:
    """The longest prompt (tokens) a refused context-window row says was answered.

    Read with the current language's form of :data:`REFUSED` (the advice follows it), so a
    record keeps
    one copy of the figure: its detail. None when the detail is another one.
    """
    pattern = re.escape(_(REFUSED))
    pattern = re.sub(r"\\\{longest\\\}", r"(?P<longest>[0-9]+)", pattern)
    pattern = re.sub(r"\\\{[a-z]+\\\}", ".*?", pattern)
    found = re.search(pattern, detail, re.DOTALL)
    return int(found["longest"]) if found else None


def _fail(detail: str) -> CheckResult:
    return CheckResult("context-window", False, "error", detail)
