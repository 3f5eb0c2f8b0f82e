"""One streamed chat reply from the school's endpoint: the chat step and the chat box.

:func:`stream_chat` yields the reply's text as it arrives (sync, for a notebook
cell); :func:`chat_reply` collects it inside an event loop (the checks run it
beside their own requests). Both read the stream through one :class:`ChatReader`
and stop with a one-line error instead of running on:

- more than :data:`MAX_BODY_BYTES` read or :data:`MAX_TEXT_CHARS` of text: an
  endless stream stops there, so memory stays bounded;
- no complete event for ``timeout`` seconds ("stalled after N bytes": a
  slowloris trickling a byte a second is caught by this, not the per-read timeout);
- the whole reply over ``timeout`` x :data:`TOTAL_TIMEOUT_FACTOR` seconds;
- the connection closing before ``data: [DONE]`` (and before a finish_reason).

The reply is accumulated by :class:`~lmreg_nb.probe.wire.reply.Reply` (as every
reader's is); a compressed body is inflated with a bound (a gzip bomb stays small).

Every text that came from the server (the reply, an error message) goes
through the masker with the key before it is shown or raised: a server that
echoes the Authorization header gets nothing printed.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

import httpx

from ..._decode import DecodingError, ainflated, inflated
from ..._tls import tls_context
from ...errors import ConnectError, LmregError, RequestTimeout
from ...i18n import _
from ...secret import Masker, Secret
from ...terminal import snippet as _snippet
from ..target import Target
from .exchange import MAX_BODY_BYTES, MAX_TEXT_CHARS, TOTAL_TIMEOUT_FACTOR, chat_body
from .reasons import transport_reason
from .reply import Reply
from .shapes import error_message, reply_text
from .sse import SSEDecoder

__all__ = ["ChatEndpointError", "ChatReader", "StreamMasker", "chat_reply", "stream_chat"]

#: The most of an error body read for its message.
MAX_ERROR_BYTES = 64 * 1024


class ChatEndpointError(LmregError):
    """The school's chat endpoint answered with an error (``status`` is the HTTP status)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


#: A terminal escape sequence, complete or cut short, at the end of the text so far.
_ESCAPE_TAIL = re.compile(
    r"(?:(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\?)?|\x1b[@-Z\\-_]?)\Z"
)


class StreamMasker:
    """Masks secrets in text that arrives in pieces, holding back what might be one.

    A secret in any of its forms is made only of the characters of those forms
    (no whitespace, no CJK text unless the key has it), or of characters read as
    them (invisible marks, fullwidth letters: :meth:`Masker.holds`), so text is
    released up to the last character that cannot be part of a form: an echoed
    key split over two pieces is still masked whole.
    """

    def __init__(self, secrets: Iterable[str | Secret]) -> None:
        self._mask = Masker(list(secrets))
        self._pending = ""

    def push(self, text: str) -> str:
        """The part of the text so far that is safe to show now (masked)."""
        if not self._mask:
            return text
        self._pending += text
        cut = len(self._pending)
        while cut > 0:
            if self._mask.holds(self._pending[cut - 1]):
                cut -= 1
                continue
            # A terminal escape sequence (complete, or still arriving) between a key's
            # characters hides nothing once rendered: it is held back with them.
            escape = _ESCAPE_TAIL.search(self._pending, 0, cut)
            if escape is None:
                break
            cut = escape.start()
        ready, self._pending = self._pending[:cut], self._pending[cut:]
        return self._mask(ready) if ready else ""

    def flush(self) -> str:
        """Whatever is still held back (masked): call once at the end."""
        ready, self._pending = self._pending, ""
        return self._mask(ready) if ready and self._mask else ready

    def __call__(self, text: str) -> str:
        """Mask a whole text at once."""
        return self._mask(text) if self._mask else text


class ChatReader:
    """Judges one streamed reply fed as bytes: text pieces out, a one-line error on trouble."""

    def __init__(self, url: str, timeout: float, mask: StreamMasker) -> None:
        self.url = url
        self.timeout = timeout
        self.mask = mask
        self.decoder = SSEDecoder()
        self.reply = Reply()
        self.size = 0
        now = time.monotonic()
        self.last_event = now
        self.deadline = now + timeout * TOTAL_TIMEOUT_FACTOR

    def feed(self, chunk: bytes) -> list[str]:
        """Decode a piece of the stream; the text pieces it completed (raw, not masked)."""
        now = time.monotonic()
        self.size += len(chunk)
        if self.size > MAX_BODY_BYTES:
            raise self.error(
                _("{url} sent more than {mib} MiB without ending its reply; stopped").format(
                    url=self.url, mib=f"{MAX_BODY_BYTES / 2**20:g}"
                )
            )
        if now > self.deadline:
            raise RequestTimeout(
                _(
                    "{url} did not finish its reply within {seconds} s (stopped after {n} bytes)"
                ).format(
                    url=self.url, seconds=f"{self.timeout * TOTAL_TIMEOUT_FACTOR:g}", n=self.size
                )
            )
        pieces: list[str] = []
        comments = self.decoder.framing.comments
        events = self.decoder.feed(chunk)
        if events or self.decoder.framing.comments != comments:  # keep-alives count as life
            self.last_event = now
        reply = self.reply
        for event in events:
            text = reply.take_data(event.data, time.perf_counter())
            self._judge(event.data)
            if text:
                pieces.append(text)
        if now - self.last_event > self.timeout:
            raise self.stalled()
        return pieces

    def _judge(self, data: str) -> None:
        """Stop at the first event that is not a chunk, an error object, or text past the cap."""
        reply = self.reply
        if reply.non_json:
            raise self.error(
                _("the stream held a chunk that is not JSON: {text}").format(
                    text=repr(_snippet(data, 60))
                )
            )
        if reply.error_events:
            raise self.error(
                _("the model reported an error mid-stream: {message}").format(
                    message=_snippet(_said(reply.error_events[0]), 160)
                )
            )
        if reply.truncated:
            raise self.error(
                _("{url} sent a reply over {n} characters; stopped").format(
                    url=self.url, n=MAX_TEXT_CHARS
                )
            )

    def whole(self, body: bytes) -> str:
        """A reply sent as one JSON body: its text (raw, not masked)."""
        try:
            obj = json.loads(body)
        except ValueError:
            obj = None
        if reply_text(obj) is None:
            raise self.error(
                _("the reply was JSON but not a chat completion; check the endpoint URL")
            )
        return self.reply.take_whole(obj, time.perf_counter())

    def stalled(self) -> RequestTimeout:
        """The error for a stream that stopped sending complete events."""
        return RequestTimeout(
            _("{url} stalled after {n} bytes: no complete event for {seconds} s").format(
                url=self.url, n=self.size, seconds=f"{self.timeout:g}"
            )
        )

    def end(self) -> None:
        """The connection closed: fine after [DONE] (or a finish_reason), an error before."""
        self.decoder.close()
        if not self.reply.done and self.reply.finish is None:
            raise self.error(
                _("{url}: connection closed before [DONE] after {n} bytes").format(
                    url=self.url, n=self.size
                )
            )

    def error(self, message: str, status: int | None = None) -> ChatEndpointError:
        """A one-line error with any secret masked."""
        return ChatEndpointError(self.mask(message), status=status)


def _said(error: Any) -> str:
    """The message of an error object found in a stream (as :class:`Reply` keeps it)."""
    if isinstance(error, str):
        return error
    return error_message(error) or json.dumps(error)[:200]


def status_error(status: int, body: bytes, url: str, mask: StreamMasker) -> ChatEndpointError:
    """A one-line error for an HTTP error answer, with the server's message (masked)."""
    message = error_message(body)
    if message is None:
        message = body.decode("utf-8", "replace")
    said = _snippet(message, 160)
    if status in (401, 403):
        hint = _("check the apiKey (LMREG_MODEL_API_KEY): it is not the key the server expects")
    elif status == 429:
        hint = _("the server is rate limiting; wait and try again")
    elif status >= 500:
        hint = _("the model server failed; check its logs")
    elif status == 404:
        hint = _("check the URL and the model name the server serves")
    else:
        hint = _("check the request the server expects (spec 4.5)")
    text = (
        _("{url} answered HTTP {status}: {said}; {hint}")
        if said
        else _("{url} answered HTTP {status}; {hint}")
    )
    return ChatEndpointError(
        mask(text.format(url=url, status=status, said=said, hint=hint)), status=status
    )


def _transport_error(exc: httpx.HTTPError, url: str, reader: ChatReader) -> LmregError:
    if isinstance(exc, httpx.TimeoutException):
        if reader.size:
            return reader.stalled()
        return RequestTimeout(
            _("{url} did not answer within {seconds} s").format(
                url=url, seconds=f"{reader.timeout:g}"
            )
        )
    if isinstance(exc, httpx.RemoteProtocolError) and reader.size:
        return reader.error(
            _("{url}: connection closed before [DONE] after {n} bytes").format(
                url=url, n=reader.size
            )
        )
    return ConnectError(reader.mask(transport_reason(exc, url)))


def _html_error(url: str) -> str:
    return _(
        "{url} answered an HTML page, not an event stream: check the URL points at the model, "
        "not a proxy or login page"
    ).format(url=url)


def stream_chat(target: Target, prompt: str) -> Iterator[str]:
    """Yield the reply's text as it arrives (masked; at most 256 Ki characters).

    Raises a one-line :class:`~lmreg_nb.errors.LmregError` on failure:
    ConnectError, RequestTimeout (no answer, a stalled stream, the overall
    deadline) or ChatEndpointError (an HTTP error status, an error object in the
    stream, a reply over the size caps, a connection closed before [DONE]).
    A server that ignores ``stream`` and sends one JSON body gives one piece.
    """
    mask = StreamMasker([target.api_key])
    reader = ChatReader(target.url, target.timeout, mask)
    body = json.dumps(chat_body(target.model, prompt, stream=True, max_tokens=None)).encode()
    timeout = httpx.Timeout(target.timeout)
    try:
        with (
            # Directly, as the checks and the platform call it: never the environment's proxy.
            httpx.Client(timeout=timeout, verify=tls_context(), trust_env=False) as client,
            client.stream("POST", target.url, content=body, headers=target.headers()) as reply,
        ):
            chunks = inflated(reply, MAX_BODY_BYTES)
            if reply.status_code // 100 != 2:
                raw = _capped(chunks, MAX_ERROR_BYTES)
                raise status_error(reply.status_code, raw, target.url, mask)
            media = reply.headers.get("content-type", "").lower()
            if media.startswith("text/html"):
                raise reader.error(_html_error(target.url))
            if "json" in media:
                text = reader.whole(_capped(chunks, MAX_BODY_BYTES))
                if text:
                    yield mask(text)
                return
            try:
                for chunk in chunks:
                    for piece in reader.feed(chunk):
                        shown = mask.push(piece)
                        if shown:
                            yield shown
                reader.end()
            finally:
                rest = mask.flush()
            if rest:
                yield rest
    except httpx.HTTPError as exc:
        raise _transport_error(exc, target.url, reader) from exc
    except DecodingError as exc:
        raise reader.error(str(exc)) from None


def _capped(chunks: Iterable[bytes], limit: int) -> bytes:
    out = bytearray()
    for chunk in chunks:
        out += chunk[: limit - len(out)]
        if len(out) >= limit:
            break
    return bytes(out)


async def _acapped(chunks: AsyncIterator[bytes], limit: int) -> bytes:
    out = bytearray()
    async for chunk in chunks:
        out += chunk[: limit - len(out)]
        if len(out) >= limit:
            break
    return bytes(out)


async def chat_reply(client: httpx.AsyncClient, target: Target, prompt: str) -> str:
    """The whole streamed reply to ``prompt`` (masked), or a one-line LmregError.

    The checks run it with their own client, beside their requests.
    """
    import asyncio

    mask = StreamMasker([target.api_key])
    reader = ChatReader(target.url, target.timeout, mask)
    body = json.dumps(chat_body(target.model, prompt, stream=True, max_tokens=None)).encode()
    pieces: list[str] = []
    try:
        async with (
            asyncio.timeout(target.timeout * TOTAL_TIMEOUT_FACTOR),
            client.stream("POST", target.url, content=body, headers=target.headers()) as reply,
        ):
            chunks = ainflated(reply, MAX_BODY_BYTES)
            if reply.status_code // 100 != 2:
                raw = await _acapped(chunks, MAX_ERROR_BYTES)
                raise status_error(reply.status_code, raw, target.url, mask)
            media = reply.headers.get("content-type", "").lower()
            if media.startswith("text/html"):
                raise reader.error(_html_error(target.url))
            if "json" in media:
                return mask(reader.whole(await _acapped(chunks, MAX_BODY_BYTES)))
            async for chunk in chunks:
                pieces.extend(reader.feed(chunk))
            reader.end()
    except TimeoutError:
        raise RequestTimeout(
            _("{url} did not finish its reply within {seconds} s (stopped after {n} bytes)").format(
                url=target.url,
                seconds=f"{target.timeout * TOTAL_TIMEOUT_FACTOR:g}",
                n=reader.size,
            )
        ) from None
    except httpx.HTTPError as exc:
        raise _transport_error(exc, target.url, reader) from exc
    except DecodingError as exc:
        raise reader.error(str(exc)) from None
    return mask("".join(pieces))
