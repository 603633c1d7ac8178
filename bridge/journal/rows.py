"""Row-level writes shared by the writer thread, crash recovery and retention.

Every function here runs inside a transaction its caller opened on ``conn`` and touches
only the rows it names; none of them commits.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from agent_bridge.journal import queries
from agent_bridge.journal.blocks import block_rows

__all__ = [
    "add_blob",
    "delete_session_rows",
    "insert_events",
    "last_sequence",
    "session_key",
]


def session_key(conn: sqlite3.Connection, session_id: str) -> int | None:
    """Return the journal's key of ``session_id``, or ``None`` if it has no row."""
    row = conn.execute("SELECT skey FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
    return None if row is None else int(row[0])


def last_sequence(conn: sqlite3.Connection, skey: int) -> int:
    """Return the sequence of the session's newest stored event (when it has none: 0, or
    for a fork the sequence it was forked at, which its own events follow)."""
    row = conn.execute(
        "SELECT last_seq FROM event_blocks WHERE skey = ? ORDER BY first_seq DESC LIMIT 1",
        (skey,),
    ).fetchone()
    if row is not None:
        return int(row[0])
    row = conn.execute("SELECT fork_seq FROM sessions WHERE skey = ?", (skey,)).fetchone()
    return 0 if row is None else int(row[0] or 0)


def insert_events(
    conn: sqlite3.Connection, skey: int, first_seq: int, codes: bytes, bodies: Sequence[bytes]
) -> int:
    """Insert the session's consecutive events ``first_seq``… (their type codes and
    envelopes) as blocks; return the bytes stored (compressed)."""
    rows, stored = block_rows(skey, first_seq, codes, bodies)
    conn.executemany(
        "INSERT INTO event_blocks (skey, first_seq, last_seq, codec, types, sizes, bodies) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    return stored


def add_blob(conn: sqlite3.Connection, skey: int, sha256: str, data: bytes) -> int:
    """Store ``data`` once under ``sha256`` and reference it from the session; return the
    bytes the session is charged (the blob's size the first time it references it)."""
    conn.execute(
        "INSERT OR IGNORE INTO blobs (sha256, size, data) VALUES (?, ?, ?)",
        (sha256, len(data), data),
    )
    cursor = conn.execute(
        "INSERT OR IGNORE INTO blob_refs (skey, sha256) VALUES (?, ?)", (skey, sha256)
    )
    return len(data) if cursor.rowcount == 1 else 0


def delete_session_rows(conn: sqlite3.Connection, skey: int) -> None:
    """Delete everything the journal holds about one session (and the blobs no other
    session references): :func:`~agent_bridge.journal.queries.delete_session_rows`."""
    queries.delete_session_rows(conn, skey, "?")
