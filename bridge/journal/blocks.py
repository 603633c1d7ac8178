"""Event blocks: how a run of consecutive events of one session is stored (sans-I/O).

The journal stores a session's events as *blocks*: one row holds up to
:data:`MAX_BLOCK_EVENTS` consecutive envelopes (and about :data:`MAX_BLOCK_BYTES` of
them), as the concatenated encoded envelopes (Zstandard-compressed, ``codec`` 2, unless
that does not make them smaller, ``codec`` 0; journals written before schema version 8
also hold zlib blocks, ``codec`` 1, which are still read), their sizes (little-endian
``uint32`` each, uncompressed) and their payload types (one byte each, a code from
:data:`TYPE_NAMES`).

One row per block instead of per event is what keeps the writer cheap: a group commit of
a few thousand streamed deltas is a handful of inserts whose contents are built by C loops
(``bytes.join``, ``struct.pack``, the compressor, which also runs without the interpreter
lock), so the writer thread holds the lock for microseconds per commit and the event loop
keeps streaming.  Compression pays for itself: envelopes of one session repeat their keys
and ids, so a block shrinks about tenfold and SQLite has that much less to copy and write.
Zstandard (level 1, with its frame checksum, so damage is an error and never wrong data)
replaced zlib (level 1) for the CPU: per envelope of a streamed delta it costs 0.07 µs
against 0.37 (1.3 against 0.3 µs for varied prose), and its blocks are smaller
(``bench/README.md``, issue 34).  ``zstandard`` is imported at the first block compressed
or read, never on the start path.

Blocks of one session are contiguous and never overlap: ``first_seq`` of a block is
``last_seq + 1`` of the previous one.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Sequence
from itertools import accumulate
from typing import Any, Final

from agent_bridge.wire import events as _events

__all__ = [
    "CODEC_PLAIN",
    "CODEC_ZLIB",
    "CODEC_ZSTD",
    "MAX_BLOCK_BYTES",
    "MAX_BLOCK_EVENTS",
    "MAX_PLAIN_BLOCK",
    "TYPE_CODES",
    "TYPE_NAMES",
    "block_rows",
    "block_spans",
    "decode_bodies",
    "encode_bodies",
    "pack_sizes",
    "slice_block",
]

MAX_BLOCK_EVENTS: Final = 512
MAX_BLOCK_BYTES: Final = 256 * 1024

#: Payload type names by code.  Append only: codes are stored in journals.
TYPE_NAMES: Final[tuple[str, ...]] = (
    "",
    "text.delta",
    "thinking.delta",
    "tool.activity",
    "plan.updated",
    "usage",
    "diagnostic",
    "run.started",
    "run.completed",
    "run.failed",
    "run.interrupted",
    "interaction.requested",
    "interaction.settled",
    "session.closed",
    "session.resumed",
    "limits.updated",
    "session.imported",
    "commands.updated",
    "settings.updated",
)


def _type_codes() -> dict[type, int]:
    codes: dict[type, int] = {}
    for name in _events.__all__:
        cls = getattr(_events, name)
        tag = getattr(getattr(cls, "__struct_config__", None), "tag", None)
        if isinstance(tag, str):
            codes[cls] = TYPE_NAMES.index(tag)
    return codes


#: Payload class -> its type code (every tagged payload of :mod:`agent_bridge.wire.events`).
TYPE_CODES: Final[dict[type, int]] = _type_codes()


def block_spans(sizes: Sequence[int]) -> list[tuple[int, int]]:
    """Return ``[start, stop)`` index ranges that cut events of ``sizes`` bytes into
    blocks: at most :data:`MAX_BLOCK_EVENTS` each, and no more than
    :data:`MAX_BLOCK_BYTES` unless a single event is larger."""
    from bisect import bisect_right  # writes only: not imported before serve's first reply

    ends = list(accumulate(sizes))
    spans: list[tuple[int, int]] = []
    start = 0
    total = len(sizes)
    while start < total:
        before = ends[start - 1] if start else 0
        stop = min(start + MAX_BLOCK_EVENTS, bisect_right(ends, before + MAX_BLOCK_BYTES))
        stop = max(stop, start + 1)
        spans.append((start, stop))
        start = stop
    return spans


CODEC_PLAIN: Final = 0
#: zlib: written before schema version 8, still read
CODEC_ZLIB: Final = 1
CODEC_ZSTD: Final = 2

#: the largest block a stored frame may claim to hold: a damaged frame header must not
#: make a read allocate what it says
MAX_PLAIN_BLOCK: Final = 1 << 30

_codecs = threading.local()  # zstandard's (de)compressors are one thread's each


def _compressor() -> Any:
    """This thread's Zstandard compressor (level 1, content size and checksum written)."""
    try:
        return _codecs.compressor
    except AttributeError:
        import zstandard

        _codecs.compressor = zstandard.ZstdCompressor(level=1, write_checksum=True)
        return _codecs.compressor


def _decompressor() -> Any:
    """This thread's Zstandard decompressor."""
    try:
        return _codecs.decompressor
    except AttributeError:
        import zstandard

        _codecs.decompressor = zstandard.ZstdDecompressor()
        return _codecs.decompressor


def encode_bodies(bodies: Sequence[bytes]) -> tuple[int, bytes]:
    """Return ``(codec, blob)``: the concatenated envelopes, compressed when that helps."""
    plain = b"".join(bodies)
    packed: bytes = _compressor().compress(plain)
    return (CODEC_ZSTD, packed) if len(packed) < len(plain) else (CODEC_PLAIN, plain)


def decode_bodies(codec: int, blob: bytes) -> bytes:
    """Return the concatenated envelopes of a stored block; raises ``ValueError`` for an
    unknown codec or damaged data (a Zstandard frame whose checksum does not match, or
    that claims more than :data:`MAX_PLAIN_BLOCK`, included)."""
    if codec == CODEC_PLAIN:
        return blob
    if codec == CODEC_ZSTD:
        import zstandard

        try:
            size = zstandard.frame_content_size(blob)
            if not 0 <= size <= MAX_PLAIN_BLOCK:
                raise ValueError(f"a journal block is damaged: it claims {size} bytes")
            plain: bytes = _decompressor().decompress(blob)
        except zstandard.ZstdError as exc:
            raise ValueError(f"a journal block is damaged: {exc}") from None
        return plain
    if codec == CODEC_ZLIB:
        import zlib  # old blocks only: not imported before serve's first reply

        try:
            return zlib.decompress(blob)
        except zlib.error as exc:
            raise ValueError(f"a journal block is damaged: {exc}") from None
    raise ValueError(f"a journal block has an unknown codec {codec}")


def pack_sizes(sizes: Sequence[int]) -> bytes:
    """Return ``sizes`` as little-endian ``uint32`` values."""
    return struct.pack(f"<{len(sizes)}I", *sizes)


#: one ``event_blocks`` row: skey, first_seq, last_seq, codec, types, sizes, bodies
BlockRow = tuple[int, int, int, int, bytes, bytes, bytes]


def block_rows(
    skey: int, first_seq: int, codes: bytes, bodies: Sequence[bytes]
) -> tuple[list[BlockRow], int]:
    """Return the ``event_blocks`` rows of the session's consecutive events
    ``first_seq``… (their type codes and envelopes), and the bytes they store
    (compressed)."""
    sizes = list(map(len, bodies))
    rows: list[BlockRow] = []
    stored = 0
    for start, stop in block_spans(sizes):
        codec, blob = encode_bodies(bodies[start:stop])
        stored += len(blob)
        rows.append(
            (
                skey,
                first_seq + start,
                first_seq + stop - 1,
                codec,
                codes[start:stop],
                pack_sizes(sizes[start:stop]),
                blob,
            )
        )
    return rows, stored


def slice_block(first_seq: int, sizes: bytes, bodies: bytes, lo: int, hi: int) -> list[bytes]:
    """Return the envelopes of sequences ``lo``..``hi`` (clipped to the block) from a stored
    block; raises ``ValueError`` if ``sizes`` does not describe ``bodies``."""
    count = len(sizes) // 4
    lengths = struct.unpack(f"<{count}I", sizes)
    ends = list(accumulate(lengths))
    if len(sizes) % 4 or (ends[-1] if ends else 0) != len(bodies):
        raise ValueError("a journal block is inconsistent")
    start = max(lo, first_seq) - first_seq
    stop = min(hi, first_seq + count - 1) - first_seq + 1
    out: list[bytes] = []
    view = memoryview(bodies)
    for i in range(start, stop):
        begin = ends[i - 1] if i else 0
        out.append(bytes(view[begin : ends[i]]))
    return out
