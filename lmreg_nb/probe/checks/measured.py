"""The rows of what was measured after the checks: the load test and the prefix cache.

Declared like every check (their words and causes here), judged by the report
(:mod:`lmreg_nb.probe.report`) once the load test ran, not by the suite.
"""

from __future__ import annotations

from ...i18n import N_, Nn_
from ...summary import Check, Fact, PrefixCache, Severity
from .declare import Declared, Words

__all__ = ["LOAD_TEST", "PREFIX_CACHE", "judge_load", "judge_prefix_cache", "load_not_run"]


def judge_load(
    *,
    done: int,
    requests: int,
    errors: int,
    concurrency: int,
    seconds: float,
    deadline: float,
    kinds: str,
    local_limit: bool,
    cut_streams: int,
    too_long: bool = False,
    resent: int = 0,
    disbelieved: int = 0,
) -> Check:
    """The load test: every request answered, or how many failed and why. ``too_long``:
    every failure is how a server answers a prompt over its window, and the
    context-window check saw one refused: the lesson is too long, not a matter of load.
    ``resent``: chats sent twice (a kept-alive connection closed under them);
    ``disbelieved``: replies whose usage.completion_tokens was not believed."""
    facts: dict[str, Fact] = {
        "head": "deadline" if done < requests else "all",
        "done": done,
        "requests": requests,
        "c": concurrency,
        "seconds": f"{seconds:.1f}",
        "deadline": f"{deadline:g}",
        "resent": resent,
        "disbelieved": disbelieved,
    }
    if not errors:
        return LOAD_TEST.passed(**facts)
    severity: Severity = "error" if errors == done else "warning"
    facts.update(errors=errors, kinds=kinds)
    if local_limit:
        # Requests this computer could not even send say nothing about the server.
        return LOAD_TEST.failed_as(severity, "local-limit", **facts)
    if too_long and errors == done:
        return LOAD_TEST.failed_as(severity, "too-long", **facts)
    cut = "" if not cut_streams else "alone" if concurrency == 1 else "interrupt"
    return LOAD_TEST.failed_as(severity, "errors", cut=cut, **facts)


LOAD_TEST = Declared(
    "load-test",
    "warning",
    says={
        "passed": Words(N_("{head}, no error")),
        "not-run": Words(N_("not run: the streamed check request failed (see the rows above)")),
        "not-run:unreached": Words(N_("not run: the model server does not answer (see reachable)")),
        "not-run:wrong-path": Words(N_("not run: the address serves no chat (see url-path)")),
        "local-limit": Words(
            N_(
                "{head}: {errors} failed ({kinds}). This computer ran out of open files "
                "(ulimit -n), so some requests were never sent: raise the limit or lower the "
                "concurrency, then run the load test again"
            )
        ),
        "too-long": Words(
            N_(
                "{head}: {errors} failed ({kinds}). The lesson's prompts are longer than the "
                "server's context window takes (see context-window): raise the window, or "
                "measure with a shorter lesson (--lesson-tokens) and shorter replies "
                "(--max-tokens)"
            )
        ),
        "errors": Words(
            N_(
                "{head}: {errors} failed ({kinds}). The platform will see such failures under "
                "load: check the server's capacity, rate limits and timeouts{cut}"
            )
        ),
    },
    parts={
        "head": {
            "all": Words(N_("{done} of {requests} requests at concurrency {c} in {seconds} s")),
            "deadline": Words(
                N_(
                    "{done} of {requests} requests at concurrency {c} in {seconds} s "
                    "(stopped at the {deadline} s deadline)"
                )
            ),
        },
        "cut": {
            "": Words(""),
            "alone": Words(
                N_(
                    ". Replies ended early with one request at a time: the server cut them "
                    "without another request arriving; look at its log."
                )
            ),
            "interrupt": Words(
                N_(
                    ". The server cut streams when new requests arrived (llama.cpp "
                    "interrupt_requests): start llama-cpp-python with --interrupt_requests "
                    "False, or for Ollama set OLLAMA_NUM_PARALLEL to the number of chats at once."
                )
            ),
        },
    },
    notes={
        "resent": Words(
            *Nn_(
                "{resent} request was sent twice: the server closed a kept-alive connection "
                "under it, so it may have done that work twice.",
                "{resent} requests were sent twice: the server closed kept-alive connections "
                "under them, so it may have done that work twice.",
            ),
            count="resent",
        ),
        "disbelieved": Words(
            *Nn_(
                "{disbelieved} reply claimed more tokens in usage.completion_tokens than four "
                "per chunk it streamed: not believed, its tokens are counted from its chunks.",
                "{disbelieved} replies claimed more tokens in usage.completion_tokens than four "
                "per chunk they streamed: not believed, their tokens are counted from their "
                "chunks.",
            ),
            count="disbelieved",
        ),
    },
)


def load_not_run(stage: str) -> Check:
    """The load test that did not run because the checks' streamed request failed: not
    judged, with the cause the checks found (a server that does not answer, a path that
    serves no chat)."""
    cause = f"not-run:{stage}" if f"not-run:{stage}" in LOAD_TEST.says else "not-run"
    return LOAD_TEST.not_judged(cause)


def judge_prefix_cache(found: PrefixCache) -> Check:
    """Whether the server reused the shared lesson (passed unless it clearly did not); not
    judged when a student's question about the lesson failed."""
    facts: dict[str, Fact] = {
        "first": f"{found.first_ms:.0f}" if found.first_ms is not None else "-",
        "next": f"{found.next_ms:.0f}" if found.next_ms is not None else "-",
    }
    if found.failure is not None:
        kind = found.failure
        if kind.startswith("status "):
            return PREFIX_CACHE.not_judged(
                "not-measured", why="status", why_status=kind.removeprefix("status ")
            )
        return PREFIX_CACHE.not_judged("not-measured", why=kind)
    if found.hit_share is not None and found.reused is not None:
        share = f"{found.hit_share * 100:.0f}"
        if found.reused:
            return PREFIX_CACHE.passed("counted-reused", share=share, **facts)
        return PREFIX_CACHE.failed("counted-not-reused", share=share)
    if found.reused:
        return PREFIX_CACHE.passed("reused", **facts)
    if found.reused is False:
        return PREFIX_CACHE.failed("not-reused", **facts)
    # Could not tell (this machine stalled, or the times wandered): not judged, passed null.
    if found.stalls:
        seconds = f"{found.worst_stall_ms / 1000:.1f}"
        return PREFIX_CACHE.not_judged("stalled", n=found.stalls, seconds=seconds, **facts)
    if found.quick:
        slowest = max(found.first_ms or 0.0, found.next_ms or 0.0)
        return PREFIX_CACHE.passed("quick", slowest=f"{slowest:.0f}")
    if found.noise_ms is not None:
        return PREFIX_CACHE.not_judged("wandered", noise=f"{found.noise_ms:.0f}", **facts)
    return PREFIX_CACHE.passed("unclear", **facts)


PREFIX_CACHE = Declared(
    "prefix-cache",
    "info",
    says={
        "reused": Words(
            N_(
                "The server reuses the shared lesson (a prefix cache): the first student's"
                " answer started after {first} ms, the next student's after {next} ms."
            )
        ),
        "counted-reused": Words(
            N_(
                "The server reuses the shared lesson (a prefix cache): by its own counters,"
                " {share} % of the later students' lesson tokens came from its cache (the"
                " first student's answer started after {first} ms, the next student's after"
                " {next} ms)."
            )
        ),
        "counted-not-reused": Words(
            N_(
                "The server does not reuse the shared lesson: by its own counters, {share} % of"
                " the later students' lesson tokens came from a cache, so every student pays for"
                " the whole lesson. Turn on a prefix cache: vLLM --enable-prefix-caching,"
                " llama.cpp --cache-reuse 256."
            )
        ),
        "not-measured": Words(
            N_(
                "Not measured whether the server reuses the shared lesson: a student's"
                " question about it failed ({why})."
            )
        ),
        "stalled": Words(
            *Nn_(
                "Could not tell whether the server reuses the shared lesson: this machine"
                " stalled {n} time, up to {seconds} s, while it timed the answers (the first"
                " student's started after {first} ms, the next students' after {next} ms).",
                "Could not tell whether the server reuses the shared lesson: this machine"
                " stalled {n} times, up to {seconds} s, while it timed the answers (the first"
                " student's started after {first} ms, the next students' after {next} ms).",
            ),
            count="n",
        ),
        "wandered": Words(
            N_(
                "Could not tell whether the server reuses the shared lesson: the first"
                " student's answer started after {first} ms, the next students' after {next} ms,"
                " and the same question's start times wandered by {noise} ms from one ask to"
                " the next, more than the lesson could show."
            )
        ),
        "unclear": Words(
            N_(
                "Could not tell whether the server reuses the shared lesson: its answers'"
                " start times wandered more than the lesson could explain (the first"
                " student's after {first} ms, the next students' after {next} ms)."
            )
        ),
        "quick": Words(
            N_(
                "Could not tell whether the server reuses the shared lesson: the first and the"
                " next student's answers both started within {slowest} ms."
            )
        ),
        "not-reused": Words(
            N_(
                "The server does not seem to reuse the shared lesson: the next student's answer"
                " started after {next} ms, the first one's after {first} ms; every student pays"
                " for the whole lesson. Turn on a prefix cache: vLLM --enable-prefix-caching,"
                " llama.cpp --cache-reuse 256."
            )
        ),
    },
    parts={
        "why": {
            "status": Words("HTTP {status}", raw=True),
            "connect": Words(N_("cannot connect")),
            "timeout": Words(N_("timed out")),
            "transport": Words(N_("connection broke")),
            "bad stream": Words(N_("malformed stream")),
            "bad body": Words(N_("malformed reply")),
            "cut stream": Words(N_("cut stream")),
        }
    },
)

#: The rows of what was measured after the checks (judged by the report, not the suite).
MEASURED: tuple[Declared, ...] = (PREFIX_CACHE, LOAD_TEST)
