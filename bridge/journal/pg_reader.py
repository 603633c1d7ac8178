"""Reads from the PostgreSQL journal, on a connection of their own (run in worker threads).

The queries of :class:`~agent_bridge.journal.reader.Reader`, in PostgreSQL's dialect.  A
read that fails because the connection broke drops it; the next read connects again
(so a database restart costs the reads made while it was down, nothing more).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from agent_bridge.journal.base import SESSION_COLUMNS, SessionRecord, session_from_row
from agent_bridge.journal.blocks import decode_bodies, slice_block
from agent_bridge.journal.forks import position_through_forks, read_through_forks, rehead
from agent_bridge.journal.pg_schema import connect_pg
from agent_bridge.journal.queries import (
    OpenTurn,
    fork_of,
    interaction_state,
    open_turns,
    sessions_filter,
)
from agent_bridge.journal.raw import raw_records
from agent_bridge.wire.methods import RawRecord

if TYPE_CHECKING:
    import psycopg

__all__ = ["PgReader", "pg_session_record"]

T = TypeVar("T")

_SESSION_COLUMNS = (
    SESSION_COLUMNS  # noqa: S608 - fixed text
    + ", (SELECT b.last_seq "
    "FROM event_blocks b WHERE b.skey = sessions.skey ORDER BY b.first_seq DESC LIMIT 1), "
    "(SELECT o.node FROM owners o WHERE o.token = sessions.owner AND o.expires_at > now()), "
    "(SELECT count(*) FROM interactions i WHERE i.skey = sessions.skey AND i.status = 'pending'), "
    "(SELECT COALESCE(SUM(a.hosts), 0) FROM attachments a JOIN owners o ON o.token = a.token "
    "WHERE a.session_id = sessions.session_id AND o.expires_at > now())"
)


def pg_session_record(row: Any) -> SessionRecord:
    """Return the :class:`SessionRecord` of a row of ``_SESSION_COLUMNS`` (its last
    sequence, node, pending interactions and attached hosts come in the same row: one
    query for a whole page of sessions)."""
    last, node, pending, hosts = row[14:]
    return session_from_row(row, last, node=node, pending=int(pending or 0), hosts=int(hosts or 0))


def _own_events(conn: psycopg.Connection[Any], skey: int, lo: int, hi: int) -> list[bytes]:
    """The envelopes ``lo``..``hi`` a session stored itself (not through a fork)."""
    rows = conn.execute(
        "SELECT first_seq, codec, sizes, bodies FROM event_blocks "
        "WHERE skey = %(k)s AND first_seq <= %(hi)s AND first_seq >= ("
        "  SELECT COALESCE(MAX(first_seq), 0) FROM event_blocks"
        "  WHERE skey = %(k)s AND first_seq <= %(lo)s"
        ") ORDER BY first_seq",
        {"k": skey, "lo": lo, "hi": hi},
    ).fetchall()
    out: list[bytes] = []
    for first, codec, sizes, bodies in rows:
        out += slice_block(
            int(first), bytes(sizes), decode_bodies(int(codec), bytes(bodies)), lo, hi
        )
    return out


def _own_raw(conn: psycopg.Connection[Any], skey: int, lo: int, hi: int) -> list[RawRecord]:
    """The raw records a session stored itself that events ``lo``..``hi`` came from."""
    links = [
        (int(a), int(b), int(r))
        for a, b, r in conn.execute(
            "SELECT first_seq, last_seq, raw_id FROM raw_links "
            "WHERE skey = %(k)s AND first_seq <= %(hi)s AND first_seq >= ("
            "  SELECT COALESCE(MAX(first_seq), 0) FROM raw_links"
            "  WHERE skey = %(k)s AND first_seq <= %(lo)s"
            ") ORDER BY first_seq",
            {"k": skey, "lo": lo, "hi": hi},
        ).fetchall()
    ]
    wanted = sorted({r for _, _, r in links})
    records = {
        int(raw_id): bytes(record)
        for raw_id, record in conn.execute(
            "SELECT raw_id, record FROM raw_records WHERE skey = %s AND raw_id = ANY(%s)",
            (skey, wanted),
        ).fetchall()
    }
    return raw_records(links, records, lo, hi)


def _own_position(
    conn: psycopg.Connection[Any], skey: int, sequence: int
) -> tuple[int, bytes] | None:
    """The latest ``(sequence, position)`` of a session's own runs and fork points at or
    before ``sequence``, or ``None``."""
    row = conn.execute(
        "SELECT seq, position FROM ("
        "SELECT ended_seq AS seq, position FROM runs WHERE skey = %s "
        "AND ended_seq <= %s AND position IS NOT NULL "
        "UNION ALL SELECT seq, position FROM fork_points WHERE skey = %s "
        "AND seq <= %s) AS points ORDER BY seq DESC LIMIT 1",
        (skey, sequence, skey, sequence),
    ).fetchone()
    return None if row is None else (int(row[0]), bytes(row[1]))


class PgReader:
    """Queries for ``events/read``, ``session/list``, receipts and stored sessions."""

    def __init__(self, url: str, conn: psycopg.Connection[Any]) -> None:
        self._url = url
        self._conn: psycopg.Connection[Any] | None = conn
        self.lock = threading.Lock()

    def close(self) -> None:
        """Close the connection."""
        with self.lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _run(self, read: Callable[[psycopg.Connection[Any]], T]) -> T:
        """Run ``read`` on the connection; a connection found broken (the server restarted
        since it was last used) is replaced and the read made once more."""
        with self.lock:
            for attempt in (1, 2):
                if self._conn is None or self._conn.closed:
                    self._conn = connect_pg(self._url)
                conn = self._conn
                try:
                    return read(conn)
                except BaseException:
                    if not (conn.broken or conn.closed):
                        raise
                    self._conn = None
                    if attempt == 2:
                        raise
            raise AssertionError("unreachable")  # pragma: no cover

    def events(self, session_id: str, lo: int, hi: int) -> list[bytes]:
        """Return the stored envelopes of sequences ``lo``..``hi`` of a session (of a
        fork: its parent's up to the fork point, as the fork's, then its own)."""
        return self._run(lambda conn: self._events(conn, session_id, lo, hi))

    def _events(
        self, conn: psycopg.Connection[Any], session_id: str, lo: int, hi: int
    ) -> list[bytes]:
        return read_through_forks(
            session_id,
            lo,
            hi,
            fork_of=functools.partial(fork_of, conn, marker="%s"),
            own=functools.partial(_own_events, conn),
            adopt=rehead,
        )

    def raw(self, session_id: str, lo: int, hi: int) -> list[RawRecord]:
        """Return the raw records events ``lo``..``hi`` were projected from (through a
        fork's parent)."""
        return self._run(lambda conn: self._raw(conn, session_id, lo, hi))

    def interaction_state(self, interaction_id: str) -> tuple[str, str] | None:
        """See :func:`~agent_bridge.journal.queries.interaction_state`."""
        return self._run(
            functools.partial(interaction_state, interaction_id=interaction_id, marker="%s")
        )

    def open_turns(self, session_id: str) -> list[OpenTurn]:
        """The session's runs left open (:func:`~agent_bridge.journal.queries.open_turns`)."""
        return self._run(functools.partial(open_turns, session_id=session_id, marker="%s"))

    def has_forks(self, session_id: str) -> bool:
        """Whether a fork reads from this session."""

        def read(conn: psycopg.Connection[Any]) -> bool:
            row = conn.execute(
                "SELECT 1 FROM sessions WHERE parent_id = %s LIMIT 1", (session_id,)
            ).fetchone()
            return row is not None

        return self._run(read)

    def position(self, session_id: str, sequence: int) -> tuple[int, bytes] | None:
        """``(sequence, position)`` of the latest run end or checkpoint of the session's
        history (through a fork's parents) at or before ``sequence``, or ``None``."""

        return self._run(
            lambda conn: position_through_forks(
                session_id,
                sequence,
                fork_of=functools.partial(fork_of, conn, marker="%s"),
                latest=functools.partial(_own_position, conn),
            )
        )

    def _raw(
        self, conn: psycopg.Connection[Any], session_id: str, lo: int, hi: int
    ) -> list[RawRecord]:
        return read_through_forks(
            session_id,
            lo,
            hi,
            fork_of=functools.partial(fork_of, conn, marker="%s"),
            own=functools.partial(_own_raw, conn),
        )

    def session(self, session_id: str) -> SessionRecord | None:
        """Return a stored session, or ``None``."""

        def read(conn: psycopg.Connection[Any]) -> SessionRecord | None:
            row = conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE session_id = %s",  # noqa: S608
                (session_id,),
            ).fetchone()
            return None if row is None else pg_session_record(row)

        return self._run(read)

    def sessions(
        self, provider: str | None, workspace: str | None, cursor: int | None, limit: int
    ) -> tuple[list[SessionRecord], int | None]:
        """Return up to ``limit`` sessions newest first (below key ``cursor``), and the key
        to continue from when more follow."""
        clause, args = sessions_filter(provider, workspace, cursor, "%s")

        def read(conn: psycopg.Connection[Any]) -> tuple[list[SessionRecord], int | None]:
            rows = conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions{clause} "  # noqa: S608
                "ORDER BY skey DESC LIMIT %s",
                (*args, limit + 1),
            ).fetchall()
            records = [pg_session_record(row) for row in rows[:limit]]
            more = int(rows[limit - 1][0]) if len(rows) > limit else None
            return records, more

        return self._run(read)

    def pending(self, session_id: str) -> list[tuple[str, str, bytes]]:
        """``(interaction id, run id, request)`` of the session's pending interactions."""

        def read(conn: psycopg.Connection[Any]) -> list[tuple[str, str, bytes]]:
            rows = conn.execute(
                "SELECT i.interaction_id, i.run_id, i.request FROM interactions i "
                "JOIN sessions s ON s.skey = i.skey WHERE s.session_id = %s "
                "AND i.status = 'pending' ORDER BY i.interaction_id",
                (session_id,),
            ).fetchall()
            return [(str(i), str(r), bytes(q)) for i, r, q in rows]

        return self._run(read)

    def blob(self, sha256: str) -> bytes | None:
        """The stored image with this SHA-256, or ``None``."""

        def read(conn: psycopg.Connection[Any]) -> bytes | None:
            row = conn.execute("SELECT data FROM blobs WHERE sha256 = %s", (sha256,)).fetchone()
            return None if row is None else bytes(row[0])

        return self._run(read)

    def receipt(self, command_id: str) -> tuple[bytes, bytes] | None:
        """Return ``(payload, result)`` of the first use of ``command_id``."""

        def read(conn: psycopg.Connection[Any]) -> tuple[bytes, bytes] | None:
            row = conn.execute(
                "SELECT payload, result FROM receipts WHERE command_id = %s", (command_id,)
            ).fetchone()
            return None if row is None else (bytes(row[0]), bytes(row[1]))

        return self._run(read)
