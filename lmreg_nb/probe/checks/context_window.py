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
import time
from dataclasses import dataclass, field

import httpx

from ...errors import ValidationError
from ...i18n import N_, Nn_, _
from ...summary import Check, Fact
from ..target import Target
from ..wire.exchange import Exchange, chat_body, send
from ..wire.shapes import usage_of
from .declare import Context, Declared, Request, Words
from .llamacpp import Slots, is_llamacpp, read_slots, refused_slot
from .said import SAID_PARTS, has_reply, seen_facts
from .token_counts import plausible_prompt_tokens

__all__ = [
    "CONTEXT",
    "CONTEXT_WINDOW",
    "DEFAULT_CONTEXT_NEED",
    "MAX_CONTEXT_NEED",
    "ContextFinding",
    "ContextNeed",
    "check_context_need",
    "filler_prompt",
    "judge_context",
    "probe_context",
]

#: The most a check asks for: 128 Ki tokens, the longest window schools' models commonly have.
MAX_CONTEXT_NEED = 131072
#: Requests of the search after a refusal.
MAX_STEPS = 4
#: The context-window search may take this many times the (per-read) timeout.
CONTEXT_BUDGET_FACTOR = 3
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


class ContextNeed(int):
    """Tokens of the longest prompt the course apps send, checked: 1 to :data:`MAX_CONTEXT_NEED`.

    Made once from what a person gave (``--context-need``, the notebook's parameter) by
    :func:`check_context_need`; the library takes a ``ContextNeed`` as checked, by its
    type (``ContextNeed(need)`` is ``need`` itself), and checks any other value.
    """

    def __new__(cls, value: object) -> ContextNeed:
        if isinstance(value, ContextNeed):
            return value
        return super().__new__(cls, check_context_need(value))


#: Tokens of the longest prompt the course apps send (the onboarding's ``context_need``).
DEFAULT_CONTEXT_NEED = ContextNeed(8000)


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
    # usage_of drops absurd counts (10**400), as for every other reader of usage.
    usage = usage_of(ex.json_body)
    tokens = usage.get("prompt_tokens") if usage is not None else None
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


def _how(found: ContextFinding) -> str:
    """How the prompt's tokens were counted (the ``how`` part's variant)."""
    if found.implausible:
        return "implausible"
    if found.estimate:
        return "estimate"
    return "counted"


def judge_context(found: ContextFinding) -> Check:
    """Error when a prompt of ``need`` tokens is refused, warning when cut silently.

    The facts hold what the words and the fix are made of: ``need``, ``sent``, and when
    it is refused ``longest`` (tokens of the longest prompt answered: the principal's
    page says "lessons longer than N tokens are refused").
    """
    need, how = found.need, _how(found)
    long = found.long
    if found.broken is not None:
        return CONTEXT_WINDOW.failed("short-failed", **seen_facts(found.broken))
    if long is None:
        return CONTEXT_WINDOW.failed("no-verdict", seconds=f"{found.seconds:.0f}")
    ms = f"{(long.latency or 0) * 1000:.0f}"
    if has_reply(long) and found.implausible:
        low, high = min(found.counts), max(found.counts)
        return CONTEXT_WINDOW.failed_as(
            "warning",
            "implausible",
            low_count=found.counts[low],
            high_count=found.counts[high],
            low=low,
            high=high,
            sent=found.sent,
            ms=ms,
        )
    if has_reply(long):
        counted = _prompt_tokens(long)
        scaled = len(found.counts) >= 2  # one count cannot tell the template from the words
        if scaled and counted is not None and counted < CUT_BELOW * found.sent:
            return CONTEXT_WINDOW.failed_as(
                "warning", "cut", sent=found.sent, counted=counted, need=need, fix=""
            )
        return CONTEXT_WINDOW.passed(
            tokens=counted or found.sent, how=how, need=need, ms=ms, **_slots_facts(found.server)
        )
    if long.failure == "timeout":
        why = (long.failure_detail or "").rstrip(".")
        return CONTEXT_WINDOW.failed("timeout", sent=found.sent, how=how, why=why)
    longest = found.longest_ok
    return CONTEXT_WINDOW.failed(
        "refused",
        sent=found.sent,
        how=how,
        longest=found.tokens(longest) if longest is not None else None,
        refused=found.tokens(found.shortest_refused or found.long_words),
        stopped="stopped" if found.stopped else "",
        seconds=f"{found.seconds:.0f}",
        need=need,
        **seen_facts(long),
        **_advice_facts(found, long),
    )


def _slots_facts(server: Slots | None) -> dict[str, Fact]:
    """The llama.cpp slots, as the server told them (none when it did not)."""
    if server is None or server.slots is None or server.per_slot is None:
        return {"slots_told": ""}
    return {"slots_told": "told", "slots": server.slots, "per_slot": server.per_slot}


def _advice_facts(found: ContextFinding, long: Exchange) -> dict[str, Fact]:
    """What to change: the split of llama.cpp's slots when it is that server, else the
    window (the ``advice`` part's variant and its facts)."""
    need, server = found.need, found.server
    if server is None:
        return {"advice": "window", "fix": ""}
    per_slot = server.per_slot or refused_slot(long)
    if server.trained is not None and server.trained < need:
        return {"advice": "trained", "trained": server.trained}
    if server.slots is not None and per_slot is not None:
        return {
            "advice": "slots",
            "slots": server.slots,
            "per_slot": per_slot,
            "total": server.slots * need,
        }
    return {
        "advice": "slots-unknown",
        "here": "here" if per_slot is not None else "",
        "per_slot": per_slot,
    }


async def _context_request(ctx: Context, target: Target) -> ContextFinding:
    return await probe_context(
        ctx.client, target, ctx.context_need, target.timeout * CONTEXT_BUDGET_FACTOR
    )


#: The calibration prompts, the prompt of ``context_need`` tokens and the search.
CONTEXT = Request("context", _context_request)

_FIX = N_(
    "vLLM: --max-model-len; SGLang: --context-length; LMDeploy: --session-len; llama.cpp: "
    "-c (llama-cpp-python: --n_ctx); Ollama: num_ctx or OLLAMA_CONTEXT_LENGTH; Xinference: "
    "the model's max_model_len at launch"
)

CONTEXT_WINDOW = Declared(
    "context-window",
    "error",
    says={
        "passed": Words(
            N_(
                "a prompt of {tokens} tokens ({how}; {need} needed) was answered in "
                "{ms} ms{slots_told}"
            )
        ),
        "short-failed": Words(N_("even a short prompt got {seen}: no long one was tried")),
        "no-verdict": Words(
            N_("no verdict within {seconds} s: the server answered the short prompts only")
        ),
        "implausible": Words(
            N_(
                "cannot be confirmed: the server's usage.prompt_tokens cannot be believed: it "
                "counted {low_count} and {high_count} tokens for prompts of {low} and {high} "
                "common English words (a tokenizer counts about one per word; a proxy counting "
                "characters, or a fixed number, gives this). A prompt of about {sent} tokens "
                "(estimated at one token per word) was answered in {ms} ms, but whether the "
                "model saw all of it is unknown: make usage count the model's tokens, then "
                "check again"
            )
        ),
        "cut": Words(
            N_(
                "a prompt of {sent} tokens was answered, but the server counted only "
                "{counted}: it cut the prompt silently, so the model never sees the start "
                "of a long lesson (Ollama cuts to num_ctx). Raise the context window to at "
                "least {need} tokens ({fix})"
            )
        ),
        "timeout": Words(
            N_(
                "a prompt of {sent} tokens ({how}): {why}. The platform would wait as long "
                "for a long lesson: check the server's prefill speed and its context window, "
                "or raise LMREG_TIMEOUT"
            )
        ),
        "refused": Words(
            N_(
                "a prompt of {sent} tokens ({how}), as long as the course apps' longest lesson, "
                "got {seen}. The longest prompt answered had {longest} tokens, one of {refused} "
                "tokens was refused{stopped}; {advice}"
            )
        ),
    },
    parts={
        **SAID_PARTS,
        "how": {
            "implausible": Words(
                N_(
                    "estimated at one token per word: the server's usage.prompt_tokens is not "
                    "believable"
                )
            ),
            "estimate": Words(N_("estimated at one token per word: the server reports no usage")),
            "counted": Words(N_("as the server counts them")),
        },
        "fix": {"": Words(_FIX)},
        "stopped": {
            "": Words(""),
            "stopped": Words(N_(" (the search stopped after {seconds} s)")),
        },
        "slots_told": {
            "": Words(""),
            "told": Words(
                *Nn_(
                    "; llama.cpp server with {slots} parallel slot of {per_slot} tokens",
                    "; llama.cpp server with {slots} parallel slots of {per_slot} tokens each",
                ),
                count="slots",
            ),
        },
        "here": {"": Words(""), "here": Words(N_(" ({per_slot} here)"))},
        "advice": {
            "window": Words(
                N_(
                    "raise the model's context window to at least {need} tokens ({fix}), or "
                    "serve a model with a longer one"
                )
            ),
            "trained": Words(
                N_(
                    "the model itself takes at most {trained} tokens (n_ctx_train): llama.cpp "
                    "caps every slot there, whatever -c says. Serve a model made for prompts of "
                    "{need} tokens or more"
                )
            ),
            "slots": Words(
                N_(
                    "llama.cpp's server splits its context (-c) among its {slots} parallel "
                    "slots (-np {slots}), so each request gets {per_slot} tokens: raise -c to at "
                    "least {total} ({slots} x {need}), run fewer slots (-np), or add "
                    "--kv-unified (the slots share one context)"
                )
            ),
            "slots-unknown": Words(
                N_(
                    "llama.cpp's server splits its context (-c) among its parallel slots (-np), "
                    "so each request gets -c divided by -np tokens{here}: raise -c to at least "
                    "the number of slots x {need}, run fewer slots (-np), or add --kv-unified "
                    "(the slots share one context)"
                )
            ),
        },
    },
    sends=(CONTEXT,),
    judge=lambda seen, target: (
        judge_context(found) if (found := seen.of("context", ContextFinding)) else None
    ),
)
