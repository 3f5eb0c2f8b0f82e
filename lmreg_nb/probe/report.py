"""The probe's public face: check an endpoint (conformance + figures + load test), stream a chat.

``summary`` has the contract's shape (DESIGN.md, ``lmreg-nb check --json``).
With ``requests=0``, or when the load test is skipped because the streamed
check request failed, it describes that single streamed check request
(``requests`` 1; its TTFT, ITL and latency as every percentile; the rates are
1/latency and tokens/latency); when the checks stopped before any request got
an HTTP answer, it counts that one failed request.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from .._tls import tls_context
from ..errors import ConnectError, LmregError, RequestTimeout, ValidationError
from ..secret import Secret
from ..validate import check_registry_url
from .checks import SEVERITIES, CheckResult, Conformance, run_checks
from .exchange import (
    MAX_TEXT_CHARS,
    TOTAL_TIMEOUT_FACTOR,
    Exchange,
    Target,
    chat_body,
    snippet,
)
from .load import MAX_CONCURRENCY, MAX_REQUESTS, LoadResult, make_client, run_load
from .metrics import request_metrics
from .sse import SSEDecoder

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = [
    "ChatEndpointError",
    "EndpointReport",
    "check_endpoint",
    "check_endpoint_async",
    "format_report",
    "stream_chat",
]

log = logging.getLogger("lmreg_nb")
T = TypeVar("T")


class ChatEndpointError(LmregError):
    """The school's chat endpoint answered with an error (``status`` is the HTTP status)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class EndpointReport:
    """What :func:`check_endpoint` found: check rows, the summary, per-request rows."""

    url: str
    model: str
    checks: list[CheckResult]
    summary: dict[str, Any]
    rows: pd.DataFrame | None = None
    metrics: dict[str, Any] | None = None  # the one streamed check request
    errors_by_kind: dict[str, int] = field(default_factory=dict)
    reply_text: str = ""  # the streamed check reply (untrusted: escape before showing)

    @property
    def ok(self) -> bool:
        """No check of severity error failed."""
        return not any(c.severity == "error" and not c.passed for c in self.checks)

    @property
    def failed(self) -> list[CheckResult]:
        """The failed checks, most serious first."""
        return [c for c in _sorted(self.checks) if not c.passed]

    def to_json(self) -> dict[str, Any]:
        """Exactly ``{"checks": [...], "summary": {...}}`` (DESIGN.md)."""
        return {"checks": [c.to_json() for c in self.checks], "summary": dict(self.summary)}

    def checks_frame(self) -> pd.DataFrame:
        """The checks as a table: errors first, then warnings, then info; failed first."""
        import pandas as pd

        return pd.DataFrame(
            [c.to_json() for c in _sorted(self.checks)],
            columns=["name", "passed", "severity", "detail"],
        )

    def figure(self) -> Figure | None:
        """Latency and TTFT distributions and throughput over time; None without a load test."""
        if self.rows is None or self.rows.empty:
            return None
        from .plots import load_figure

        return load_figure(self.rows, title=f"Load test of {self.model}")

    def __repr__(self) -> str:
        bad = len(self.failed)
        return (
            f"EndpointReport(url={self.url!r}, ok={self.ok}, checks={len(self.checks)}, "
            f"failed={bad}, requests={self.summary.get('requests')})"
        )


def _sorted(checks: list[CheckResult]) -> list[CheckResult]:
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(checks, key=lambda c: (rank.get(c.severity, len(rank)), c.passed))


def _target(url: str, api_key: str | Secret, model: str, timeout: float) -> Target:
    url = check_registry_url(url)
    key = api_key.reveal() if isinstance(api_key, Secret) else api_key
    if not isinstance(key, str) or not key.strip():
        raise ValidationError("apiKey", "must not be empty: set LMREG_MODEL_API_KEY")
    if not isinstance(model, str) or not model.strip():
        raise ValidationError("model", "must not be empty: set LMREG_MODEL_NAME")
    if not 0 < timeout <= 600:
        raise ValidationError("timeout", "must be between 0 and 600 seconds")
    return Target(url=url, api_key=key.strip(), model=model.strip(), timeout=float(timeout))


def _single_summary(ex: Exchange | None) -> tuple[dict[str, Any], LoadResult]:
    """The summary of the one measured check request (see the module docstring)."""
    load = LoadResult()
    if ex is not None:
        row = request_metrics(ex)
        load.rows.append(row)
        if ex.ok:
            load.gaps_ms.extend(g * 1000 for g in ex.gaps)
        load.duration_s = ex.latency or 0.0
    return load.summary(), load


def _load_row(load: LoadResult, requests: int, max_duration: float) -> CheckResult:
    summary = load.summary()
    done, errors = summary["requests"], summary["errors"]
    kinds = ", ".join(f"{k} ×{n}" for k, n in load.errors_by_kind.items())
    head = (
        f"{done} of {requests} requests at concurrency {load.concurrency} "
        f"in {load.duration_s:.1f} s"
    )
    if done < requests:
        head += f" (stopped at the {max_duration:g} s deadline)"
    if not errors:
        return CheckResult("load-test", True, "warning", head + ", no error")
    severity = "error" if errors == done else "warning"
    return CheckResult(
        "load-test",
        False,
        severity,
        f"{head}: {errors} failed ({kinds}). The platform will see such failures under load: "
        "check the server's capacity, rate limits and timeouts",
    )


async def check_endpoint_async(
    url: str,
    api_key: str | Secret,
    model: str,
    *,
    requests: int = 0,
    concurrency: int = 1,
    timeout: float = 10.0,
    progress: bool = False,
    max_duration: float = 300.0,
    max_tokens: int = 256,
) -> EndpointReport:
    """:func:`check_endpoint` for code already inside an event loop (``await`` it)."""
    target = _target(url, api_key, model, timeout)
    if not 0 <= requests <= MAX_REQUESTS:
        raise ValidationError("requests", f"must be between 0 and {MAX_REQUESTS}")
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise ValidationError("concurrency", f"must be between 1 and {MAX_CONCURRENCY}")
    if max_duration <= 0:
        raise ValidationError("max_duration", "must be a positive number of seconds")
    async with make_client(concurrency, timeout) as client:
        conf: Conformance = await run_checks(client, target, max_tokens=min(max_tokens, 64))
        checks = list(conf.checks)
        load: LoadResult | None = None
        if requests > 0 and conf.answered_stream:
            log.info("load test: %d requests at concurrency %d", requests, concurrency)
            load = await run_load(
                target,
                requests,
                concurrency,
                max_duration=max_duration,
                max_tokens=max_tokens,
                progress=progress,
                client=client,
            )
            checks.append(_load_row(load, requests, max_duration))
        elif requests > 0:
            checks.append(
                CheckResult(
                    "load-test",
                    False,
                    "info",
                    "not run: the streamed check request failed (see the rows above)",
                )
            )
    streamed = conf.streamed
    if load is not None:
        summary, errors_by_kind = load.summary(), load.errors_by_kind
    else:
        summary, single = _single_summary(conf.measured)
        errors_by_kind = single.errors_by_kind
    rows = None
    if load is not None:
        import pandas as pd

        rows = pd.DataFrame(load.rows).set_index("request")
    return EndpointReport(
        url=target.url,
        model=target.model,
        checks=checks,
        summary=summary,
        rows=rows,
        metrics=request_metrics(streamed) if streamed is not None else None,
        errors_by_kind=errors_by_kind,
        reply_text=streamed.text if streamed is not None else "",
    )


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion, also from a notebook whose loop is running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    # Jupyter runs cells inside an event loop: use a thread with its own loop.
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="lmreg-probe") as pool:
        return pool.submit(asyncio.run, coro).result()


def check_endpoint(
    url: str,
    api_key: str | Secret,
    model: str,
    *,
    requests: int = 0,
    concurrency: int = 1,
    timeout: float = 10.0,
    progress: bool = False,
    max_duration: float = 300.0,
    max_tokens: int = 256,
) -> EndpointReport:
    """Check a chat endpoint (spec 4.5), measure one streamed reply, and load-test it.

    ``requests`` > 0 runs a load test of that many streamed requests,
    ``concurrency`` at a time, stopped after ``max_duration`` seconds. A server
    that fails gives failed check rows, not an exception; a bad argument raises
    :class:`~lmreg_nb.errors.ValidationError`.
    """
    return _run(
        check_endpoint_async(
            url,
            api_key,
            model,
            requests=requests,
            concurrency=concurrency,
            timeout=timeout,
            progress=progress,
            max_duration=max_duration,
            max_tokens=max_tokens,
        )
    )


def _status_error(status: int, body: bytes, url: str) -> ChatEndpointError:
    import json

    message = ""
    try:
        data = json.loads(body)
        err = data.get("error") if isinstance(data, dict) else None
        if isinstance(err, dict):
            message = str(err.get("message") or "")
        elif isinstance(data, dict):
            message = str(data.get("message") or data.get("detail") or err or "")
    except ValueError:
        message = body.decode("utf-8", "replace")
    said = f": {snippet(message, 160)}" if message.strip() else ""
    if status in (401, 403):
        hint = "check LMREG_MODEL_API_KEY (the key the server expects)"
    elif status == 429:
        hint = "the server is rate limiting; wait and try again"
    elif status >= 500:
        hint = "the model server failed; check its logs"
    elif status == 404:
        hint = "check LMREG_MODEL_URL and LMREG_MODEL_NAME"
    else:
        hint = "check the request the server expects (spec 4.5)"
    return ChatEndpointError(f"{url} answered HTTP {status}{said}; {hint}", status=status)


def stream_chat(
    url: str,
    api_key: str | Secret,
    model: str,
    prompt: str,
    *,
    timeout: float = 10.0,
) -> Iterator[str]:
    """Yield the reply's content pieces as they arrive (capped at 256 Ki characters).

    Raises a one-line :class:`~lmreg_nb.errors.LmregError` on failure:
    ConnectError, RequestTimeout, or ChatEndpointError (HTTP error status, an
    error object in the stream). A server that ignores ``stream`` and sends one
    JSON body gives one piece.
    """
    import json

    target = _target(url, api_key, model, timeout)
    body = json.dumps(chat_body(target.model, prompt, stream=True, max_tokens=None)).encode()
    sent = 0
    try:
        with (
            httpx.Client(timeout=httpx.Timeout(timeout), verify=tls_context()) as client,
            client.stream("POST", target.url, content=body, headers=target.headers()) as reply,
        ):
            if reply.status_code // 100 != 2:
                raise _status_error(reply.status_code, reply.read()[:65536], target.url)
            media = reply.headers.get("content-type", "").lower()
            if media.startswith("text/html"):
                raise ChatEndpointError(
                    f"{target.url} answered an HTML page, not an event stream: "
                    "check the URL points at the model, not a proxy or login page"
                )
            if "json" in media:
                piece = _whole_text(reply.read()[: 4 * 1024 * 1024])
                if piece:
                    yield piece[:MAX_TEXT_CHARS]
                return
            decoder = SSEDecoder()
            deadline = time.monotonic() + timeout * TOTAL_TIMEOUT_FACTOR
            for chunk in reply.iter_bytes():
                if time.monotonic() > deadline:
                    raise RequestTimeout(
                        f"{target.url} did not finish its reply within "
                        f"{timeout * TOTAL_TIMEOUT_FACTOR:g} s"
                    )
                for event in decoder.feed(chunk):
                    if event.data == "[DONE]":
                        return
                    text = _event_text(event.data)
                    if text:
                        room = MAX_TEXT_CHARS - sent
                        if room <= 0:
                            log.warning("stream_chat: reply over %d characters, cut", sent)
                            return
                        sent += len(text[:room])
                        yield text[:room]
    except httpx.TimeoutException as exc:
        raise RequestTimeout(f"{target.url} did not answer within {timeout:g} s") from exc
    except httpx.ConnectError as exc:
        raise ConnectError(
            f"could not connect to {target.url}: {snippet(str(exc), 120)}; is the server running?"
        ) from exc
    except httpx.HTTPError as exc:
        raise ConnectError(
            f"the connection to {target.url} failed: {type(exc).__name__}: {snippet(str(exc), 120)}"
        ) from exc


def _event_text(data: str) -> str:
    import json

    try:
        obj = json.loads(data)
    except ValueError:
        raise ChatEndpointError(
            f"the stream held a chunk that is not JSON: {snippet(data, 60)!r}"
        ) from None
    if not isinstance(obj, dict):
        return ""
    if "error" in obj:
        err = obj["error"]
        message = err.get("message") if isinstance(err, dict) else err
        raise ChatEndpointError(
            f"the model reported an error mid-stream: {snippet(str(message), 160)}"
        )
    choices = obj.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return ""
    delta = choices[0].get("delta")
    text = delta.get("content") if isinstance(delta, dict) else choices[0].get("text")
    return text if isinstance(text, str) else ""


def _whole_text(body: bytes) -> str:
    import json

    try:
        obj = json.loads(body)
        message = obj["choices"][0].get("message") or {}
        text = message.get("content") or obj["choices"][0].get("text")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise ChatEndpointError(
            "the reply was JSON but not a chat completion; check the endpoint URL"
        ) from None
    return text if isinstance(text, str) else ""


def format_report(report: EndpointReport) -> str:
    """A plain-text table of the checks and the summary (for the CLI)."""
    lines = []
    width = max((len(c.name) for c in report.checks), default=10)
    for c in _sorted(report.checks):
        mark = " ok " if c.passed else "FAIL"
        lines.append(f"[{mark}] {c.severity:<7} {c.name:<{width}}  {c.detail}")
    s = report.summary
    lines.append("")

    def pct(key: str) -> str:
        p = s.get(key) or {}
        return " ".join(
            f"{q} {p[q]:.1f}" if p.get(q) is not None else f"{q} -" for q in ("p50", "p90", "p99")
        )

    lines.append(f"requests {s['requests']}, errors {s['errors']}")
    if report.errors_by_kind:
        kinds = ", ".join(f"{k} ×{n}" for k, n in report.errors_by_kind.items())
        lines.append(f"errors by kind: {kinds}")
    lines.append(f"TTFT ms      {pct('ttft_ms')}")
    lines.append(f"ITL ms       {pct('itl_ms')}")
    lines.append(f"latency ms   {pct('latency_ms')}")
    rps, tps = s.get("requests_per_s"), s.get("output_tokens_per_s")
    lines.append(
        f"throughput   {rps if rps is not None else '-'} requests/s, "
        f"{tps if tps is not None else '-'} output tokens/s"
    )
    lines.append("verdict: " + ("OK" if report.ok else "FAILED (a check of severity error failed)"))
    return "\n".join(lines)
