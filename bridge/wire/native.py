"""The wire types of a provider's own sessions: ``provider/sessions/list``,
``provider/sessions/read`` and ``provider/sessions/continue``.

A provider keeps sessions of its own (Claude Code's session files, say), created in its
CLI or app as well as through the bridge.  These methods let a host discover them and
read one's history as the provider stored it.  What a provider can do here is declared in
its descriptor (``capabilities.nativeSessions``); the bridge scans only when asked.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from agent_bridge.wire.common import PageLimit, WireStruct
from agent_bridge.wire.events import EventPayload
from agent_bridge.wire.methods import SessionInfo

__all__ = [
    "NativeRecord",
    "NativeSessionInfo",
    "NativeSessionsContinueParams",
    "NativeSessionsContinueResult",
    "NativeSessionsListParams",
    "NativeSessionsListResult",
    "NativeSessionsReadParams",
    "NativeSessionsReadResult",
]

#: The most entries or records one page may hold (a larger ``limit`` is lowered to it).
MAX_PAGE: int = 1000
#: The most records continuing a provider session imports unless told otherwise.
DEFAULT_IMPORT_LIMIT: int = 10_000
#: The largest ``importLimit`` (a larger one is lowered to it).
MAX_IMPORT_LIMIT: int = 1_000_000


class NativeSessionsListParams(WireStruct, frozen=True):
    """List a provider's own sessions, newest first (by last update): ``workspace`` keeps
    only those whose working directory is this one; ``cursor`` is a previous page's
    ``nextCursor``; ``limit`` is the page size (1..1000)."""

    provider: str
    workspace: str | None = None
    cursor: str | None = None
    limit: PageLimit = 100


class NativeSessionInfo(WireStruct, frozen=True):
    """One of a provider's own sessions.

    ``session_ref`` is the provider's reference, opaque to hosts (give it back to
    ``provider/sessions/read``); ``title`` the provider's title for it, else its first
    prompt (cut to 200 characters); ``workspace`` its working directory when known;
    ``created_at``/``updated_at`` RFC 3339 times when known; ``size_bytes`` where the
    provider keeps a file; ``bridge_session_id`` the bridge session it is bound to (by
    ``provider/sessions/continue``) when this bridge's history holds one."""

    session_ref: str
    title: str | None = None
    workspace: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    size_bytes: int | None = None
    bridge_session_id: str | None = None


class NativeSessionsListResult(WireStruct, frozen=True):
    """A page of sessions; ``next_cursor`` is absent on the last page."""

    sessions: tuple[NativeSessionInfo, ...]
    next_cursor: str | None = None


class NativeSessionsReadParams(WireStruct, frozen=True):
    """Read a page of a provider session's history, ``limit`` complete records (1..1000).

    Without ``cursor`` the page starts at ``from``: ``start`` (the oldest records) or
    ``end`` (the newest).  A cursor (a previous page's ``nextCursor`` or
    ``previousCursor``) is opaque and stays valid while the provider appends."""

    provider: str
    session_ref: str
    cursor: str | None = None
    limit: PageLimit = 100
    from_: Literal["start", "end"] = msgspec.field(default="start", name="from")


class NativeRecord(WireStruct, frozen=True):
    """One record of the provider's history, as stored.

    ``ref`` identifies the record within the session (stable while the provider
    appends).  ``raw`` is the record exactly as stored (for a JSONL file: the line
    without its newline); ``raw_base64`` replaces it when the stored bytes are not
    UTF-8.  ``events`` are the bridge event payloads projected from it (each refers to
    this record by being in it); a record that projects to nothing has none, one that
    could not be understood carries a ``diagnostic`` payload and is still delivered raw."""

    ref: str
    raw: str | None = None
    raw_base64: str | None = None
    events: tuple[EventPayload, ...] = ()


class NativeSessionsReadResult(WireStruct, frozen=True):
    """A page of records, oldest first.

    ``next_cursor`` reads on after the last record (also after records the provider
    appends later: an empty page with the same cursor means nothing new yet);
    ``previous_cursor`` reads the records before the first, absent at the start.
    ``coverage`` is ``exact`` (every stored record, as stored) or ``settled``
    (transient live deltas omitted)."""

    records: tuple[NativeRecord, ...]
    coverage: Literal["exact", "settled"]
    next_cursor: str
    previous_cursor: str | None = None


class NativeSessionsContinueParams(WireStruct, frozen=True):
    """Continue a provider's own session in the bridge.

    ``session_ref`` is a ``provider/sessions/list`` entry's reference.  ``workspace``
    defaults to the session's own working directory (a different one is refused where
    the provider keeps its sessions per directory); ``options`` and ``title`` as for
    ``session/create``.  ``import_limit`` bounds the import: at most this many of the
    newest records (1..1,000,000; default :data:`DEFAULT_IMPORT_LIMIT`)."""

    provider: str
    session_ref: str
    workspace: str | None = None
    options: dict[str, Any] = {}
    title: str | None = None
    import_limit: int | None = None


class NativeSessionsContinueResult(WireStruct, frozen=True):
    """The one bridge session bound to the provider session.

    ``bound`` is ``created`` when this call bound it: its earlier records were imported
    (``imported`` of them, followed by a ``session.imported`` event, which says whether
    what was imported was cut at ``importLimit``) and its next run
    continues the provider's conversation.  ``existing`` when it was bound before (by
    this host, another one, or another bridge on the same history): that session is
    returned (reopened if it was closed), nothing is imported again."""

    session: SessionInfo
    bound: Literal["created", "existing"]
    imported: int = 0
