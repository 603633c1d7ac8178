"""Sans-I/O message framing for JSON-RPC byte streams.

Two framings are in use among the peers agent-bridge talks to:

* LSP-style ``Content-Length`` headers (editors, most language-server clients);
* newline-delimited JSON, one message a line (ACP agents, the Codex app-server).

A framer is fed whatever bytes a read returned, in any chunking, and returns the
complete message bodies found so far, in order, interleaved with :class:`FramingError`
values for input it had to reject.  It never touches a pipe or an event loop, so it can
be tested with plain bytes, and it never raises for bad input: a framing error is a
value, the framer resynchronises and the stream goes on.

Limits are constructor parameters: a body larger than ``max_message_bytes`` is rejected
without being allocated (its bytes are skipped as they arrive).

The way out is here too, so that framing lives in one module: :func:`encode_frame`
frames one body, and :func:`frame_encoder` / :func:`frames_encoder` return the encoder
for a framing, which the connection picks once (not per message) on its hot path.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final, Literal, Protocol

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "AutoFramer",
    "ContentLengthFramer",
    "FramingError",
    "FramingKind",
    "NewlineFramer",
    "StreamFramer",
    "encode_frame",
    "frame_encoder",
    "frames_encoder",
    "make_framer",
]

DEFAULT_MAX_MESSAGE_BYTES: Final = 16 * 1024 * 1024
MAX_HEADER_BLOCK_BYTES: Final = 8 * 1024
_MAX_LENGTH_DIGITS: Final = 12

FramingKind = Literal["auto", "content-length", "newline"]

_HEADER_END = b"\r\n\r\n"
_FAST_PREFIX = b"Content-Length: "
_DIGITS = re.compile(rb"[0-9]{1,%d}" % _MAX_LENGTH_DIGITS)
# Bounded whitespace before the colon: a match is at most _RESYNC_KEEP + 1 bytes long, so
# keeping the last _RESYNC_KEEP bytes of a read finds a match split across reads, and the
# outcome never depends on how the input was chunked.
_RESYNC = re.compile(rb"content-length[ \t]{0,16}:", re.IGNORECASE)
_RESYNC_KEEP: Final = len(b"content-length") + 16


class FramingError:
    """A piece of input the framer rejected; returned in-line, never raised.

    ``reason`` is a short machine-readable tag (``missing_content_length``,
    ``bad_content_length``, ``too_large``, ``bad_header``, ``header_too_large``,
    ``truncated``); ``detail`` is a human-readable sentence that never contains body
    bytes.
    """

    __slots__ = ("detail", "reason")

    def __init__(self, reason: str, detail: str) -> None:
        self.reason = reason
        self.detail = detail

    def __repr__(self) -> str:
        return f"FramingError({self.reason!r}, {self.detail!r})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, FramingError)
            and other.reason == self.reason
            and other.detail == self.detail
        )

    def __hash__(self) -> int:
        return hash((self.reason, self.detail))


class StreamFramer(Protocol):
    """What every framer offers: feed bytes in, take frames out."""

    @property
    def kind(self) -> FramingKind:
        """The framing in use (``auto`` until an auto-detecting framer has decided)."""
        ...

    def feed(self, data: bytes) -> list[bytes | FramingError]:
        """Consume ``data``; return the bodies completed by it and any errors, in order."""
        ...

    def eof(self) -> list[bytes | FramingError]:
        """Signal end of input; return a final frame or a ``truncated`` error, if any."""
        ...


class ContentLengthFramer:
    """``Content-Length`` framing as in the Language Server Protocol base protocol.

    Header names are case-insensitive and headers other than ``Content-Length`` (such
    as ``Content-Type``) are accepted and ignored.  The length must be plain decimal
    digits; signs, hex, an over-long number, two different values or a value above the
    limit are framing errors.  After a bad header block the framer skips ahead to the
    next ``Content-Length`` header, so a later valid message is still delivered.
    """

    kind: FramingKind = "content-length"

    def __init__(self, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        self._max = max_message_bytes
        self._tail = b""  # unconsumed input carried over to the next feed
        self._need: int | None = None  # body length expected, once headers are parsed
        self._skip = 0  # bytes of an oversized body still to discard
        self._resync = False

    def feed(self, data: bytes) -> list[bytes | FramingError]:
        # Work on one immutable buffer with a moving offset: every byte is copied at most
        # once more (into the body it belongs to, or into the tail kept for next time).
        out: list[bytes | FramingError] = []
        if self._skip:
            if len(data) <= self._skip:
                self._skip -= len(data)
                return out
            data = data[self._skip :]
            self._skip = 0
        buf = self._tail + data if self._tail else data
        pos = 0
        size = len(buf)
        while True:
            need = self._need
            if need is not None:
                if size - pos < need:
                    break
                out.append(buf[pos : pos + need])
                pos += need
                self._need = None
                continue
            if self._resync:
                match = _RESYNC.search(buf, pos)
                if match is None:
                    pos = max(pos, size - _RESYNC_KEEP)  # a header may be split across reads
                    break
                pos = match.start()
                self._resync = False
            if pos == size:
                break
            end = buf.find(_HEADER_END, pos)
            # The block is too large when its terminator does not start within the limit,
            # decided the same way whether the block arrived in one read or in many (so
            # the outcome never depends on chunking), and resynchronised from the same
            # point: just past the limit.
            if end < 0 or end - pos > MAX_HEADER_BLOCK_BYTES:
                if end < 0 and size - pos < MAX_HEADER_BLOCK_BYTES + len(_HEADER_END):
                    break
                out.append(FramingError("header_too_large", "header block exceeds the size limit"))
                pos += MAX_HEADER_BLOCK_BYTES + 1
                self._resync = True
                continue
            length: int | None = None
            if buf.startswith(_FAST_PREFIX, pos):
                value = buf[pos + 16 : end]
                if 0 < len(value) <= _MAX_LENGTH_DIGITS and value.isdigit() and value.isascii():
                    length = int(value)
            if length is None:
                length = self._parse_header(buf[pos:end], out)
            pos = end + 4
            if length is None:
                self._resync = True
                continue
            if length > self._max:
                out.append(
                    FramingError(
                        "too_large",
                        f"message of {length} bytes exceeds the limit of {self._max} bytes",
                    )
                )
                if size - pos >= length:
                    pos += length
                else:
                    self._skip = length - (size - pos)
                    pos = size
                    break
                continue
            self._need = length
        self._tail = buf[pos:] if pos < size else b""
        return out

    def _parse_header(self, header: bytes, out: list[bytes | FramingError]) -> int | None:
        """Return the body length declared by ``header``, or ``None`` after reporting why not."""
        if header.startswith(_FAST_PREFIX) and b"\n" not in header:
            value = header[len(_FAST_PREFIX) :].strip()
            if _DIGITS.fullmatch(value):
                return int(value)
            out.append(FramingError("bad_content_length", "Content-Length is not a decimal size"))
            return None
        length: int | None = None
        for line in header.split(b"\r\n"):
            name, sep, value = line.partition(b":")
            if not sep:
                out.append(FramingError("bad_header", "header line without a colon"))
                return None
            if name.strip().lower() != b"content-length":
                continue
            value = value.strip()
            if not _DIGITS.fullmatch(value):
                out.append(
                    FramingError("bad_content_length", "Content-Length is not a decimal size")
                )
                return None
            parsed = int(value)
            if length is not None and parsed != length:
                out.append(
                    FramingError("bad_content_length", "two different Content-Length values")
                )
                return None
            length = parsed
        if length is None:
            out.append(
                FramingError("missing_content_length", "header block without Content-Length")
            )
        return length

    def eof(self) -> list[bytes | FramingError]:
        pending = self._need is not None or self._skip or bool(self._tail.strip())
        self._tail = b""
        self._need = None
        self._skip = 0
        if pending:
            return [FramingError("truncated", "stream ended inside a message")]
        return []


class NewlineFramer:
    """Newline-delimited JSON: one message a line.

    Blank lines are skipped, a trailing ``\\r`` is dropped (CRLF input), a last line
    without a newline is delivered at EOF, and a line longer than the limit is reported
    as ``too_large`` and skipped up to its newline without being buffered.
    """

    kind: FramingKind = "newline"

    def __init__(self, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        self._max = max_message_bytes
        self._buf = bytearray()
        self._discarding = False

    def feed(self, data: bytes) -> list[bytes | FramingError]:
        out: list[bytes | FramingError] = []
        if self._discarding:
            nl = data.find(b"\n")
            if nl < 0:
                return out
            data = data[nl + 1 :]
            self._discarding = False
        buf = self._buf
        start = 0
        if buf:
            nl = data.find(b"\n")
            if nl < 0:
                buf += data
                self._check_overflow(out)
                return out
            buf += data[:nl]
            self._emit(bytes(buf), out)
            buf.clear()
            start = nl + 1
        find = data.find
        while True:
            nl = find(b"\n", start)
            if nl < 0:
                break
            self._emit(data[start:nl], out)
            start = nl + 1
        if start < len(data):
            buf += data[start:]
            self._check_overflow(out)
        return out

    def _check_overflow(self, out: list[bytes | FramingError]) -> None:
        if len(self._buf) > self._max:
            out.append(FramingError("too_large", f"line exceeds the limit of {self._max} bytes"))
            self._buf.clear()
            self._discarding = True

    def _emit(self, line: bytes, out: list[bytes | FramingError]) -> None:
        if len(line) > self._max:
            out.append(FramingError("too_large", f"line exceeds the limit of {self._max} bytes"))
            return
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line or line.isspace():
            return
        out.append(line)

    def eof(self) -> list[bytes | FramingError]:
        out: list[bytes | FramingError] = []
        if self._buf and not self._discarding:
            self._emit(bytes(self._buf), out)
        self._buf.clear()
        self._discarding = False
        return out


class AutoFramer:
    """Chooses the framing from the first non-blank byte: ``{`` or ``[`` means
    newline-delimited JSON, anything else a ``Content-Length`` header block."""

    def __init__(self, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        self._max = max_message_bytes
        self._inner: ContentLengthFramer | NewlineFramer | None = None

    @property
    def kind(self) -> FramingKind:
        """The framing detected so far (``auto`` until the first byte decides)."""
        return "auto" if self._inner is None else self._inner.kind

    def feed(self, data: bytes) -> list[bytes | FramingError]:
        inner = self._inner
        if inner is None:
            stripped = data.lstrip()
            if not stripped:
                return []
            if stripped[:1] in (b"{", b"["):
                inner = NewlineFramer(self._max)
            else:
                inner = ContentLengthFramer(self._max)
            self._inner = inner
            data = stripped
        return inner.feed(data)

    def eof(self) -> list[bytes | FramingError]:
        return [] if self._inner is None else self._inner.eof()


def make_framer(
    kind: FramingKind, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
) -> StreamFramer:
    """Return a fresh framer for ``kind``; raises ``ValueError`` for an unknown kind."""
    if kind == "auto":
        return AutoFramer(max_message_bytes)
    if kind == "content-length":
        return ContentLengthFramer(max_message_bytes)
    if kind == "newline":
        return NewlineFramer(max_message_bytes)
    raise ValueError(f"unknown framing {kind!r}")


def _newline_frame(body: bytes) -> bytes:
    return body + b"\n"


def _content_length_frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def _newline_frames(bodies: list[bytes], head: bytes = b"", tail: bytes = b"") -> list[bytes]:
    return [b"%s%s%s\n" % (head, body, tail) for body in bodies]


def _content_length_frames(
    bodies: list[bytes], head: bytes = b"", tail: bytes = b""
) -> list[bytes]:
    extra = len(head) + len(tail)
    return [
        b"Content-Length: %d\r\n\r\n%s%s%s" % (len(body) + extra, head, body, tail)
        for body in bodies
    ]


def frame_encoder(kind: FramingKind) -> Callable[[bytes], bytes]:
    """Return the function that frames one body for ``kind`` (``auto`` writes
    ``Content-Length``, as :func:`encode_frame` does); never raises."""
    return _newline_frame if kind == "newline" else _content_length_frame


def frames_encoder(kind: FramingKind) -> Callable[[list[bytes], bytes, bytes], list[bytes]]:
    """Return the function that frames many bodies for ``kind`` in one call:
    ``encode(bodies, head, tail)`` returns one frame per body, each framing
    ``head + body + tail`` without building that concatenation first; never raises."""
    return _newline_frames if kind == "newline" else _content_length_frames


def encode_frame(kind: FramingKind, body: bytes) -> bytes:
    """Return ``body`` framed for the wire (``auto`` writes ``Content-Length``).

    ``body`` must already be one line of JSON for the newline framing; msgspec's
    encoder never emits raw newlines, so encoded messages always are.
    """
    return frame_encoder(kind)(body)
