"""The journal's writer thread on SQLite: group commit of everything the runtime records.

The thread, its queue and its retry loop are
:class:`~agent_bridge.journal.committer.GroupCommitter` (shared with the PostgreSQL
writer); this module is the SQLite storage under it.

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

import os
import sqlite3
import time
from collections.abc import Sequence
from typing import Any, Literal

from agent_bridge.journal.committer import (
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
    GroupCommitter,
    Notify,
)
from agent_bridge.journal.errors import Fault, SequenceGap, classify_commit, on_read_only_fs
from agent_bridge.journal.queries import SQLITE_OPS
from agent_bridge.journal.retention import Retention, apply_retention
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
    "RETRY_MAX",
    "RETRY_MIN",
    "EventBatch",
    "Notify",
    "Writer",
    "WriterKind",
    "WriterMode",
    "choose_writer",
    "usable_cpus",
]

log = lazy_logger("agent_bridge.journal")  # logging is not imported before serve's first reply

#: ``--journal-writer``: who commits to a SQLite journal (:func:`choose_writer`).  The
#: choice lives here, with the default writer, so opening a journal does not import
#: :mod:`~agent_bridge.journal.writer_process` before ``serve``'s first reply.
WriterMode = Literal["auto", "thread", "process"]
WriterKind = Literal["thread", "process"]


def usable_cpus() -> int:
    """The number of CPUs this process may run on (its affinity, where the platform
    tells it; else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def choose_writer(mode: WriterMode) -> WriterKind:
    """The writer ``mode`` means here: ``thread`` or ``process`` as named; ``auto``: the
    thread, whatever :func:`usable_cpus` says.

    Measured (issue 34, ``bench/README.md``): the process's event loop spends more per
    event than the thread's (0.83 against 0.65 µs: the frame written to the pipe), and
    the thread's writer, whose work runs outside the interpreter lock but for about
    0.1 µs an event, no longer needs a CPU of its own once blocks are Zstandard (0.35 µs
    an event in all).  So the loop bounds both, the process's lower: server-bound it
    streamed 0.71-0.85x the thread's rate in three measurements of four on 1 and 2 CPUs
    (1.16x in the fourth, two repetitions on 1 CPU), for 0.30-0.45 µs an event
    more CPU and 16-18 MB more RSS (past row (4)'s 40 MB); more CPUs cannot lift the
    loop's bound, so none are expected to make the process pay."""
    if mode == "auto":
        return "thread"
    return mode


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


class Writer(GroupCommitter):
    """The thread that commits queued operations to SQLite; see the module docstring."""

    _sql = SQLITE_OPS

    def __init__(
        self,
        conn: sqlite3.Connection,
        notify: Notify,
        retention: Retention = Retention(),  # noqa: B008 - frozen
        directory: str = ".",
        replay: int = 0,
    ) -> None:
        super().__init__(notify, retention, replay)
        self._conn = conn
        #: the journal's directory, looked at to tell a read-only filesystem
        self._directory = directory

    def close(self) -> None:
        """Close the writer's connection once the thread has ended (or never started), so
        that the last connection of this process to close folds the write-ahead log into
        the journal file.  A damaged file is left as it is: its connection stays open until
        the process exits, and nothing is checkpointed into it."""
        if self._thread.is_alive() or self._halted or self._damaged:
            return
        self._conn.close()

    # ------------------------------------------------------------------ storage

    def _commit(self, ops: list[tuple[Any, ...]]) -> tuple[int, int]:
        """Apply ``ops`` in one transaction, retrying while the journal is busy; return
        ``(events, bytes)`` committed.  Raises what applying or committing raised (after
        the rollback), or a ``BEGIN`` error other than busy."""
        # On failure the caches may be ahead of what is stored (a session key assigned in
        # the rolled-back transaction, a block's last sequence): drop them.
        with transaction(self._conn, begin=_begin_retrying, on_abort=self._forget_all):
            return self._apply(ops)

    def _fault(self, exc: BaseException) -> Fault:
        return on_read_only_fs(classify_commit(exc), self._directory)

    def _session_key(self, session_id: str) -> int | None:
        return session_key(self._conn, session_id)

    def _retain(self) -> list[str]:
        return apply_retention(self._conn, self._policy)

    def _store_events(
        self, session_id: str, batches: list[EventBatch], replaying: bool = False
    ) -> tuple[int, int, int]:
        """Store a session's batches; return ``(bytes, events, last sequence)``
        (``events``: all of the batches' events, those a replay found stored already
        included)."""
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
            return 0, len(bodies), 0
        last = self._last.get(skey)
        if last is None:
            last = last_sequence(conn, skey)
        count = len(bodies)
        if replaying and first <= last:
            # A batch is committed whole with its frame, and frames in order: those at or
            # before ``last`` were stored by the commit whose report was lost.
            batches = [batch for batch in batches if batch.first > last]
            if not batches:
                return 0, count, last
            first = batches[0].first
            bodies = [body for batch in batches for body in batch.bodies]
            codes = b"".join(batch.codes for batch in batches)
        if first != last + 1:
            raise SequenceGap(session_id, first, last)  # never stored: the commit fails
        stored = insert_events(conn, skey, first, codes, bodies) if bodies else 0
        self._last[skey] = first + len(bodies) - 1
        stored = self._store_raws(skey, batches, stored)
        return stored, count, self._last[skey]

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

    def _execute(self, statement: str, args: Sequence[Any]) -> None:
        self._conn.execute(statement, args)

    def _executemany(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        self._conn.executemany(statement, rows)
