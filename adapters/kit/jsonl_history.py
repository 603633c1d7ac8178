"""Pages of a provider's JSON Lines history file, read strictly read-only.

Several CLIs keep a session as a file they only append to, one JSON record a line
(Codex's rollout files, Gemini CLI's chat files).  This module reads such a file in pages
for ``provider/sessions/read``, the adapter giving the projection of one record into the
bridge's event payloads:

* a record's reference and the cursors are byte offsets of record starts (``f<offset>``
  reads forward from one, ``b<offset>`` the page that ends there); the CLI only appends,
  so they stay valid while it writes;
* a page never holds part of a record: a last line without its newline (the CLI is
  writing it) is left for a later page;
* memory is bounded whatever the file's size: the file is read in blocks, the newest
  page is found by scanning backward, one record larger than :data:`MAX_RECORD_BYTES`
  comes as a ``record_too_large`` diagnostic instead of its bytes, and a page stops past
  :data:`PAGE_BYTES`.

Files are opened ``O_RDONLY`` and never written.  Functions here block (callers run them
in a worker thread).
"""

from __future__ import annotations

import base64
import datetime
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final, Literal

from agent_bridge.adapters.kit.bounds import depth_within
from agent_bridge.errors import BridgeError
from agent_bridge.wire.events import Diagnostic, EventPayload
from agent_bridge.wire.native import NativeRecord, NativeSessionsReadResult

__all__ = [
    "MAX_RECORD_BYTES",
    "MAX_RECORD_DEPTH",
    "PAGE_BYTES",
    "Projector",
    "ReadPage",
    "diagnostic",
    "file_reader",
    "head_records",
    "project_json",
    "read_page",
    "rfc3339",
    "unavailable",
]

BLOCK: Final = 64 * 1024
#: The largest record delivered with its bytes; a larger one comes as a diagnostic.
MAX_RECORD_BYTES: Final = 16 * 1024 * 1024
#: How deep objects and arrays may nest in a record that is projected: msgspec encodes
#: and decodes about 1,000 levels, and a page's reply wraps a record's events in a few
#: more (a deeper one is a ``record_too_large`` diagnostic).
MAX_RECORD_DEPTH: Final = 512
#: A page stops after the record that reaches this many bytes (at least one record).
PAGE_BYTES: Final = 8 * 1024 * 1024

_CURSOR_RE: Final = re.compile(r"([fb])([0-9]{1,19})")

#: The projection of one record's bytes into event payloads (never raises: a record it
#: cannot project becomes a diagnostic payload).
Projector = Callable[[bytes], tuple[EventPayload, ...]]


#: An adapter's reader of ``provider/sessions/read``: ``(session reference, cursor, limit,
#: start)`` to a page (see :func:`file_reader`).
ReadPage = Callable[[str, str | None, int, Literal["start", "end"]], NativeSessionsReadResult]


def unavailable(exc: OSError) -> BridgeError:
    """The retryable ``history_unavailable`` for a store that cannot be read now (the
    error's class name only: never a path)."""
    return BridgeError("history_unavailable", details={"cause": type(exc).__name__[:40]})


def diagnostic(
    code: str, message: str, level: Literal["info", "warning"] = "warning"
) -> Diagnostic:
    """A diagnostic payload about a stored record."""
    return Diagnostic(level=level, code=code, message=message)


def project_json(
    data: bytes,
    file: str,
    project: Callable[[dict[str, Any]], tuple[EventPayload, ...] | None],
    *,
    typed: bool = False,
) -> tuple[EventPayload, ...]:
    """The event payloads of one stored record: ``project(record)`` of the JSON object
    ``data`` is, where ``None`` means a record of a kind the adapter does not know
    (an ``unknown_record`` diagnostic).  A record that is not JSON, not an object (or,
    with ``typed``, has no string ``type``) is a ``malformed_record`` diagnostic, one
    ``project`` raises on a ``projection_failed`` diagnostic; ``file`` names the kind of
    file in their messages ("the rollout file").  Never raises."""
    import msgspec

    try:
        record = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError):  # RecursionError: nested too deep
        return (diagnostic("malformed_record", f"a record of the {file} is not valid JSON"),)
    if typed and not (isinstance(record, dict) and isinstance(record.get("type"), str)):
        return (diagnostic("malformed_record", f"a record of the {file} has no type"),)
    if not isinstance(record, dict):
        return (diagnostic("malformed_record", f"a record of the {file} is not an object"),)
    if not depth_within(record, MAX_RECORD_DEPTH):
        # its events, inside a page inside a reply, would nest too deep to encode
        return (diagnostic("record_too_large", "a stored record is too large to deliver"),)
    try:
        projected = project(record)
    except Exception:
        return (diagnostic("projection_failed", f"a record of the {file} could not be projected"),)
    if projected is None:
        return (
            diagnostic("unknown_record", "a record of a type the adapter does not know", "info"),
        )
    return projected


def rfc3339(ns: int) -> str:
    """``ns`` (nanoseconds since the epoch) as an RFC 3339 UTC time, in milliseconds."""
    moment = datetime.datetime.fromtimestamp(ns / 1e9, tz=datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def head_records(path: str, max_bytes: int) -> Iterator[dict[str, Any]]:
    """The JSON object records among the complete lines of the first ``max_bytes`` of
    ``path`` (nothing when it cannot be opened; lines that are not JSON objects are
    skipped)."""
    import msgspec

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return
    try:
        data = os.read(fd, max_bytes)
    except OSError:
        return
    finally:
        os.close(fd)
    for line in data.split(b"\n")[:-1]:
        try:
            record = msgspec.json.decode(line)
        except (msgspec.DecodeError, RecursionError):  # RecursionError: nested too deep
            continue
        if isinstance(record, dict):
            yield record


@dataclass(frozen=True, slots=True)
class _Line:
    offset: int
    data: bytes | None  # None: longer than MAX_RECORD_BYTES
    length: int


def _lines(fd: int, start: int, end: int | None) -> Iterator[_Line]:
    """The complete lines from ``start`` (a record start) up to ``end`` (or the end of
    the file), each with its offset; a last line without its newline is not yielded."""
    offset = start
    pos = start
    buffer = bytearray()
    skipping = False  # the current line passed MAX_RECORD_BYTES: its bytes are dropped
    skipped = 0
    while end is None or pos < end:
        size = BLOCK if end is None else min(BLOCK, end - pos)
        block = os.pread(fd, size, pos)
        if not block:
            return
        pos += len(block)
        view = 0
        while True:
            newline = block.find(b"\n", view)
            if newline < 0:
                if skipping:
                    skipped += len(block) - view
                else:
                    buffer += block[view:]
                    if len(buffer) > MAX_RECORD_BYTES:
                        skipping, skipped = True, len(buffer)
                        buffer.clear()
                break
            if skipping:
                length = skipped + newline - view
                yield _Line(offset, None, length)
                skipping, skipped = False, 0
            else:
                buffer += block[view:newline]
                length = len(buffer)
                yield _Line(offset, bytes(buffer) if length <= MAX_RECORD_BYTES else None, length)
                buffer.clear()
            offset += length + 1
            view = newline + 1


def _starts_before(fd: int, end: int, count: int) -> int:
    """The start of the page of (up to) ``count`` records that ends at ``end`` (a record
    start), found by reading backward in blocks; the page is shortened (keeping at least
    one record) once it would span more than :data:`PAGE_BYTES`."""
    found = 0
    start = end
    pos = end - 1  # the newline ending the record before ``end`` starts nothing
    while pos > 0:
        size = min(BLOCK, pos)
        block = os.pread(fd, size, pos - size)
        index = size
        while (newline := block.rfind(b"\n", 0, index)) >= 0:
            candidate = pos - size + newline + 1
            found += 1
            if found > 1 and end - candidate > PAGE_BYTES:
                return start
            start = candidate
            if found == count:
                return start
            index = newline
        pos -= size
    if found >= 1 and end > PAGE_BYTES:
        return start
    return 0


def _complete_end(fd: int, size: int) -> int:
    """The end of the last complete record (after its newline)."""
    pos = size
    while pos > 0:
        step = min(BLOCK, pos)
        block = os.pread(fd, step, pos - step)
        newline = block.rfind(b"\n")
        if newline >= 0:
            return pos - step + newline + 1
        pos -= step
    return 0


def _take(lines: Iterator[_Line], limit: int) -> Iterator[_Line]:
    total = 0
    for count, line in enumerate(lines, 1):
        yield line
        total += line.length
        if count >= limit or total >= PAGE_BYTES:
            return


def read_page(
    path: str,
    cursor: str | None,
    limit: int,
    start: Literal["start", "end"],
    project: Projector,
) -> NativeSessionsReadResult:
    """A page of up to ``limit`` complete records of the file at ``path`` from
    ``cursor`` (or, without one, from its ``start`` or ``end``), each projected by
    ``project``; coverage ``exact``.  Raises ``session_not_found`` (no such file),
    ``invalid_params`` (a cursor this module did not make, or one that is not a record
    start of this file) and ``history_unavailable`` (the file cannot be read now)."""
    mode, offset = "f", 0
    if cursor is not None:
        match = _CURSOR_RE.fullmatch(cursor)
        if match is None:
            raise BridgeError("invalid_params", details={"field": "cursor"})
        mode, offset = match.group(1), int(match.group(2))
    elif start == "end":
        mode, offset = "b", -1
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise BridgeError("session_not_found") from None
    except OSError as exc:
        raise unavailable(exc) from None
    try:
        size = os.fstat(fd).st_size
        if offset > size or (offset > 0 and os.pread(fd, 1, offset - 1) != b"\n"):
            raise BridgeError("invalid_params", details={"field": "cursor"})
        if mode == "b":
            end = _complete_end(fd, size) if offset < 0 else offset
            first = _starts_before(fd, end, limit) if end > 0 else 0
            lines = list(_take(_lines(fd, first, end), limit))
        else:
            first = offset
            lines = list(_take(_lines(fd, first, None), limit))
    except OSError as exc:
        raise unavailable(exc) from None
    finally:
        os.close(fd)
    records = tuple(_record(line, project) for line in lines)
    after = lines[-1].offset + lines[-1].length + 1 if lines else first
    return NativeSessionsReadResult(
        records,
        coverage="exact",
        next_cursor=f"f{after}",
        previous_cursor=f"b{first}" if first > 0 else None,
    )


def file_reader(path_of: Callable[[str], str], project: Projector) -> ReadPage:
    """An adapter's ``read_page(session_ref, cursor, limit, start)``: the
    :func:`read_page` of the file ``path_of(session_ref)`` (which raises
    ``invalid_params`` for a reference the adapter did not make), each record projected
    by ``project``."""

    def read(
        session_ref: str, cursor: str | None, limit: int, start: Literal["start", "end"]
    ) -> NativeSessionsReadResult:
        return read_page(path_of(session_ref), cursor, limit, start, project)

    return read


def _record(line: _Line, project: Projector) -> NativeRecord:
    ref = f"o{line.offset}"
    if line.data is None:
        return NativeRecord(
            ref,
            events=(diagnostic("record_too_large", "a stored record is too large to deliver"),),
        )
    try:
        raw: str | None = line.data.decode("utf-8")
    except UnicodeDecodeError:
        raw = None
    events = project(line.data)
    if raw is None:
        return NativeRecord(
            ref, raw_base64=base64.b64encode(line.data).decode("ascii"), events=events
        )
    return NativeRecord(ref, raw=raw, events=events)
