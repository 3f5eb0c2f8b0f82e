"""The SSE decoder: WHATWG rules, any chunking, and agreement with openai-python's decoder."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from openai._streaming import SSEDecoder as OpenAIDecoder

from lmreg_nb.probe.wire.sse import ServerSentEvent, SSEDecoder


def decode(*chunks: bytes) -> tuple[list[ServerSentEvent], SSEDecoder]:
    decoder = SSEDecoder()
    events = [e for chunk in chunks for e in decoder.feed(chunk)]
    events += decoder.close()
    return events, decoder


def test_fields_comments_and_multiline_data() -> None:
    events, dec = decode(
        b": keep-alive\n\nevent: delta\nid: 7\nretry: 1500\ndata: one\ndata:two\n\ndata: x\n\n"
    )
    assert events == [
        ServerSentEvent("one\ntwo", "delta", "7", 1500),
        ServerSentEvent("x", "message", "7", None),  # the last id is kept
    ]
    assert dec.framing.comments == 1 and dec.framing.no_space == 1


def test_one_leading_space_only_is_stripped() -> None:
    events, _ = decode(b"data:  two spaces\n\ndata\n\n")
    assert [e.data for e in events] == [" two spaces", ""]


def test_line_ends_crlf_cr_lf_even_split_between_chunks() -> None:
    events, dec = decode(b"data: a\r", b"\n\r", b"\ndata: b\r\r", b"data: c\n\n")
    assert [e.data for e in events] == ["a", "b", "c"]
    assert dec.framing.crlf == 2 and dec.framing.cr == 2 and dec.framing.lf == 2


def test_a_lone_cr_at_a_chunk_end_completes_the_event_at_once() -> None:
    decoder = SSEDecoder()
    assert [e.data for e in decoder.feed(b"data: a\r\r")] == ["a"]  # not held back


def test_unterminated_last_event_is_dropped_and_noted() -> None:
    events, dec = decode(b"data: a\n\ndata: b")
    assert [e.data for e in events] == ["a"]
    assert dec.framing.unterminated


def test_blank_lines_without_data_dispatch_nothing() -> None:
    events, _ = decode(b"\n\n\nevent: x\n\n: c\n\n")
    assert events == []


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    events, _ = decode(b"data: \xff\xfe ok\n\n")
    assert events[0].data.endswith(" ok")


_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=30
)
_event = st.tuples(
    st.one_of(st.none(), st.sampled_from(["delta", "error", "ping"])),
    st.lists(_text, min_size=1, max_size=3),
)


@settings(max_examples=150, deadline=None)
@given(
    events=st.lists(_event, min_size=1, max_size=6),
    eol=st.sampled_from(["\n", "\r\n", "\r"]),
    space=st.booleans(),
    comments=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=8),
)
def test_any_chunking_agrees_with_openai_python(
    events: list[tuple[str | None, list[str]]],
    eol: str,
    space: bool,
    comments: bool,
    cuts: list[int],
) -> None:
    sep = ": " if space else ":"
    text = ""
    for name, lines in events:
        if comments:
            text += f": keep-alive{eol}"
        if name:
            text += f"event{sep}{name}{eol}"
        text += "".join(f"data{sep}{line}{eol}" for line in lines) + eol
    raw = text.encode()
    points = sorted({c % (len(raw) + 1) for c in cuts})
    chunks = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]

    ours, _ = decode(*chunks)
    theirs = list(OpenAIDecoder().iter_bytes(iter(chunks)))
    assert [(e.data, e.event) for e in ours] == [(e.data, e.event or "message") for e in theirs]
    # Without the separator's space, a value's own leading space is the one stripped.
    strip = (lambda v: v) if space else (lambda v: v[1:] if v.startswith(" ") else v)
    assert [e.data for e in ours] == ["\n".join(map(strip, lines)) for _, lines in events]
