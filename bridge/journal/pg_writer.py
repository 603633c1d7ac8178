"""The PostgreSQL journal's writer thread: the SQLite writer's group commit, on PostgreSQL.

The thread, its queue and its retry loop are the SQLite writer's
(:class:`~agent_bridge.journal.committer.GroupCommitter`, the same operations and
:class:`~agent_bridge.journal.committer.EventBatch` es): every operation queued so far
is applied in order in one transaction, and ``notify`` reports how many operations and
events are committed.  This module is the PostgreSQL storage under it.  Two
differences:

* **Fencing.**  Each transaction first takes a shared lock on this process's row in
  ``owners`` (``SELECT … FOR SHARE``).  A member that takes this process's sessions over
  deletes that row (after its lease expired) and so waits for a transaction in progress
  to end; once the row is gone no transaction of this process commits anything again:
  :class:`~agent_bridge.journal.pg_schema.LeaseLost` stops the writer (reported as
  ``internal``: this process writes nothing more).
* **Reconnecting.**  A commit that fails because the server went away (a restart, a cut
  network, ``57P01`` admin shutdown) is a storage fault like a full disk: the operations
  are kept, the fault reported once, and each retry first opens a new connection.
  Nothing committed is lost and nothing is committed twice: a transaction either
  committed (and was reported) or is retried whole.

A commit whose outcome is unknown (the connection broke during ``COMMIT``) is the one
case that needs care: retried, it would store its events twice.  Before a retry the
writer therefore compares the session's stored last sequence with what it is about to
write and skips what is already there (see :meth:`PgWriter._store_events`).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from agent_bridge.journal.blocks import block_rows
from agent_bridge.journal.committer import (
    EventBatch,
    GroupCommitter,
    Notify,
)
from agent_bridge.journal.errors import Fault, SequenceGap
from agent_bridge.journal.pg_schema import LeaseLost, classify_pg, connect_pg, one_line
from agent_bridge.journal.queries import PG_OPS, delete_session_rows
from agent_bridge.journal.retention import Retention
from agent_bridge.lazylog import lazy_logger

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "PgWriter",
    "notify_lines",
    "pg_delete_session_rows",
    "pg_insert_events",
    "pg_last_sequence",
]

log = lazy_logger("agent_bridge.journal")

#: ``NOTIFY`` channel: ``"<session id> <last sequence>"`` after each commit of events
CHANNEL: Final = "agent_bridge_events"
#: ``NOTIFY`` channel: the owner token a routed request was queued for
COMMANDS: Final = "agent_bridge_commands"
#: ``NOTIFY`` channel: the id of a routed request that was answered
REPLIES: Final = "agent_bridge_replies"


#: ``NOTIFY`` payloads must stay under 8000 bytes: lines are sent in chunks below this
NOTIFY_MAX: Final = 7900


def notify_lines(conn: psycopg.Connection[Any], channel: str, lines: list[str]) -> None:
    """``NOTIFY channel`` with ``lines``, as few notifications as fit PostgreSQL's
    payload limit (delivered when, and only if, the caller's transaction commits)."""
    chunk: list[str] = []
    size = 0
    for line in lines:
        if chunk and size + len(line) + 1 > NOTIFY_MAX:
            conn.execute("SELECT pg_notify(%s, %s)", (channel, "\n".join(chunk)))
            chunk, size = [], 0
        chunk.append(line)
        size += len(line) + 1
    if chunk:
        conn.execute("SELECT pg_notify(%s, %s)", (channel, "\n".join(chunk)))


def pg_last_sequence(conn: psycopg.Connection[Any], skey: int) -> int:
    """Return the sequence of the session's newest stored event (none: 0, or for a fork
    the sequence it was forked at)."""
    row = conn.execute(
        "SELECT last_seq FROM event_blocks WHERE skey = %s ORDER BY first_seq DESC LIMIT 1",
        (skey,),
    ).fetchone()
    if row is not None:
        return int(row[0])
    row = conn.execute("SELECT fork_seq FROM sessions WHERE skey = %s", (skey,)).fetchone()
    return 0 if row is None else int(row[0] or 0)


def pg_session_key(conn: psycopg.Connection[Any], session_id: str) -> int | None:
    """Return the journal's key of ``session_id``, or ``None``."""
    row = conn.execute("SELECT skey FROM sessions WHERE session_id = %s", (session_id,)).fetchone()
    return None if row is None else int(row[0])


def pg_insert_events(
    conn: psycopg.Connection[Any], skey: int, first_seq: int, codes: bytes, bodies: list[bytes]
) -> int:
    """Insert consecutive events ``first_seq``… as blocks; return the bytes stored."""
    rows, stored = block_rows(skey, first_seq, codes, bodies)
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO event_blocks (skey, first_seq, last_seq, codec, types, sizes, bodies) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s)",
            rows,
        )
    return stored


def pg_delete_session_rows(conn: psycopg.Connection[Any], skey: int) -> None:
    """Delete everything the journal holds about one session (and the blobs no other
    session references): :func:`~agent_bridge.journal.queries.delete_session_rows`."""
    delete_session_rows(conn, skey, "%s")


class PgWriter(GroupCommitter):
    """The thread that commits queued operations to PostgreSQL; see the module docstring.
    The interface is :class:`~agent_bridge.journal.writer.Writer`'s (``queue``,
    ``submitted``, ``start``, ``stop``, ``halt``, ``join``, ``close``).  Its operations'
    statements (:data:`~agent_bridge.journal.queries.PG_OPS`) are idempotent
    (``ON CONFLICT``)."""

    _sql = PG_OPS

    def __init__(
        self,
        url: str,
        conn: psycopg.Connection[Any],
        token: str,
        notify: Notify,
        retention: Retention,
        retain: Callable[[psycopg.Connection[Any]], list[str]],
    ) -> None:
        super().__init__(notify, retention)
        self._url = url
        self._conn: psycopg.Connection[Any] | None = conn
        self._token = token
        self._retainer = retain
        #: when the commit in progress began (``time.monotonic()``), ``None`` between
        self._since: float | None = None
        #: how long a commit may go unanswered before it is reported (``stall_after``)
        self._stall = 15.0
        self._watching = threading.Event()

    def start(self, loop: object = None) -> None:
        """Start the thread and its watch (:meth:`_watch`)."""
        super().start(loop)
        threading.Thread(target=self._watch, name="journal-watch", daemon=True).start()

    def stall_after(self, seconds: float) -> None:
        """Report a commit that has not returned after ``seconds`` (the lease)."""
        self._stall = seconds

    def _watch(self) -> None:
        """Report a commit the database does not answer (a synchronous standby gone, a
        server that hangs, a lock it waits for) as the ``io_error`` fault once it is
        ``_stall`` seconds old: no error comes back, and without this the hosts would
        be told nothing (``journal/status`` ``ok``, new work queued behind it instead of
        refused ``journal_failing``).  Its success reports the journal ``ok`` again."""
        reported: float | None = None
        while not self._watching.wait(min(1.0, self._stall / 3)):
            if not self._thread.is_alive():
                return
            since = self._since
            if since is None or since == reported:
                continue
            if time.monotonic() - since >= self._stall:
                reported = since
                log.error(
                    "journal: a commit has not returned for %.0f s (the database does "
                    "not answer); events and replies wait",
                    time.monotonic() - since,
                )
                self._notify(self._ops_done, self._events_done, "io_error")

    def close(self) -> None:
        """Close the connection once the thread has ended."""
        self._watching.set()
        if self._thread.is_alive() or self._conn is None:
            return
        self._conn.close()
        self._conn = None

    # ------------------------------------------------------------------ storage

    def _tx(self) -> psycopg.Connection[Any]:
        """The connection of the transaction in progress (:meth:`_commit` opened it)."""
        assert self._conn is not None
        return self._conn

    def _after_failure(self) -> None:
        """Close the connection that failed (a new one is opened for the next attempt)."""
        conn, self._conn = self._conn, None
        self._forget_all()
        if conn is not None:
            with contextlib.suppress(Exception):  # it is broken already
                conn.close()

    def _fault(self, exc: BaseException) -> Fault:
        return classify_pg(exc)

    def _log_internal(self, exc: BaseException) -> None:
        if isinstance(exc, LeaseLost):
            log.error(
                "journal: this bridge's lease was taken over by another member; "
                "it writes nothing more (restart it to rejoin)"
            )
        else:
            super()._log_internal(exc)

    def _describe(self, exc: BaseException) -> str:
        return one_line(exc)

    def _retain(self) -> list[str]:
        return [] if self._conn is None else self._retainer(self._conn)

    def _commit(self, ops: list[tuple[Any, ...]]) -> tuple[int, int]:
        """Apply ``ops`` in one transaction, behind the fence (this member's ``owners``
        row, ``FOR SHARE``); return ``(events, bytes)`` committed.  Raises what
        connecting, applying or committing raised (the transaction rolled back), or
        :class:`LeaseLost`."""
        self._since = time.monotonic()
        try:
            if self._conn is None:
                self._conn = connect_pg(self._url)
            conn = self._conn
            with conn.transaction():
                row = conn.execute(
                    "SELECT 1 FROM owners WHERE token = %s FOR SHARE", (self._token,)
                ).fetchone()
                if row is None:
                    raise LeaseLost(self._token)
                return self._apply(ops)
        except BaseException:
            self._forget_all()
            raise
        finally:
            self._since = None

    def _session_key(self, session_id: str) -> int | None:
        return pg_session_key(self._tx(), session_id)

    def _events_stored(self, ends: list[tuple[str, int]]) -> None:
        """Tell followers on every member (``NOTIFY``, delivered if this commits)."""
        if ends:
            notify_lines(self._tx(), CHANNEL, [f"{sid} {last}" for sid, last in ends])

    def _store_events(
        self, session_id: str, batches: list[EventBatch], replaying: bool = False
    ) -> tuple[int, int, int]:
        """Store a session's batches; return ``(bytes, events, last sequence)``.  Any
        commit may be the retry of one whose outcome was unknown: what is stored stays
        (``replaying`` changes nothing here)."""
        conn = self._tx()
        first = batches[0].first
        bodies = [body for batch in batches for body in batch.bodies]
        codes = b"".join(bytes(batch.codes) for batch in batches)
        count = len(bodies)
        skey = self._skey(session_id)
        if skey is None:
            log.error("journal: events for unknown session %s dropped", session_id)
            return 0, count, 0
        last = self._last.get(skey)
        if last is None:
            last = pg_last_sequence(conn, skey)
        skip = 0
        if first <= last:
            # a retry of a commit whose outcome was unknown: what is stored stays
            skip = min(last - first + 1, count)
            log.warning(
                "journal: session %s already holds %d..%d; not written again",
                session_id,
                first,
                first + skip - 1,
            )
        elif first != last + 1:
            raise SequenceGap(session_id, first, last)  # never stored: the commit fails
        start = first + skip
        stored = (
            pg_insert_events(conn, skey, start, codes[skip:], bodies[skip:]) if count > skip else 0
        )
        end = first + count - 1
        self._last[skey] = max(end, last)
        stored = self._store_raws(skey, batches, stored, since=start)
        return stored, count, end

    def _store_blob(self, op: tuple[Any, ...]) -> int:
        """Store a run input's image once; return the bytes its session is charged."""
        conn = self._tx()
        _, session_id, sha256, data = op
        skey = self._skey(session_id)
        if skey is None:
            log.warning("journal: image for unknown session %s dropped", session_id)
            return 0
        conn.execute(
            "INSERT INTO blobs (sha256, size, data) VALUES (%s, %s, %s) "
            "ON CONFLICT (sha256) DO NOTHING",
            (sha256, len(data), data),
        )
        cur = conn.execute(
            "INSERT INTO blob_refs (skey, sha256) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            (skey, sha256),
        )
        charged = len(data) if cur.rowcount == 1 else 0
        if charged:
            conn.execute("UPDATE sessions SET bytes = bytes + %s WHERE skey = %s", (charged, skey))
        return charged

    def _execute(self, statement: str, args: Sequence[Any]) -> None:
        self._tx().execute(statement, args)

    def _executemany(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        with self._tx().cursor() as cur:
            cur.executemany(statement, rows)
