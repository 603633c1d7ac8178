"""The PostgreSQL journal's writer thread: the SQLite writer's group commit, on PostgreSQL.

Same contract as :mod:`agent_bridge.journal.writer` (whose operations and
:class:`~agent_bridge.journal.writer.EventBatch` it takes unchanged from the same queue):
every operation queued so far is applied in order in one transaction, and ``notify``
reports how many operations and events are committed.  Two differences:

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

import collections
import contextlib
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from agent_bridge.journal.blocks import block_spans, encode_bodies, pack_sizes
from agent_bridge.journal.pg_schema import LeaseLost, classify_pg, connect_pg, one_line
from agent_bridge.journal.retention import Retention, RetentionClock
from agent_bridge.journal.writer import (
    OP_BLOB,
    OP_EVENTS,
    OP_FORGET,
    OP_INTERACTION,
    OP_RECEIPT,
    OP_RUN,
    OP_SESSION,
    OP_SETTLE,
    OP_UPDATE,
    RETRY_MAX,
    RETRY_MIN,
    EventBatch,
    Notify,
)
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

_UPDATABLE: Final = frozenset(
    {
        "state",
        "owner",
        "updated_at",
        "title",
        "workspace",
        "options",
        "recovery",
        "policy",
        "parent_id",
        "fork_seq",
    }
)

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
    sizes = list(map(len, bodies))
    rows = []
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
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO event_blocks (skey, first_seq, last_seq, codec, types, sizes, bodies) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s)",
            rows,
        )
    return stored


def pg_delete_session_rows(conn: psycopg.Connection[Any], skey: int) -> None:
    """Delete everything held about one session (and blobs no other session uses)."""
    shas = [
        row[0]
        for row in conn.execute("SELECT sha256 FROM blob_refs WHERE skey = %s", (skey,)).fetchall()
    ]
    conn.execute("DELETE FROM blob_refs WHERE skey = %s", (skey,))
    for sha in shas:
        conn.execute(
            "DELETE FROM blobs WHERE sha256 = %s "
            "AND NOT EXISTS (SELECT 1 FROM blob_refs WHERE sha256 = %s)",
            (sha, sha),
        )
    conn.execute(
        "DELETE FROM native_bindings WHERE session_id = "
        "(SELECT session_id FROM sessions WHERE skey = %s)",
        (skey,),
    )
    for table in (
        "event_blocks",
        "raw_links",
        "raw_records",
        "runs",
        "fork_points",
        "interactions",
        "receipts",
        "sessions",
    ):
        conn.execute(f"DELETE FROM {table} WHERE skey = %s", (skey,))  # noqa: S608


class PgWriter:
    """The thread that commits queued operations to PostgreSQL; see the module docstring.
    The interface is :class:`~agent_bridge.journal.writer.Writer`'s (``queue``,
    ``submitted``, ``start``, ``stop``, ``halt``, ``join``, ``close``)."""

    def __init__(
        self,
        url: str,
        conn: psycopg.Connection[Any],
        token: str,
        notify: Notify,
        retention: Retention,
        retain: Callable[[psycopg.Connection[Any]], list[str]],
    ) -> None:
        self.queue: collections.deque[tuple[Any, ...]] = collections.deque()
        self.wake = threading.Event()
        self.idle = True
        self._url = url
        self._conn: psycopg.Connection[Any] | None = conn
        self._token = token
        self._notify = notify
        self._retention = RetentionClock(retention)
        self._retain = retain
        self._stopping = False
        self._halted = False
        self._skeys: dict[str, int] = {}
        self._last: dict[int, int] = {}
        self._ops_done = 0
        self._events_done = 0
        self._thread = threading.Thread(target=self._main, name="journal-writer", daemon=True)

    # ------------------------------------------------------------------ control

    def start(self, loop: object = None) -> None:
        """Start the thread (``loop``: unused; the journal passes it to every writer)."""
        self._thread.start()

    def submitted(self) -> None:
        """Operations were appended to :attr:`queue`: wake the thread if it waits."""
        if self.idle:
            self.wake.set()

    def stop(self) -> None:
        """Ask the thread to commit what is queued and end."""
        self._stopping = True
        self.wake.set()

    def halt(self) -> None:
        """Stop the thread without committing anything more."""
        self._halted = True
        self.stop()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the thread to end."""
        self._thread.join(timeout)

    def close(self) -> None:
        """Close the connection once the thread has ended."""
        if self._thread.is_alive() or self._conn is None:
            return
        self._conn.close()
        self._conn = None

    def _forget(self, session_id: str) -> None:
        skey = self._skeys.pop(session_id, None)
        if skey is not None:
            self._last.pop(skey, None)

    # ------------------------------------------------------------------ the thread

    def _main(self) -> None:
        queue = self.queue
        failed: list[tuple[Any, ...]] = []
        delay = RETRY_MIN
        while True:
            self.idle = not failed
            if not queue and not failed:
                if self._stopping:
                    return
                self.wake.wait()
                self.wake.clear()
                continue
            self.idle = False
            if self._halted:
                return
            n = len(queue)
            ops = failed + [queue.popleft() for _ in range(n)]
            try:
                events, nbytes = self._commit(ops)
            except Exception as exc:
                fault = classify_pg(exc)
                if fault == "internal":
                    if isinstance(exc, LeaseLost):
                        log.error(
                            "journal: this bridge's lease was taken over by another member; "
                            "it writes nothing more (restart it to rejoin)"
                        )
                    else:
                        log.error("journal: a commit failed on an internal error", exc_info=True)
                    self._notify(self._ops_done, self._events_done, fault)
                    return
                if not failed or fault == "damaged":
                    log.error("journal: a commit failed (%s: %s)", fault, one_line(exc))
                    self._notify(self._ops_done, self._events_done, fault)
                if fault == "damaged" or self._stopping:
                    return
                failed = ops
                self._drop_connection()
                self._sleep(delay)
                delay = min(delay * 2, RETRY_MAX)
                continue
            if failed:
                log.warning("journal: commits succeed again")
            failed = []
            delay = RETRY_MIN
            self._ops_done += len(ops)
            self._events_done += events
            self._notify(self._ops_done, self._events_done, None)
            if self._retention.wrote(nbytes) and self._conn is not None:
                try:
                    deleted = self._retain(self._conn)
                except Exception as exc:
                    log.error("journal: retention failed (%s)", one_line(exc))
                else:
                    for session_id in deleted:
                        self._forget(session_id)

    def _drop_connection(self) -> None:
        """Close a connection that failed (a new one is opened for the next attempt)."""
        conn, self._conn = self._conn, None
        self._skeys.clear()
        self._last.clear()
        if conn is not None:
            with contextlib.suppress(Exception):  # it is broken already
                conn.close()

    def _sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not self._stopping and (left := end - time.monotonic()) > 0:
            time.sleep(min(left, 0.05))

    def _commit(self, ops: list[tuple[Any, ...]]) -> tuple[int, int]:
        """Apply ``ops`` in one transaction; return ``(events, bytes)`` committed.  Raises
        what connecting, applying or committing raised (the transaction rolled back)."""
        if self._conn is None:
            self._conn = connect_pg(self._url)
        conn = self._conn
        try:
            with conn.transaction():
                row = conn.execute(
                    "SELECT 1 FROM owners WHERE token = %s FOR SHARE", (self._token,)
                ).fetchone()
                if row is None:
                    raise LeaseLost(self._token)
                return self._apply(conn, ops)
        except BaseException:
            self._skeys.clear()
            self._last.clear()
            raise

    def _skey(self, conn: psycopg.Connection[Any], session_id: str) -> int | None:
        skey = self._skeys.get(session_id)
        if skey is None:
            skey = pg_session_key(conn, session_id)
            if skey is not None:
                self._skeys[session_id] = skey
        return skey

    def _apply(self, conn: psycopg.Connection[Any], ops: list[tuple[Any, ...]]) -> tuple[int, int]:
        pending: dict[str, list[EventBatch]] = {}
        events = nbytes = 0
        for op in ops:
            if op[0] == OP_EVENTS:
                batch: EventBatch
                for batch in op[1]:
                    pending.setdefault(batch.session_id, []).append(batch)
            elif op[0] == OP_BLOB:
                nbytes += self._store_blob(conn, op)
            else:
                self._apply_other(conn, op)
        notes: list[str] = []
        for session_id, batches in pending.items():
            stored, count, last = self._store_events(conn, session_id, batches)
            nbytes += stored
            events += count
            if last:
                notes.append(f"{session_id} {last}")
        if notes:
            notify_lines(conn, CHANNEL, notes)
        return events, nbytes

    def _store_events(
        self, conn: psycopg.Connection[Any], session_id: str, batches: list[EventBatch]
    ) -> tuple[int, int, int]:
        """Store a session's batches; return ``(bytes, events, last sequence)``."""
        first = batches[0].first
        bodies = [body for batch in batches for body in batch.bodies]
        codes = b"".join(bytes(batch.codes) for batch in batches)
        count = len(bodies)
        skey = self._skey(conn, session_id)
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
            log.error(
                "journal: session %s continues at %d after %d (not gapless)",
                session_id,
                first,
                last,
            )
        start = first + skip
        stored = (
            pg_insert_events(conn, skey, start, codes[skip:], bodies[skip:]) if count > skip else 0
        )
        end = first + count - 1
        self._last[skey] = max(end, last)
        links = [
            (skey, a, b, raw_id)
            for batch in batches
            for a, b, raw_id in batch.links()
            if b >= start
        ]
        with conn.cursor() as cur:
            if links:
                cur.executemany(
                    "INSERT INTO raw_links (skey, first_seq, last_seq, raw_id) "
                    "VALUES (%s, %s, %s, %s) ON CONFLICT (skey, first_seq) DO UPDATE "
                    "SET last_seq = EXCLUDED.last_seq, raw_id = EXCLUDED.raw_id",
                    links,
                )
            raws = [(skey, raw_id, record) for batch in batches for raw_id, record in batch.raws]
            if raws:
                cur.executemany(
                    "INSERT INTO raw_records (skey, raw_id, record) VALUES (%s, %s, %s) "
                    "ON CONFLICT (skey, raw_id) DO UPDATE SET record = EXCLUDED.record",
                    raws,
                )
                stored += sum(len(r[2]) for r in raws)
        conn.execute("UPDATE sessions SET bytes = bytes + %s WHERE skey = %s", (stored, skey))
        return stored, count, end

    def _store_blob(self, conn: psycopg.Connection[Any], op: tuple[Any, ...]) -> int:
        _, session_id, sha256, data = op
        skey = self._skey(conn, session_id)
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

    def _apply_other(self, conn: psycopg.Connection[Any], op: tuple[Any, ...]) -> None:
        kind = op[0]
        if kind == OP_SESSION:
            _, session_id, provider, version, workspace, title, options, created, updated, owner = (
                op
            )
            conn.execute(
                "INSERT INTO sessions (session_id, provider_id, provider_version, workspace, "
                "title, options, created_at, updated_at, state, owner) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, 'active', %s) "
                "ON CONFLICT (session_id) DO NOTHING",
                (session_id, provider, version, workspace, title, options, created, updated, owner),
            )
            return
        if kind == OP_RECEIPT:
            _, command_id, session_id, payload, result, created = op
            skey = self._skey(conn, session_id)
            if skey is not None:
                conn.execute(
                    "INSERT INTO receipts (command_id, skey, payload, result, created_at) "
                    "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (command_id) DO NOTHING",
                    (command_id, skey, payload, result, created),
                )
            return
        if kind == OP_FORGET:
            self._forget(op[1])
            return
        skey = self._skey(conn, op[1])
        if skey is None:
            log.warning("journal: record for unknown session %s dropped", op[1])
            return
        if kind == OP_UPDATE:
            fields: dict[str, Any] = op[2]
            columns = [name for name in fields if name in _UPDATABLE]
            if columns:
                assignments = ", ".join(f"{name} = %s" for name in columns)
                conn.execute(
                    f"UPDATE sessions SET {assignments} WHERE skey = %s",  # noqa: S608
                    (*(fields[name] for name in columns), skey),
                )
        elif kind == OP_RUN:
            _, _, run_id, sequence, state, position, points = op
            if points:
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO fork_points (skey, seq, position) VALUES (%s, %s, %s) "
                        "ON CONFLICT (skey, seq) DO UPDATE SET position = EXCLUDED.position",
                        [(skey, seq, point) for seq, point in points],
                    )
            if state == "running":
                conn.execute(
                    "INSERT INTO runs (skey, run_id, started_seq, ended_seq, state) "
                    "VALUES (%s, %s, %s, NULL, 'running') ON CONFLICT (skey, run_id) DO UPDATE "
                    "SET started_seq = EXCLUDED.started_seq, ended_seq = NULL, state = 'running'",
                    (skey, run_id, sequence),
                )
            else:
                conn.execute(
                    "UPDATE runs SET ended_seq = %s, state = %s, position = %s "
                    "WHERE skey = %s AND run_id = %s",
                    (sequence, state, position, skey, run_id),
                )
        elif kind == OP_INTERACTION:
            _, _, interaction_id, run_id, request = op
            conn.execute(
                "INSERT INTO interactions (skey, interaction_id, run_id, status, request, answer) "
                "VALUES (%s, %s, %s, 'pending', %s, NULL) "
                "ON CONFLICT (skey, interaction_id) DO UPDATE SET run_id = EXCLUDED.run_id, "
                "status = 'pending', request = EXCLUDED.request, answer = NULL",
                (skey, interaction_id, run_id, request),
            )
        elif kind == OP_SETTLE:
            _, _, interaction_id, status, answer = op
            conn.execute(
                "UPDATE interactions SET status = %s, answer = %s "
                "WHERE skey = %s AND interaction_id = %s",
                (status, answer, skey, interaction_id),
            )
        else:  # pragma: no cover - a bug
            raise ValueError(f"unknown journal operation {kind}")
