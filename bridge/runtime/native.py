"""Importing a provider's own session into a bridge session (``provider/sessions/continue``).

A provider session continued in the bridge keeps its earlier turns: its newest records (at
most the continue's ``importLimit``) are read, page by page (bounded memory whatever its
length), through the provider's reader, and each event projected from a record is
published into the bridge session with that record, exactly as stored, as its raw
record.  A ``session.imported`` event then says which sequences were imported, whether
older records were left out, and where reading the provider's history goes on, so a host
tells the imported events (from the provider's store) from live ones.

The binding rule (one bridge session per provider session) is the runtime's
(:meth:`~agent_bridge.runtime.runtime.Runtime.continue_native`); this module only copies.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from agent_bridge.runtime.stream import EventStream
from agent_bridge.spi import AgentProvider
from agent_bridge.wire.events import EventPayload, SessionImported
from agent_bridge.wire.native import (
    DEFAULT_IMPORT_LIMIT,
    MAX_PAGE,
    NativeRecord,
    NativeSessionsReadResult,
)

__all__ = ["Imported", "import_history", "native_session_id"]

#: Records asked for per page while importing.
PAGE: Final = MAX_PAGE


def native_session_id(provider_id: str, session_ref: str) -> str:
    """The id the bridge session bound to ``session_ref`` gets: derived from the
    reference, so every door names it before it exists (an ACP client's ``session/list``
    entry is loaded by this id) and binding it twice cannot make two."""
    import hashlib

    digest = hashlib.sha256(f"{provider_id}\0{session_ref}".encode("utf-8", "surrogatepass"))
    return "ses_n" + digest.hexdigest()[:24]


@dataclass(frozen=True, slots=True)
class Imported:
    """What an import did: ``records`` imported, ``events`` published, ``truncated``
    whether older records were left out."""

    records: int
    events: int
    truncated: bool = False


async def _publish(stream: EventStream, records: tuple[NativeRecord, ...]) -> None:
    """Publish the events of ``records`` session-wide, each with its record as raw."""
    for record in records:
        if not record.events:
            continue
        raw: str | bytes | None = record.raw
        if raw is None and record.raw_base64 is not None:
            raw = base64.b64decode(record.raw_base64)
        wait = False
        for payload in record.events:
            wait = stream.publish(None, payload, raw) or wait
        if wait:
            await stream.drained()


async def _oldest_page(
    provider: AgentProvider, session_ref: str, limit: int
) -> tuple[NativeSessionsReadResult, int, bool]:
    """Walk back from the newest page, one page in memory at a time, to the oldest page
    that keeps the newest records within ``limit``; return it, the records of it and the
    newer pages (all to import), and whether older records remain."""
    size = min(PAGE, limit)
    page = await provider.read_native_session(session_ref, None, size, "end")
    count = len(page.records)
    while page.previous_cursor is not None:
        older = await provider.read_native_session(session_ref, page.previous_cursor, size, "end")
        if not older.records or count + len(older.records) > limit:
            return page, count, True
        page, count = older, count + len(older.records)
    return page, count, False


async def import_history(
    provider: AgentProvider,
    session_ref: str,
    stream: EventStream,
    limit: int = DEFAULT_IMPORT_LIMIT,
    replayed: tuple[Sequence[tuple[EventPayload, bytes]], bool] = ((), False),
) -> Imported:
    """Publish the events of the newest records of ``session_ref`` (at most ``limit``)
    into ``stream`` (session-wide, each with its record as raw), oldest first, then a
    ``session.imported`` event; return the counts.

    Bounded: it walks back from the newest page (one page in memory at a time) to where
    ``limit`` records are reached, cutting between pages (so when older records are left
    out it imports between ``limit`` - :data:`PAGE` + 1 and ``limit``), then reads forward
    until a page comes back empty (records the provider appends meanwhile are imported
    too).  A cut is marked: ``session.imported`` says ``truncated`` with the cursor that
    reads the older records.  A provider that cannot read its history (descriptor
    ``nativeSessions.read`` ``unsupported``: an ACP agent) imports what its session
    replayed as it opened (``replayed``: :meth:`ProviderSession.replayed_history`, each
    payload a record; the newest ``limit``), nothing when it replayed nothing; the
    provider holds the whole conversation either way.  Raises what
    :meth:`AgentProvider.read_native_session` raises (``history_unavailable``,
    ``session_not_found``)."""
    first = stream.last_sequence + 1
    records = 0
    cursor: str | None = None
    truncated = False
    previous: str | None = None
    if provider.describe().capabilities.native_sessions.read == "unsupported":
        pairs, truncated = replayed
        if len(pairs) > limit:
            pairs, truncated = pairs[len(pairs) - limit :], True
        wait = False
        for payload, raw in pairs:
            wait = stream.publish(None, payload, raw) or wait
            if wait:
                await stream.drained()
                wait = False
        records = len(pairs)
    else:
        page, _, truncated = await _oldest_page(provider, session_ref, max(1, limit))
        previous = page.previous_cursor if truncated else None
        while True:
            await _publish(stream, page.records)
            records += len(page.records)
            cursor = page.next_cursor
            if not page.records:
                break
            page = await provider.read_native_session(session_ref, cursor, PAGE, "start")
    last = stream.last_sequence
    events = last - first + 1
    stream.publish(
        None,
        SessionImported(
            provider=provider.id,
            session_ref=session_ref,
            records=records,
            from_sequence=first if events else 0,
            to_sequence=last if events else 0,
            next_cursor=cursor,
            truncated=truncated,
            previous_cursor=previous,
        ),
    )
    return Imported(records, events, truncated)
