"""The journal's writer thread: group commit of everything the runtime records.

The event loop never touches SQLite for a write.  It appends *operations* (plain tuples,
see the ``OP_`` constants) to a deque and, if the writer is idle, wakes it.  Events are
not one operation each: the event loop appends them to an :class:`EventBatch` per session
(two list appends per event, the whole cost of journaling an event on the hot path) and
queues the open batches of all sessions as one operation, at the end of the loop iteration
or before any other operation (so no commit holds one session's batch without the others
sealed with it).
The writer takes every operation queued so far, applies them in order in one transaction
(``BEGIN IMMEDIATE`` … ``COMMIT``), then reports how many operations and events are now
committed through ``notify`` (which the journal routes to the event loop).  While one
commit runs, the next operations accumulate, so transactions grow with the event rate:
one commit per event when a session trickles, thousands of events per commit when one
streams.  Nothing is reordered: operations commit in the order they were queued, and a
transaction commits entirely or not at all.

A session's batches within a transaction are stored as blocks
(:mod:`agent_bridge.journal.blocks`) at its end, built by C loops; every other operation is a
row insert or update.  ``SQLITE_BUSY`` (another
bridge on the same journal holding the write lock past the busy timeout) is retried.
A commit that fails otherwise is rolled back and its operations are *kept*: the fault is
reported once through ``notify`` (classified by :func:`~agent_bridge.journal.errors.classify`),
and the same operations (with whatever was queued since) are tried again with a bounded
backoff (:data:`RETRY_MIN` doubling to :data:`RETRY_MAX`) until a commit succeeds, which
is reported as usual.  So a full disk, an I/O error or a read-only remount delays
commits and never loses or reorders one.  Damage (``SQLITE_CORRUPT``, ``SQLITE_NOTADB``)
is reported and ends the thread: a damaged file is never written to.  So does a bug
(:func:`~agent_bridge.journal.errors.classify_commit`: ``internal``, e.g. a ``TypeError`` or a
``sqlite3.ProgrammingError`` from a wrong operation): retrying it would fail forever.
"""

from __future__ import annotations

import collections
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any, Final

from agent_bridge.journal.errors import Fault, classify_commit, on_read_only_fs
from agent_bridge.journal.retention import Retention, RetentionClock, apply_retention
from agent_bridge.journal.rows import add_blob, insert_events, last_sequence, session_key
from agent_bridge.journal.transactions import begin_immediate, transaction
from agent_bridge.lazylog import lazy_logger

__all__ = [
    "OP_BLOB",
    "OP_EVENTS",
    "OP_FORGET",
    "OP_INTERACTION",
    "OP_RECEIPT",
    "OP_RUN",
    "OP_SESSION",
    "OP_SETTLE",
    "OP_UPDATE",
    "EventBatch",
    "Writer",
]

log = lazy_logger("agent_bridge.journal")  # logging is not imported before serve's first reply

#: ``(OP_EVENTS, batches)``: every :class:`EventBatch` sealed together (a list)
OP_EVENTS: Final = 0
#: ``(OP_SESSION, session_id, provider_id, provider_version, workspace, title,
#: options_json, created_at, updated_at, owner)``
OP_SESSION: Final = 2
#: ``(OP_UPDATE, session_id, {column: value})`` for the columns in ``_UPDATABLE``
OP_UPDATE: Final = 3
#: ``(OP_RUN, session_id, run_id, sequence, state, position, points)``: started
#: (``running``) or ended (``position``: the provider's point at its end, encoded JSON, or
#: ``None``; ``points``: ``(sequence, position)`` of its checkpoints, see ``fork_points``)
OP_RUN: Final = 4
#: ``(OP_INTERACTION, session_id, interaction_id, run_id, request_json)``
OP_INTERACTION: Final = 5
#: ``(OP_SETTLE, session_id, interaction_id, status, answer_json | None)``
OP_SETTLE: Final = 6
#: ``(OP_RECEIPT, command_id, session_id, payload, result, created_at)``
OP_RECEIPT: Final = 7
#: ``(OP_FORGET, session_id)``: the session was deleted; drop what the writer caches of
#: it (its key and last sequence).  An operation, so that only the writer thread ever
#: touches those caches.
OP_FORGET: Final = 8

#: ``(OP_BLOB, session_id, sha256, data)``: a run input's image, stored once
OP_BLOB: Final = 9

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

#: ``notify(operations committed, events committed, fault)``: ``fault`` is ``None`` after
#: a commit, else what made the latest attempt fail
Notify = Callable[[int, int, "Fault | None"], None]

#: The first and the longest wait between two attempts at a failed commit, in seconds.
RETRY_MIN: Final = 0.05
RETRY_MAX: Final = 2.0


class EventBatch:
    """Consecutive events of one session (from ``first``), with the raw records they were
    projected from: filled by the event loop, then handed to the writer whole."""

    __slots__ = ("bodies", "changes", "codes", "first", "raw_id", "raws", "session_id")

    def __init__(self, session_id: str, first: int) -> None:
        self.session_id = session_id
        self.first = first
        self.bodies: list[bytes] = []
        self.codes = bytearray()
        #: the raw record of the latest event (0: none), and ``(sequence, raw_id)`` at each
        #: event where that changed: the events from one change to the next came from it
        self.raw_id = 0
        self.changes: list[tuple[int, int]] = []
        #: ``(raw_id, record)`` raw records first seen in this batch
        self.raws: list[tuple[int, bytes]] = []

    def links(self) -> list[tuple[int, int, int]]:
        """Return the ``(first_seq, last_seq, raw_id)`` spans of this batch's events that
        came from a raw record."""
        if not self.changes:
            return []
        end = self.first + len(self.bodies)
        bounds = [seq for seq, _ in self.changes[1:]] + [end]
        return [
            (seq, stop - 1, raw_id)
            for (seq, raw_id), stop in zip(self.changes, bounds, strict=True)
            if raw_id and stop > seq
        ]


def _begin_retrying(conn: sqlite3.Connection) -> None:
    """``BEGIN IMMEDIATE``, retried (with backoff up to a second) while another writer
    holds the journal's write lock past the busy timeout; raises any other
    :class:`sqlite3.Error`."""
    delay = 0.01
    while True:
        try:
            begin_immediate(conn)
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            # past the busy timeout: someone holds the write lock for long
            (log.warning if delay == 0.01 else log.debug)(
                "journal: still locked by another writer; retrying"
            )
            time.sleep(delay)
            delay = min(delay * 2, 1.0)
            continue
        return


class Writer:
    """The thread that commits queued operations; see the module docstring."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        notify: Notify,
        retention: Retention = Retention(),  # noqa: B008 - frozen
        directory: str = ".",
        replay: int = 0,
    ) -> None:
        self.queue: collections.deque[tuple[Any, ...]] = collections.deque()
        self.wake = threading.Event()
        #: True while the writer waits for work: producers set :attr:`wake` only then.
        self.idle = True
        self._conn = conn
        #: the journal's directory, looked at to tell a read-only filesystem
        self._directory = directory
        self._notify = notify
        self._retention = RetentionClock(retention)
        self._policy = retention
        self._stopping = False
        self._halted = False
        #: a commit found the file damaged: it is never written to again
        self._damaged = False
        self._skeys: dict[str, int] = {}
        self._last: dict[int, int] = {}
        self._ops_done = 0
        self._events_done = 0
        #: the first ``replay`` operations may have been committed already (a writer process
        #: restarted after its predecessor died between a commit and its report: see
        #: :mod:`agent_bridge.journal.writer_process`); a commit holding any of them stores
        #: only the events past each session's last stored one, and a session row only if
        #: it has none, so nothing is written twice
        self._replay = replay
        self._thread = threading.Thread(target=self._main, name="journal-writer", daemon=True)

    # ------------------------------------------------------------------ control

    kind: Final = "thread"

    def start(self, loop: object = None) -> None:
        """Start the thread (``loop``: unused, the process writer's works in it)."""
        self._thread.start()

    def submitted(self) -> None:
        """Operations were appended to :attr:`queue`: wake the thread if it waits."""
        if self.idle:
            self.wake.set()

    def stop(self) -> None:
        """Ask the thread to commit what is queued and end; see :meth:`join`."""
        self._stopping = True
        self.wake.set()

    def halt(self) -> None:
        """Stop the thread without committing anything more (the file is damaged)."""
        self._halted = True
        self.stop()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the thread to end."""
        self._thread.join(timeout)

    def close(self) -> None:
        """Close the writer's connection once the thread has ended (or never started), so
        that the last connection of this process to close folds the write-ahead log into
        the journal file.  A damaged file is left as it is: its connection stays open until
        the process exits, and nothing is checkpointed into it."""
        if self._thread.is_alive() or self._halted or self._damaged:
            return
        self._conn.close()

    def _forget(self, session_id: str) -> None:
        """Drop what the writer caches about a deleted session (in the writer thread:
        others queue :data:`OP_FORGET`)."""
        skey = self._skeys.pop(session_id, None)
        if skey is not None:
            self._last.pop(skey, None)

    # ------------------------------------------------------------------ the thread

    def _main(self) -> None:
        queue = self.queue
        failed: list[tuple[Any, ...]] = []  # operations of a failed commit, kept in order
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
                fault = on_read_only_fs(classify_commit(exc), self._directory)
                if fault == "internal":
                    # a bug, not the storage: the log gets the traceback, the wire never
                    log.error("journal: a commit failed on an internal error", exc_info=True)
                    self._notify(self._ops_done, self._events_done, fault)
                    return
                if not failed or fault == "damaged":
                    log.error("journal: a commit failed (%s: %s)", fault, exc)
                    self._notify(self._ops_done, self._events_done, fault)
                if fault == "damaged":
                    self._damaged = True
                if fault == "damaged" or self._stopping:
                    return  # never written to again / nothing acknowledged is lost
                failed = ops
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
            if self._retention.wrote(nbytes):
                try:
                    deleted = apply_retention(self._conn, self._policy)
                except sqlite3.Error:
                    log.exception("journal: retention failed")
                else:
                    for session_id in deleted:
                        self._forget(session_id)

    def _sleep(self, seconds: float) -> None:
        """Wait ``seconds`` before the next attempt, less if asked to stop."""
        end = time.monotonic() + seconds
        while not self._stopping and (left := end - time.monotonic()) > 0:
            time.sleep(min(left, 0.05))

    def _commit(self, ops: list[tuple[Any, ...]]) -> tuple[int, int]:
        """Apply ``ops`` in one transaction, retrying while the journal is busy; return
        ``(events, bytes)`` committed.  Raises what applying or committing raised (after
        the rollback), or a ``BEGIN`` error other than busy."""
        # On failure the caches may be ahead of what is stored (a session key assigned in
        # the rolled-back transaction, a block's last sequence): drop them.
        with transaction(self._conn, begin=_begin_retrying, on_abort=self._forget_all):
            return self._apply(ops)

    def _forget_all(self) -> None:
        self._last.clear()
        self._skeys.clear()

    def _skey(self, session_id: str) -> int | None:
        skey = self._skeys.get(session_id)
        if skey is None:
            skey = session_key(self._conn, session_id)
            if skey is not None:
                self._skeys[session_id] = skey
        return skey

    def _apply(self, ops: list[tuple[Any, ...]]) -> tuple[int, int]:
        pending: dict[str, list[EventBatch]] = {}
        events = nbytes = 0
        for op in ops:
            if op[0] == OP_EVENTS:
                batch: EventBatch
                for batch in op[1]:
                    pending.setdefault(batch.session_id, []).append(batch)
            elif op[0] == OP_BLOB:
                nbytes += self._store_blob(op)
            else:
                self._apply_other(op, self._ops_done < self._replay)
        replaying = self._ops_done < self._replay
        for session_id, batches in pending.items():
            stored, count = self._store_events(session_id, batches, replaying)
            nbytes += stored
            events += count
        return events, nbytes

    def _store_events(
        self, session_id: str, batches: list[EventBatch], replaying: bool = False
    ) -> tuple[int, int]:
        """Store a session's batches; return ``(bytes, events)`` (``events``: all of the
        batches' events, those a replay found stored already included)."""
        conn = self._conn
        first = batches[0].first
        if len(batches) == 1:
            bodies = batches[0].bodies
            codes = bytes(batches[0].codes)
        else:
            bodies = [body for batch in batches for body in batch.bodies]
            codes = b"".join(batch.codes for batch in batches)
        skey = self._skey(session_id)
        if skey is None:
            log.error("journal: events for unknown session %s dropped", session_id)
            return 0, len(bodies)
        last = self._last.get(skey)
        if last is None:
            last = last_sequence(conn, skey)
        count = len(bodies)
        if replaying and first <= last:
            # A batch is committed whole with its frame, and frames in order: those at or
            # before ``last`` were stored by the commit whose report was lost.
            batches = [batch for batch in batches if batch.first > last]
            if not batches:
                return 0, count
            first = batches[0].first
            bodies = [body for batch in batches for body in batch.bodies]
            codes = b"".join(batch.codes for batch in batches)
        if first != last + 1:
            log.error(
                "journal: session %s continues at %d after %d (not gapless)",
                session_id,
                first,
                last,
            )
        stored = insert_events(conn, skey, first, codes, bodies) if bodies else 0
        self._last[skey] = first + len(bodies) - 1
        links = [(skey, a, b, raw_id) for batch in batches for a, b, raw_id in batch.links()]
        if links:
            conn.executemany(
                "INSERT OR REPLACE INTO raw_links (skey, first_seq, last_seq, raw_id) "
                "VALUES (?, ?, ?, ?)",
                links,
            )
        raws = [(skey, raw_id, record) for batch in batches for raw_id, record in batch.raws]
        if raws:
            conn.executemany(
                "INSERT OR REPLACE INTO raw_records (skey, raw_id, record) VALUES (?, ?, ?)", raws
            )
            stored += sum(len(r[2]) for r in raws)
        conn.execute("UPDATE sessions SET bytes = bytes + ? WHERE skey = ?", (stored, skey))
        return stored, count

    def _store_blob(self, op: tuple[Any, ...]) -> int:
        """Store a run input's image once; return the bytes its session is charged."""
        _, session_id, sha256, data = op
        skey = self._skey(session_id)
        if skey is None:
            log.warning("journal: image for unknown session %s dropped", session_id)
            return 0
        charged = add_blob(self._conn, skey, sha256, data)
        if charged:
            self._conn.execute(
                "UPDATE sessions SET bytes = bytes + ? WHERE skey = ?", (charged, skey)
            )
        return charged

    def _apply_other(self, op: tuple[Any, ...], replaying: bool = False) -> None:
        conn = self._conn
        kind = op[0]
        if kind == OP_SESSION:
            if replaying and self._skey(op[1]) is not None:
                return  # committed before the report was lost
            (
                _,
                session_id,
                provider_id,
                version,
                workspace,
                title,
                options,
                created,
                updated,
                owner,
            ) = op
            conn.execute(
                "INSERT INTO sessions (session_id, provider_id, provider_version, workspace, "
                "title, options, created_at, updated_at, state, owner) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'active', ?)",
                (
                    session_id,
                    provider_id,
                    version,
                    workspace,
                    title,
                    options,
                    created,
                    updated,
                    owner,
                ),
            )
            return
        if kind == OP_RECEIPT:
            _, command_id, session_id, payload, result, created = op
            skey = self._skey(session_id)
            if skey is not None:
                conn.execute(
                    "INSERT OR IGNORE INTO receipts "
                    "(command_id, skey, payload, result, created_at) VALUES (?, ?, ?, ?, ?)",
                    (command_id, skey, payload, result, created),
                )
            return
        if kind == OP_FORGET:
            self._forget(op[1])
            return
        skey = self._skey(op[1])
        if skey is None:
            log.warning("journal: record for unknown session %s dropped", op[1])
            return
        if kind == OP_UPDATE:
            fields: dict[str, Any] = op[2]
            columns = [name for name in fields if name in _UPDATABLE]
            if columns:
                assignments = ", ".join(f"{name} = ?" for name in columns)
                conn.execute(
                    f"UPDATE sessions SET {assignments} WHERE skey = ?",  # noqa: S608 - fixed names
                    (*(fields[name] for name in columns), skey),
                )
        elif kind == OP_RUN:
            _, _, run_id, sequence, state, position, points = op
            if points:
                conn.executemany(
                    "INSERT OR REPLACE INTO fork_points (skey, seq, position) VALUES (?, ?, ?)",
                    [(skey, seq, point) for seq, point in points],
                )
            if state == "running":
                conn.execute(
                    "INSERT OR REPLACE INTO runs (skey, run_id, started_seq, ended_seq, state) "
                    "VALUES (?, ?, ?, NULL, 'running')",
                    (skey, run_id, sequence),
                )
            else:
                conn.execute(
                    "UPDATE runs SET ended_seq = ?, state = ?, position = ? "
                    "WHERE skey = ? AND run_id = ?",
                    (sequence, state, position, skey, run_id),
                )
        elif kind == OP_INTERACTION:
            _, _, interaction_id, run_id, request = op
            conn.execute(
                "INSERT OR REPLACE INTO interactions "
                "(skey, interaction_id, run_id, status, request, answer) "
                "VALUES (?, ?, ?, 'pending', ?, NULL)",
                (skey, interaction_id, run_id, request),
            )
        elif kind == OP_SETTLE:
            _, _, interaction_id, status, answer = op
            conn.execute(
                "UPDATE interactions SET status = ?, answer = ? "
                "WHERE skey = ? AND interaction_id = ?",
                (status, answer, skey, interaction_id),
            )
        else:  # pragma: no cover - a bug
            raise ValueError(f"unknown journal operation {kind}")
