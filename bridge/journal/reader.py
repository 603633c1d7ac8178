"""Reads from the journal, on a connection of their own (run in worker threads).

SQLite in WAL mode lets these run while the writer thread commits: a read sees the last
commit made before it started.  One lock serialises the reads of this process.

The reader is made when the journal is opened, before ``serve``'s first reply, and reads
only after it: what only reads need (:mod:`~agent_bridge.journal.forks`,
:mod:`~agent_bridge.journal.raw`) is imported at the first read.
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Any

from agent_bridge.journal.base import SESSION_COLUMNS, SessionRecord, session_from_row
from agent_bridge.journal.blocks import decode_bodies, slice_block
from agent_bridge.journal.queries import (
    OpenTurn,
    fork_of,
    interaction_state,
    open_turns,
    sessions_filter,
)
from agent_bridge.journal.rows import last_sequence
from agent_bridge.wire.methods import RawRecord

__all__ = ["Reader", "session_record"]


def session_record(conn: sqlite3.Connection, row: Any) -> SessionRecord:
    """Return the :class:`SessionRecord` of a row of :data:`SESSION_COLUMNS`."""
    return session_from_row(row, last_sequence(conn, int(row[0])))


class Reader:
    """Queries for ``events/read``, ``session/list``, receipts and stored sessions."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.lock = threading.Lock()

    def close(self) -> None:
        """Close the connection."""
        with self.lock:
            self.conn.close()

    def events(self, session_id: str, lo: int, hi: int) -> list[bytes]:
        """Return the stored envelopes of sequences ``lo``..``hi`` of a session (of a
        fork: its parent's up to the fork point, as the fork's, then its own)."""
        with self.lock:
            return self._events(session_id, lo, hi)

    def _fork_of(self, session_id: str) -> tuple[int, str | None, int] | None:
        return fork_of(self.conn, session_id, "?")

    def _events(self, session_id: str, lo: int, hi: int) -> list[bytes]:
        from agent_bridge.journal.forks import read_through_forks, rehead

        return read_through_forks(
            session_id, lo, hi, fork_of=self._fork_of, own=self._own_events, adopt=rehead
        )

    def _own_events(self, skey: int, lo: int, hi: int) -> list[bytes]:
        rows = self.conn.execute(
            "SELECT first_seq, codec, sizes, bodies FROM event_blocks "
            "WHERE skey = ?1 AND first_seq <= ?3 AND first_seq >= ("
            "  SELECT COALESCE(MAX(first_seq), 0) FROM event_blocks"
            "  WHERE skey = ?1 AND first_seq <= ?2"
            ") ORDER BY first_seq",
            (skey, lo, hi),
        ).fetchall()
        out: list[bytes] = []
        for first, codec, sizes, bodies in rows:
            out += slice_block(int(first), sizes, decode_bodies(int(codec), bodies), lo, hi)
        return out

    def raw(self, session_id: str, lo: int, hi: int) -> list[RawRecord]:
        """Return the raw records events ``lo``..``hi`` were projected from (of a fork:
        its parent's up to the fork point, then its own)."""
        with self.lock:
            return self._raw(session_id, lo, hi)

    def interaction_state(self, interaction_id: str) -> tuple[str, str] | None:
        """See :func:`~agent_bridge.journal.queries.interaction_state`."""
        with self.lock:
            return interaction_state(self.conn, interaction_id, "?")

    def open_turns(self, session_id: str) -> list[OpenTurn]:
        """The session's runs left open (:func:`~agent_bridge.journal.queries.open_turns`)."""
        with self.lock:
            return open_turns(self.conn, session_id, "?")

    def has_forks(self, session_id: str) -> bool:
        """Whether a fork reads from this session."""
        with self.lock:
            row = self.conn.execute(
                "SELECT 1 FROM sessions WHERE parent_id = ? LIMIT 1", (session_id,)
            ).fetchone()
        return row is not None

    def position(self, session_id: str, sequence: int) -> tuple[int, bytes] | None:
        """``(sequence, position)`` of the latest run end or checkpoint of the session's
        history (through a fork's parents) at or before ``sequence``, or ``None``."""
        from agent_bridge.journal.forks import position_through_forks

        with self.lock:
            return position_through_forks(
                session_id, sequence, fork_of=self._fork_of, latest=self._own_position
            )

    def _own_position(self, skey: int, sequence: int) -> tuple[int, bytes] | None:
        row = self.conn.execute(
            "SELECT seq, position FROM ("
            "SELECT ended_seq AS seq, position FROM runs WHERE skey = ? "
            "AND ended_seq <= ? AND position IS NOT NULL "
            "UNION ALL SELECT seq, position FROM fork_points WHERE skey = ? "
            "AND seq <= ?) ORDER BY seq DESC LIMIT 1",
            (skey, sequence, skey, sequence),
        ).fetchone()
        return None if row is None else (int(row[0]), bytes(row[1]))

    def _raw(self, session_id: str, lo: int, hi: int) -> list[RawRecord]:
        from agent_bridge.journal.forks import read_through_forks

        return read_through_forks(session_id, lo, hi, fork_of=self._fork_of, own=self._own_raw)

    def _own_raw(self, skey: int, lo: int, hi: int) -> list[RawRecord]:
        conn = self.conn
        links = [
            (int(a), int(b), int(r))
            for a, b, r in conn.execute(
                "SELECT first_seq, last_seq, raw_id FROM raw_links "
                "WHERE skey = ?1 AND first_seq <= ?3 AND first_seq >= ("
                "  SELECT COALESCE(MAX(first_seq), 0) FROM raw_links"
                "  WHERE skey = ?1 AND first_seq <= ?2"
                ") ORDER BY first_seq",
                (skey, lo, hi),
            )
        ]
        wanted = sorted({r for _, _, r in links})
        records: dict[int, bytes] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT raw_id, record FROM raw_records WHERE skey = ? AND raw_id IN ({marks})"  # noqa: S608
            for raw_id, record in conn.execute(query, (skey, *chunk)):
                records[int(raw_id)] = bytes(record)
        from agent_bridge.journal.raw import raw_records

        return raw_records(links, records, lo, hi)

    def session(self, session_id: str) -> SessionRecord | None:
        """Return a stored session, or ``None``."""
        with self.lock:
            row = self.conn.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions WHERE session_id = ?",  # noqa: S608
                (session_id,),
            ).fetchone()
            return None if row is None else session_record(self.conn, row)

    def sessions(
        self, provider: str | None, workspace: str | None, cursor: int | None, limit: int
    ) -> tuple[list[SessionRecord], int | None]:
        """Return up to ``limit`` sessions newest first (below key ``cursor``), and the key
        to continue from when more follow."""
        clause, args = sessions_filter(provider, workspace, cursor, "?")
        with self.lock:
            rows = self.conn.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions{clause} "  # noqa: S608
                "ORDER BY skey DESC LIMIT ?",
                (*args, limit + 1),
            ).fetchall()
            records = [session_record(self.conn, row) for row in rows[:limit]]
        more = int(rows[limit - 1][0]) if len(rows) > limit else None
        return records, more

    def blob(self, sha256: str) -> bytes | None:
        """The stored image with this SHA-256, or ``None``."""
        with self.lock:
            row = self.conn.execute("SELECT data FROM blobs WHERE sha256 = ?", (sha256,)).fetchone()
        return None if row is None else bytes(row[0])

    def receipt(self, command_id: str) -> tuple[bytes, bytes] | None:
        """Return ``(payload, result)`` of the first use of ``command_id``."""
        with self.lock:
            row = self.conn.execute(
                "SELECT payload, result FROM receipts WHERE command_id = ?", (command_id,)
            ).fetchone()
        return None if row is None else (bytes(row[0]), bytes(row[1]))
