"""The core both journal writers share: a thread that group-commits queued operations.

The event loop appends *operations* (plain tuples, the ``OP_`` constants) to
:attr:`GroupCommitter.queue` and calls :meth:`~GroupCommitter.submitted`; events travel
as :class:`EventBatch` es, one per session, sealed together.  The thread takes every
operation queued so far and applies it in order in one transaction
(:meth:`~GroupCommitter._commit`, the backend's), then reports how many operations and
events are committed through ``notify``.  A commit that fails is classified (the
backend's :meth:`~GroupCommitter._fault`): an internal error (a bug) or damage ends the
thread; anything else keeps the operations and retries them, with whatever was queued
since, after a bounded backoff (:data:`RETRY_MIN` doubling to :data:`RETRY_MAX`), until
a commit succeeds.  Retention runs after commits that wrote enough.

What differs per backend is storage only: :class:`~agent_bridge.journal.writer.Writer`
(SQLite) and :class:`~agent_bridge.journal.pg_writer.PgWriter` (PostgreSQL) each supply
the transaction, the session-key lookup, how a session's batches, an image and every
other operation are stored, the fault classes and retention.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from agent_bridge.journal.retention import Retention, RetentionClock
from agent_bridge.lazylog import lazy_logger

if TYPE_CHECKING:
    from agent_bridge.journal.errors import Fault
    from agent_bridge.journal.queries import OperationSql

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
    "RETRY_MAX",
    "RETRY_MIN",
    "UPDATABLE",
    "EventBatch",
    "GroupCommitter",
    "Notify",
]

log = lazy_logger("agent_bridge.journal")  # logging is not imported before serve's first reply

#: ``(OP_EVENTS, batches)``: every :class:`EventBatch` sealed together (a list)
OP_EVENTS: Final = 0
#: ``(OP_SESSION, session_id, provider_id, provider_version, workspace, title,
#: options_json, created_at, updated_at, owner)``
OP_SESSION: Final = 2
#: ``(OP_UPDATE, session_id, {column: value})`` for the columns in :data:`UPDATABLE`
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

#: the ``sessions`` columns :data:`OP_UPDATE` may set
UPDATABLE: Final = frozenset(
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


class GroupCommitter:
    """The writer thread's state and loop (see the module docstring); a backend
    subclasses it and supplies storage."""

    #: what :mod:`agent_bridge.journal.journal` reports of the writer
    kind: Final = "thread"
    #: the backend's statements for the operations :meth:`_apply_other` applies
    _sql: OperationSql

    def __init__(self, notify: Notify, retention: Retention, replay: int = 0) -> None:
        self.queue: collections.deque[tuple[Any, ...]] = collections.deque()
        self.wake = threading.Event()
        #: True while the writer waits for work: producers set :attr:`wake` only then.
        self.idle = True
        self._notify = notify
        self._retention = RetentionClock(retention)
        self._policy = retention
        self._stopping = False
        self._halted = False
        #: a commit found the storage damaged: it is never written to again
        self._damaged = False
        #: session id -> key, and key -> last stored sequence (the writer thread's only)
        self._skeys: dict[str, int] = {}
        self._last: dict[int, int] = {}
        self._ops_done = 0
        self._events_done = 0
        #: the first ``replay`` operations may have been committed already (see
        #: :mod:`agent_bridge.journal.writer_process`): a backend stores only what is
        #: not there yet while :meth:`_apply` says ``replaying``
        self._replay = replay
        self._thread = threading.Thread(target=self._main, name="journal-writer", daemon=True)

    # ------------------------------------------------------------------ control

    def start(self, loop: object = None) -> None:
        """Start the thread (``loop``: unused; the process writer works in it)."""
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
        """Stop the thread without committing anything more (the storage is damaged)."""
        self._halted = True
        self.stop()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the thread to end."""
        self._thread.join(timeout)

    def _forget(self, session_id: str) -> None:
        """Drop what the writer caches about a deleted session (in the writer thread:
        others queue :data:`OP_FORGET`)."""
        skey = self._skeys.pop(session_id, None)
        if skey is not None:
            self._last.pop(skey, None)

    def _forget_all(self) -> None:
        """Drop every cached key and sequence (a transaction that held them rolled back)."""
        self._last.clear()
        self._skeys.clear()

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
                fault = self._fault(exc)
                if fault == "internal":
                    # a bug, not the storage: the log gets the traceback, the wire never
                    self._log_internal(exc)
                    self._notify(self._ops_done, self._events_done, fault)
                    return
                if not failed or fault == "damaged":
                    log.error("journal: a commit failed (%s: %s)", fault, self._describe(exc))
                    self._notify(self._ops_done, self._events_done, fault)
                if fault == "damaged":
                    self._damaged = True
                if fault == "damaged" or self._stopping:
                    return  # never written to again / nothing acknowledged is lost
                failed = ops
                self._after_failure()
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
                    deleted = self._retain()
                except Exception as exc:
                    log.error("journal: retention failed (%s)", self._describe(exc))
                else:
                    for session_id in deleted:
                        self._forget(session_id)

    def _sleep(self, seconds: float) -> None:
        """Wait ``seconds`` before the next attempt, less if asked to stop."""
        end = time.monotonic() + seconds
        while not self._stopping and (left := end - time.monotonic()) > 0:
            time.sleep(min(left, 0.05))

    def _skey(self, session_id: str) -> int | None:
        """The session's key (cached), or ``None`` for a session not stored."""
        skey = self._skeys.get(session_id)
        if skey is None:
            skey = self._session_key(session_id)
            if skey is not None:
                self._skeys[session_id] = skey
        return skey

    def _apply(self, ops: list[tuple[Any, ...]]) -> tuple[int, int]:
        """Apply ``ops`` inside the backend's transaction: every operation in order,
        each session's event batches together at the end; return ``(events, bytes)``."""
        replaying = self._ops_done < self._replay
        pending: dict[str, list[EventBatch]] = {}
        events = nbytes = 0
        for op in ops:
            if op[0] == OP_EVENTS:
                batch: EventBatch
                for batch in op[1]:
                    pending.setdefault(batch.session_id, []).append(batch)
            elif op[0] == OP_BLOB:
                nbytes += self._store_blob(op)
            elif op[0] == OP_FORGET:
                self._forget(op[1])
            else:
                self._apply_other(op, replaying)
        ends: list[tuple[str, int]] = []
        for session_id, batches in pending.items():
            stored, count, last = self._store_events(session_id, batches, replaying)
            nbytes += stored
            events += count
            if last:
                ends.append((session_id, last))
        self._events_stored(ends)
        return events, nbytes

    def _apply_other(self, op: tuple[Any, ...], replaying: bool) -> None:
        """Apply one operation other than events, images and forgetting, with the
        backend's statements (:attr:`_sql`).  A session the journal does not hold is
        logged and its record dropped; raises what the storage raised, or
        :class:`ValueError` for an unknown operation (a bug)."""
        sql = self._sql
        kind = op[0]
        if kind == OP_SESSION:
            if replaying and self._skey(op[1]) is not None:
                return  # committed before the report was lost
            self._execute(sql.session, op[1:])
            return
        if kind == OP_RECEIPT:
            _, command_id, session_id, payload, result, created = op
            skey = self._skey(session_id)
            if skey is not None:
                self._execute(sql.receipt, (command_id, skey, payload, result, created))
            return
        skey = self._skey(op[1])
        if skey is None:
            log.warning("journal: record for unknown session %s dropped", op[1])
            return
        if kind == OP_UPDATE:
            fields: dict[str, Any] = op[2]
            columns = [name for name in fields if name in UPDATABLE]
            if columns:
                assignments = ", ".join(f"{name} = {sql.marker}" for name in columns)
                self._execute(
                    f"UPDATE sessions SET {assignments} WHERE skey = {sql.marker}",  # noqa: S608 - fixed names
                    (*(fields[name] for name in columns), skey),
                )
        elif kind == OP_RUN:
            _, _, run_id, sequence, state, position, points = op
            if points:
                self._executemany(sql.fork_point, [(skey, seq, point) for seq, point in points])
            if state == "running":
                self._execute(sql.run_started, (skey, run_id, sequence))
            else:
                self._execute(sql.run_ended, (sequence, state, position, skey, run_id))
        elif kind == OP_INTERACTION:
            _, _, interaction_id, run_id, request = op
            self._execute(sql.interaction, (skey, interaction_id, run_id, request))
        elif kind == OP_SETTLE:
            _, _, interaction_id, status, answer = op
            self._execute(sql.settle, (status, answer, skey, interaction_id))
        else:  # pragma: no cover - a bug
            raise ValueError(f"unknown journal operation {kind}")

    def _store_raws(self, skey: int, batches: list[EventBatch], stored: int, since: int = 0) -> int:
        """After a session's events (``stored`` bytes): store the batches' raw records
        and their links (those ending at ``since`` or later) and charge the session;
        return the bytes stored in all."""
        links = [
            (skey, a, b, raw_id)
            for batch in batches
            for a, b, raw_id in batch.links()
            if b >= since
        ]
        if links:
            self._executemany(self._sql.raw_link, links)
        raws = [(skey, raw_id, record) for batch in batches for raw_id, record in batch.raws]
        if raws:
            self._executemany(self._sql.raw_record, raws)
            stored += sum(len(r[2]) for r in raws)
        self._execute(self._sql.charge, (stored, skey))
        return stored

    # ------------------------------------------------------------------ the backend's

    def _commit(self, ops: list[tuple[Any, ...]]) -> tuple[int, int]:
        """Apply ``ops`` (:meth:`_apply`) in one transaction; return ``(events,
        bytes)``; raise what failed, the transaction rolled back."""
        raise NotImplementedError

    def _fault(self, exc: BaseException) -> Fault:
        """What a failed commit's exception means."""
        raise NotImplementedError

    def _session_key(self, session_id: str) -> int | None:
        """The stored session's key, or ``None``."""
        raise NotImplementedError

    def _store_events(
        self, session_id: str, batches: list[EventBatch], replaying: bool
    ) -> tuple[int, int, int]:
        """Store a session's batches; return ``(bytes, events, last sequence)``
        (``events``: all of the batches', those found stored already included)."""
        raise NotImplementedError

    def _store_blob(self, op: tuple[Any, ...]) -> int:
        """Store a run input's image once; return the bytes its session is charged."""
        raise NotImplementedError

    def _execute(self, statement: str, args: Sequence[Any]) -> None:
        """Run one statement (in :attr:`_sql`'s dialect) in the transaction."""
        raise NotImplementedError

    def _executemany(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement once for each of ``rows`` in the transaction."""
        raise NotImplementedError

    def _retain(self) -> list[str]:
        """Apply retention; return the ids of the sessions deleted."""
        raise NotImplementedError

    def _events_stored(self, ends: list[tuple[str, int]]) -> None:
        """Inside the transaction, after the events: ``(session id, last sequence)``
        of each session that has new events (nothing by default)."""

    def _after_failure(self) -> None:
        """A commit failed and will be retried (nothing by default)."""

    def _log_internal(self, exc: BaseException) -> None:
        """Log a commit that failed on a bug (with its traceback)."""
        log.error("journal: a commit failed on an internal error", exc_info=exc)

    def _describe(self, exc: BaseException) -> str:
        """``exc`` for a one-line log entry."""
        return str(exc)
