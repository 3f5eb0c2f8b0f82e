"""A small, exact server-sent-events decoder that also notes how a stream was framed.

It follows the WHATWG event-stream rules (as openai-python's ``SSEDecoder``
does): lines end with ``\\r\\n``, ``\\r`` or ``\\n``; a line starting with ``:``
is a comment; ``field: value`` loses one leading space of its value; several
``data`` lines join with ``\\n``; a blank line dispatches the event; an event
left unterminated when the stream ends is dropped. An event's data is decoded
as UTF-8 when the event is complete, so a character split across network
reads is reassembled; data that is not UTF-8 is counted (``bad_utf8``). Unlike httpx-sse it never
refuses a stream, and it counts the deviations that real servers show
(:class:`Framing`), so the checker can report them instead of hiding them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Framing", "SSEDecoder", "ServerSentEvent"]


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One dispatched event."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


@dataclass(slots=True)
class Framing:
    """What the decoder saw about the framing of a stream."""

    lf: int = 0  # lines ended by \n
    crlf: int = 0  # lines ended by \r\n
    cr: int = 0  # lines ended by a lone \r
    comments: int = 0  # `:` lines (keep-alives)
    no_space: int = 0  # `data:value` without the space
    unknown_fields: set[str] = field(default_factory=set)
    unterminated: bool = False  # the stream ended in the middle of an event
    bad_utf8: int = 0  # events whose data was not valid UTF-8 (decoded with U+FFFD)


class SSEDecoder:
    """Incremental decoder: :meth:`feed` bytes as they arrive, :meth:`close` at the end."""

    __slots__ = ("_buf", "_data", "_event", "_id", "_last_id", "_retry", "_skip_lf", "framing")

    def __init__(self) -> None:
        self._buf = b""
        self._skip_lf = False  # the last chunk ended in \r: a leading \n belongs to it
        self._data: list[bytes] = []
        self._event = ""
        self._id: str | None = None
        self._last_id: str | None = None
        self._retry: int | None = None
        self.framing = Framing()

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Decode a piece of the stream; returns the events it completed."""
        framing = self.framing
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
                framing.cr -= 1  # the \r counted last time was half of a \r\n
                framing.crlf += 1
        if b"\r" in chunk:
            crlf = chunk.count(b"\r\n")
            framing.crlf += crlf
            framing.cr += chunk.count(b"\r") - crlf
            framing.lf += chunk.count(b"\n") - crlf
            # A trailing \r ends its line now; a \n opening the next chunk is its pair.
            self._skip_lf = chunk.endswith(b"\r")
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        else:
            framing.lf += chunk.count(b"\n")
        lines = (self._buf + chunk).split(b"\n")
        self._buf = lines.pop()
        events: list[ServerSentEvent] = []
        for raw in lines:
            event = self._line(raw)
            if event is not None:
                events.append(event)
        return events

    def close(self) -> list[ServerSentEvent]:
        """The stream ended: an unterminated event is dropped (and noted)."""
        if self._buf or self._data:
            self.framing.unterminated = True
        self._buf = b""
        self._data = []
        return []

    def _line(self, raw: bytes) -> ServerSentEvent | None:
        if not raw:
            return self._dispatch()
        if raw[:1] == b":":
            self.framing.comments += 1
            return None
        name, colon, value = raw.partition(b":")
        if value[:1] == b" ":
            value = value[1:]
        elif colon and value and name == b"data":
            self.framing.no_space += 1
        if name == b"data":
            # Kept as bytes: the event is decoded whole, so UTF-8 is judged per event.
            self._data.append(value)
            return None
        text = value.decode("utf-8", "replace")
        if name == b"event":
            self._event = text
        elif name == b"id":
            if "\0" not in text:
                self._id = text
        elif name == b"retry":
            if text.isdigit():
                self._retry = int(text)
        else:
            self.framing.unknown_fields.add(name[:40].decode("utf-8", "replace"))
        return None

    def _dispatch(self) -> ServerSentEvent | None:
        if self._id is not None:
            self._last_id = self._id
        if not self._data:
            self._event = ""
            return None
        raw = b"\n".join(self._data)
        try:
            data = raw.decode("utf-8")
        except UnicodeDecodeError:
            self.framing.bad_utf8 += 1
            data = raw.decode("utf-8", "replace")
        event = ServerSentEvent(data, self._event or "message", self._last_id, self._retry)
        self._data = []
        self._event = ""
        self._retry = None
        return event
