"""Undo a Content-Encoding with a bound on the output, so a gzip bomb stays small.

httpx inflates each network read whole before its caller can count the bytes:
64 KiB of a gzip bomb is 64 MiB in memory at once, per request. Every reader of
an untrusted answer (the school's endpoint, the platform) therefore asks for
:data:`IDENTITY` and reads the body through :func:`inflated` (or
:func:`ainflated`): the raw bytes fed through :class:`BoundedDecoder`, which
inflates what a server compresses anyway up to one byte past the reader's own
cap (zlib's ``max_length``), so the reader's "over the cap" check fires as it
does for a plain body.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Iterator

import httpx

from .i18n import _

__all__ = ["IDENTITY", "BoundedDecoder", "DecodingError", "ainflated", "inflated"]

#: The request header that asks for an uncompressed answer.
IDENTITY = {"Accept-Encoding": "identity"}


class DecodingError(ValueError):
    """The body is not valid in the Content-Encoding its server named (one line)."""


class BoundedDecoder:
    """Inflates a gzip or deflate body to at most ``limit + 1`` bytes in all.

    Identity passes through as it is (the reader counts it); an encoding this
    cannot undo (br, zstd, or several stacked) also passes through raw, so the
    reader sees a body it cannot parse and says so, within its cap.
    """

    def __init__(self, content_encoding: str, limit: int) -> None:
        codings = [c.strip().lower() for c in content_encoding.split(",")]
        codings = [c for c in codings if c and c != "identity"]
        self.coding = codings[0] if len(codings) == 1 else ""
        self._left = limit + 1
        self._inflate: zlib._Decompress | None = None
        self._first = True
        if self.coding in ("gzip", "x-gzip"):
            self._inflate = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif self.coding == "deflate":
            self._inflate = zlib.decompressobj()

    def feed(self, data: bytes) -> bytes:
        """The bytes ``data`` inflates to, never more than the bound left."""
        inflate = self._inflate
        if inflate is None or not data:
            return data
        if self._left <= 0:
            return b""
        try:
            out = inflate.decompress(data, self._left)
        except zlib.error as exc:
            if not (self._first and self.coding == "deflate"):
                raise self._broken() from exc
            # "deflate" is often sent raw, without the zlib wrapper (as httpx also allows).
            self._inflate = inflate = zlib.decompressobj(-zlib.MAX_WBITS)
            try:
                out = inflate.decompress(data, self._left)
            except zlib.error as raw_exc:
                raise self._broken() from raw_exc
        self._first = False
        # Output stops at the bound; the unread rest (unconsumed_tail) is dropped with it.
        self._left -= len(out)
        return out

    def _broken(self) -> DecodingError:
        return DecodingError(
            _("the reply is not valid {coding} data (Content-Encoding)").format(coding=self.coding)
        )


def inflated(response: httpx.Response, limit: int) -> Iterator[bytes]:
    """The body's bytes as they arrive, inflated to at most ``limit + 1`` bytes in all."""
    if response.is_stream_consumed:  # read already (an in-process transport's content=)
        yield response.content
        return
    inflate = BoundedDecoder(response.headers.get("content-encoding", ""), limit)
    for raw in response.iter_raw():
        yield inflate.feed(raw)


async def ainflated(response: httpx.Response, limit: int) -> AsyncIterator[bytes]:
    """:func:`inflated` for an async response."""
    if response.is_stream_consumed:  # read already (an in-process transport's content=)
        yield response.content
        return
    inflate = BoundedDecoder(response.headers.get("content-encoding", ""), limit)
    async for raw in response.aiter_raw():
        yield inflate.feed(raw)
