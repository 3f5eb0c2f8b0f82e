"""The bounded inflater every reader of an untrusted answer uses (issue 20, item 2)."""

from __future__ import annotations

import zlib

import httpx
import pytest

from lmreg_nb._decode import BoundedDecoder, DecodingError, inflated

TEXT = b'{"choices": [{"message": {"content": "hello"}}]}' * 50


def _pieces(data: bytes, size: int = 7) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


@pytest.mark.parametrize(
    ("coding", "wbits"),
    [("gzip", 31), ("x-gzip", 31), ("deflate", 15), ("deflate", -15), ("GZIP, identity", 31)],
    ids=["gzip", "x-gzip", "deflate-zlib", "deflate-raw", "with-identity"],
)
def test_each_coding_inflates_piece_by_piece(coding: str, wbits: int) -> None:
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    body = packer.compress(TEXT) + packer.flush()
    inflate = BoundedDecoder(coding, 1 << 20)
    assert b"".join(inflate.feed(p) for p in _pieces(body)) == TEXT


def test_the_output_stops_one_byte_past_the_limit() -> None:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = packer.compress(bytes(64 << 20)) + packer.flush()  # 64 MiB in about 64 KiB
    inflate = BoundedDecoder("gzip", 1000)
    out = [inflate.feed(p) for p in _pieces(bomb, 65536)]
    assert sum(len(o) for o in out) == 1001 and max(len(o) for o in out) <= 1001


def test_identity_and_unknown_codings_pass_through() -> None:
    for coding in ("", "identity", "br", "gzip, gzip"):
        assert BoundedDecoder(coding, 10).feed(TEXT) == TEXT  # the reader counts these


def test_a_broken_body_is_one_line() -> None:
    with pytest.raises(DecodingError, match="not valid gzip data"):
        BoundedDecoder("gzip", 1000).feed(b"this is not gzip at all")


def test_an_in_process_response_read_already_is_given_whole() -> None:
    response = httpx.Response(200, content=TEXT)
    assert b"".join(inflated(response, 10)) == TEXT
