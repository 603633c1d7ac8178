"""Importing a provider's own session into a bridge session (``provider/sessions/continue``).

A provider session continued in the bridge keeps its earlier turns: every record of its
history is read, page by page (bounded memory whatever its length), through the
provider's reader, and each event projected from a record is published into the bridge
session with that record, exactly as stored, as its raw record.  A ``session.imported``
event then says which sequences were imported and where reading the provider's history
goes on, so a host tells the imported events (from the provider's store) from live ones.

The binding rule (one bridge session per provider session) is the runtime's
(:meth:`~agent_bridge.runtime.runtime.Runtime.continue_native`); this module only copies.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Final

from agent_bridge.runtime.stream import EventStream
from agent_bridge.spi import AgentProvider
from agent_bridge.wire.events import SessionImported
from agent_bridge.wire.native import MAX_PAGE

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
    """What an import did: ``records`` read, ``events`` published."""

    records: int
    events: int


async def import_history(
    provider: AgentProvider, session_ref: str, stream: EventStream
) -> Imported:
    """Publish the events of every record of ``session_ref`` into ``stream`` (session-wide,
    each with its record as raw), then a ``session.imported`` event; return the counts.

    Reads from the start until a page comes back empty (records the provider appends
    meanwhile are imported too).  A provider that cannot read its history (descriptor
    ``nativeSessions.read`` ``unsupported``: an ACP agent) imports nothing: the
    ``session.imported`` event says 0 records, the provider still holds the whole
    conversation.  Raises what :meth:`AgentProvider.read_native_session`
    raises (``history_unavailable``, ``session_not_found``)."""
    first = stream.last_sequence + 1
    records = 0
    cursor: str | None = None
    readable = provider.describe().capabilities.native_sessions.read != "unsupported"
    while readable:
        page = await provider.read_native_session(session_ref, cursor, PAGE, "start")
        for record in page.records:
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
        records += len(page.records)
        cursor = page.next_cursor
        if not page.records:
            break
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
        ),
    )
    return Imported(records, events)
