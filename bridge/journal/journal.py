"""The SQLite journal: durable history behind the :class:`~agent_bridge.journal.base.History` port.

One file, ``<state dir>/journal.sqlite3``, in WAL mode, shared by every bridge process
that uses the same state directory.  Three connections per process, each used by one
thread at a time: the writer thread's (:mod:`agent_bridge.journal.writer`), the readers'
(:mod:`agent_bridge.journal.reader`, in worker threads) and a control connection for the few
operations that must see and change ownership in one transaction (reopening and deleting
sessions, crash recovery, retention at start-up).

The event loop only queues writes and awaits tickets.  Commits are reported back to it
with ``call_soon_threadsafe``; the journal then advances ``committed``, calls the
runtime's ``on_commit`` (which releases the events now durable to the host) and wakes
whoever waits for a ticket.

Storage faults never make it fall back to unjournaled delivery.  A commit that fails
(no space, an I/O error, a read-only remount) is retried by the writer, keeping the
operations; meanwhile :attr:`Journal.health` is ``failing`` (with :attr:`Journal.fault`),
nothing new is committed, so nothing new reaches a host and tickets wait, and the
runtime (told through ``on_commit``, which also runs on every change of health) holds
providers back and refuses new work.  The first commit that succeeds makes it ``ok``
again.  A damaged file (found by a commit, by a read, or at open) makes it ``corrupt``:
the writer stops, nothing is written to the file again, and waits and reads raise
:class:`~agent_bridge.journal.errors.JournalCorrupt`.  A commit that fails on a bug (not a
storage fault) makes it ``broken``: the writer stops and nothing more is written by this
process, waits raise :class:`~agent_bridge.journal.errors.JournalBroken`; reads go on.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar

import msgspec

from agent_bridge.ids import Clock
from agent_bridge.journal.base import ClaimStatus, DeleteStatus, SessionRecord
from agent_bridge.journal.errors import (
    DAMAGE,
    Fault,
    JournalBroken,
    JournalCorrupt,
    JournalError,
    classify,
)
from agent_bridge.journal.owners import OwnerLock, dead_owner, owner_alive
from agent_bridge.journal.queries import CLAIM, UNBIND, bind_native, deletable, takeable
from agent_bridge.journal.reader import Reader
from agent_bridge.journal.recovery import recover_dead_owners, recover_owner
from agent_bridge.journal.retention import Retention, apply_retention
from agent_bridge.journal.rows import delete_session_rows
from agent_bridge.journal.schema import (
    DEFAULT_SYNC,
    Sync,
    configure,
    configure_sync,
    connect,
    database_path,
    explain,
    open_journal_db,
)
from agent_bridge.journal.transactions import transaction
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
    EventBatch,
    Writer,
    WriterMode,
    choose_writer,
)
from agent_bridge.lazylog import lazy_logger
from agent_bridge.wire.methods import RawRecord

if TYPE_CHECKING:
    import asyncio

    import anyio

    from agent_bridge.journal.writer_process import ProcessWriter

# anyio, asyncio and the worker threads are imported where they are used: opening the
# journal does not need them, and ``agent-bridge serve`` opens it before its first reply
# (:mod:`agent_bridge.frontends.first_reply`).

__all__ = ["Journal"]

log = lazy_logger("agent_bridge.journal")  # logging is not imported before serve's first reply

_encode = msgspec.json.encode

T = TypeVar("T")

Health = Literal["ok", "failing", "corrupt", "broken"]

#: How long :meth:`Journal.aclose` waits for a failing journal to commit what is queued.
CLOSE_WAIT_FAILING: Final = 5.0


class Journal:
    """Durable history; make one with :meth:`open`."""

    def __init__(
        self,
        state_dir: str,
        control: sqlite3.Connection,
        writer_conn: sqlite3.Connection | None,
        reader: Reader,
        owner: OwnerLock,
        retention: Retention,
        clock: Clock,
        recovered: list[str],
        sync: Sync = DEFAULT_SYNC,
    ) -> None:
        self.state_dir = state_dir
        self.path = database_path(state_dir)
        #: Always true: events are released only once committed, whatever happens.
        self.durable = True
        #: ``ok``, ``failing`` (commits fail and are retried) or ``corrupt`` (see the
        #: module docstring); :attr:`fault` names the latest failure, :attr:`failing_since`
        #: when commits began to fail (``time.monotonic()``)
        self.health: Health = "ok"
        self.fault: Fault | None = None
        self.failing_since: float | None = None
        self.appended = 0
        self.committed = 0
        #: Sessions closed by crash recovery when the journal was opened.
        self.recovered = recovered
        self._control = control
        self._control_lock = threading.Lock()
        self._reader = reader
        self._owner = owner
        self._clock = clock
        self._ops = 0
        self._ops_committed = 0
        self._waiters: list[tuple[int, anyio.Event]] = []
        self._on_commit: Callable[[], None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._writer: Writer | ProcessWriter
        if writer_conn is None:
            from agent_bridge.journal.writer_process import ProcessWriter

            self._writer = ProcessWriter(self.path, sync, retention, self._committed)
        else:
            self._writer = Writer(writer_conn, self._notify, retention, os.path.dirname(self.path))
        #: which writer commits: ``thread`` or ``process`` (``--journal-writer``)
        self.writer_kind = self._writer.kind
        self._queue = self._writer.queue
        #: events not yet handed to the writer, per session (see :meth:`append`)
        self._open: dict[str, EventBatch] = {}
        self._started = False
        self._closed = False

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(
        cls,
        state_dir: str,
        *,
        retention: Retention = Retention(),  # noqa: B008 - frozen
        sync: Sync = DEFAULT_SYNC,
        busy_timeout: float = 3.0,
        clock: Clock | None = None,
        writer: WriterMode = "thread",
    ) -> Journal:
        """Open (creating, upgrading, recovering after a crash, applying retention) the
        journal in ``state_dir``, its commits made by the writer ``writer`` names
        (:func:`~agent_bridge.journal.writer.choose_writer`); raises
        :class:`JournalError` with a one-line message."""
        clock = clock or Clock()
        kind = choose_writer(writer)
        from agent_bridge.private_files import UnsafeDirectory, private_dir

        try:
            private_dir(state_dir)
        except UnsafeDirectory as exc:
            raise JournalError(f"refusing the state directory: {exc}") from None
        except OSError as exc:
            raise JournalError(
                f"cannot create the state directory {state_dir}: {exc.strerror}"
            ) from None
        path = database_path(state_dir)
        control = open_journal_db(path, busy_timeout=busy_timeout, sync=sync)
        owner: OwnerLock | None = None
        conns = [control]
        try:
            owner = OwnerLock(state_dir)
            # This process's row is written without waiting for the disk: the host waits
            # for its first reply behind this open, and the row need not be durable on its
            # own.  It only says whose sessions these are, and every later commit (each
            # synced) makes it durable with itself, since the WAL is written in order: a
            # crash that loses the row loses everything this process wrote after it too.
            control.execute("PRAGMA synchronous = OFF")
            with transaction(control):
                control.execute(
                    "INSERT INTO owners (token, pid, started_at) VALUES (?, ?, ?)",
                    (owner.token, os.getpid(), clock.now_iso()),
                )
            configure_sync(control, sync)
            recovered = recover_dead_owners(control, state_dir, owner.token, clock)
            apply_retention(control, retention)
            writer_conn: sqlite3.Connection | None = None
            if kind == "thread":
                writer_conn = connect(path, busy_timeout=30.0)
                conns.append(writer_conn)
                configure(writer_conn, sync)
            reader_conn = connect(path, busy_timeout=30.0)
            conns.append(reader_conn)
        except BaseException as exc:
            for conn in conns:
                conn.close()
            if owner is not None:
                owner.release()
            if isinstance(exc, sqlite3.Error):
                raise explain(path, exc) from None
            raise
        control.execute("PRAGMA busy_timeout = 30000")
        return cls(
            state_dir,
            control,
            writer_conn,
            Reader(reader_conn),
            owner,
            retention,
            clock,
            recovered,
            sync,
        )

    @property
    def owner_token(self) -> str:
        """This process's token in the journal's ``owners``."""
        return self._owner.token

    async def start(self, on_commit: Callable[[], None]) -> None:
        """Start the writer thread; ``on_commit`` runs in the event loop after each commit."""
        import asyncio

        self._on_commit = on_commit
        self._loop = asyncio.get_running_loop()
        self._writer.start(self._loop)
        self._started = True

    async def aclose(self) -> None:
        """Commit what is queued, stop the writer, and leave the journal (this process no
        longer owns anything in it)."""
        if self._closed:
            return
        import anyio

        from agent_bridge.workers import run_sync

        self._closed = True
        with anyio.CancelScope(shield=True):
            if self._started:
                # A failing journal gets a bounded chance to commit what is queued; what
                # it cannot commit was never acknowledged to anyone.
                with (
                    contextlib.suppress(JournalError),
                    anyio.move_on_after(
                        CLOSE_WAIT_FAILING if self.health == "failing" else None
                    ) as scope,
                ):
                    await self.committed_through(self.mark())
                if scope.cancelled_caught:
                    log.error("journal %s: closing with uncommitted writes", self.path)
                self._writer.stop()
                await run_sync(self._writer.join)
            await run_sync(self._close_sync)

    def _close_sync(self) -> None:
        with self._control_lock:
            # Sessions still owned here (a shutdown that ran out of time) keep this
            # owner: the next bridge finds it gone and closes them as crashed.
            try:
                self._control.execute("DELETE FROM owners WHERE token = ?", (self._owner.token,))
            except sqlite3.Error as exc:  # a storage fault: the next bridge recovers it
                log.error("journal: could not record this process's exit (%s)", exc)
            self._control.close()
        self._writer.close()
        self._reader.close()
        self._owner.release()

    # ------------------------------------------------------------------ commits

    def _notify(self, ops_done: int, events_done: int, fault: Fault | None) -> None:
        """Called by the writer thread after each commit (or failure to commit)."""
        loop = self._loop
        if loop is None:
            return
        # RuntimeError: the loop is closed, so nobody is waiting any more
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._committed, ops_done, events_done, fault)

    def _committed(self, ops_done: int, events_done: int, fault: Fault | None) -> None:
        if fault == "damaged":
            self._set_corrupt()
        elif fault == "internal":
            self._set_broken()
        elif fault is not None:
            if self.health == "ok":
                log.error(
                    "journal %s: commits fail (%s); retrying, events and replies wait",
                    self.path,
                    fault,
                )
                self.health = "failing"
                self.failing_since = time.monotonic()
            self.fault = fault
        else:
            if self.health == "failing":
                log.warning("journal %s: commits succeed again", self.path)
                self.health = "ok"
                self.fault = None
                self.failing_since = None
            self._ops_committed = max(self._ops_committed, ops_done)
            self.committed = max(self.committed, events_done)
        if self._on_commit is not None:
            self._on_commit()
        if self._waiters:
            done = self._ops_committed
            woken = self.health in ("corrupt", "broken")
            keep: list[tuple[int, anyio.Event]] = []
            for ticket, event in self._waiters:
                if woken or ticket <= done:
                    event.set()
                else:
                    keep.append((ticket, event))
            self._waiters = keep

    def _set_corrupt(self) -> None:
        """Mark the journal damaged: the writer stops and nothing is written again."""
        if self.health == "corrupt":
            return
        log.error(
            "journal %s is damaged; it is no longer written to (restart with another "
            "--state-dir; keep the file to recover it)",
            self.path,
        )
        self.health = "corrupt"
        self.fault = "damaged"
        self._open = {}
        self._writer.halt()

    def _set_broken(self) -> None:
        """Stop writing after a bug made a commit fail (fail closed, no retry)."""
        if self.health in ("corrupt", "broken"):
            return
        log.error(
            "journal %s: an internal error stopped the writer; nothing more is recorded "
            "by this process (restart the bridge)",
            self.path,
        )
        self.health = "broken"
        self.fault = "internal"
        self.failing_since = None
        self._open = {}
        self._writer.halt()

    def _corrupt_error(self) -> JournalError:
        if self.health == "broken":
            return JournalBroken(f"the journal {self.path} is no longer written (internal error)")
        return JournalCorrupt(f"the journal {self.path} is damaged")

    def mark(self) -> int:
        """Return a ticket covering every write made so far."""
        self._seal()
        return self._ops

    async def committed_through(self, ticket: int) -> None:
        """Wait until the writes covered by ``ticket`` are committed (while the journal is
        failing, until commits succeed again); raises :class:`JournalCorrupt` once the
        journal is damaged, :class:`JournalBroken` once a bug stopped the writer."""
        if self._ops_committed >= ticket or not self._started:
            return
        if self.health in ("corrupt", "broken"):
            raise self._corrupt_error()
        import anyio

        event = anyio.Event()
        self._waiters.append((ticket, event))
        await event.wait()
        if self._ops_committed < ticket:
            raise self._corrupt_error()

    def _submit(self, op: tuple[Any, ...]) -> None:
        if self.health in ("corrupt", "broken"):
            return
        self._seal()  # the events before this operation go first
        self._queue.append(op)
        self._ops += 1
        self._writer.submitted()

    def _seal(self) -> None:
        """Hand the open event batches to the writer."""
        if not self._open:
            return
        # One operation for every open batch: the writer takes a batch of one session
        # only together with the others sealed with it.  Delivery counts committed events
        # across sessions in the order they were appended, so committing one session's
        # batch without another's that interleaved with it would release the other's
        # events before they are durable.
        self._queue.append((OP_EVENTS, list(self._open.values())))
        self._ops += 1
        self._open = {}
        self._writer.submitted()

    def _batch(self, session_id: str, first: int) -> EventBatch | None:
        """Open a batch for ``session_id`` (its first event at ``first``); the open batches
        are handed over at the end of this iteration of the event loop."""
        if self.health in ("corrupt", "broken"):
            return None
        if not self._open and self._loop is not None:
            self._loop.call_soon(self._seal)
        batch = self._open[session_id] = EventBatch(session_id, first)
        return batch

    # ------------------------------------------------------------------ writes

    def append(self, session_id: str, sequence: int, code: int, body: bytes, raw_id: int) -> None:
        """Record the event at ``sequence`` (the hot path: two list appends).  A damaged
        or broken journal records nothing, and the event still counts as appended: it is
        never committed, so it never reaches a host."""
        batch = self._open.get(session_id) or self._batch(session_id, sequence)
        if batch is None:
            self.appended += 1
            return
        batch.bodies.append(body)
        batch.codes.append(code)
        if raw_id != batch.raw_id:
            batch.changes.append((sequence, raw_id))
            batch.raw_id = raw_id
        self.appended += 1

    def append_many(
        self,
        session_id: str,
        first: int,
        codes: bytes,
        bodies: list[bytes],
        raw_id: int,
        size: int | None = None,
    ) -> None:
        """As :meth:`append` for the consecutive events ``first``… (two list extends;
        ``size`` is not needed here)."""
        batch = self._open.get(session_id) or self._batch(session_id, first)
        if batch is not None:
            batch.bodies += bodies
            batch.codes += codes
            if raw_id != batch.raw_id:
                batch.changes.append((first, raw_id))
                batch.raw_id = raw_id
        self.appended += len(bodies)

    def add_raw(self, session_id: str, raw_id: int, record: bytes) -> None:
        """Record a raw provider record (``raw_id``: the sequence of the event about to
        be appended, the first projected from it)."""
        batch = self._open.get(session_id) or self._batch(session_id, raw_id)
        if batch is not None:
            batch.raws.append((raw_id, record))

    def add_session(self, record: SessionRecord) -> None:
        """Queue a new session, owned by this process (what the writer cached of an
        earlier session of that id, deleted by another process, is dropped first)."""
        self._submit((OP_FORGET, record.session_id))
        self._submit(
            (
                OP_SESSION,
                record.session_id,
                record.provider_id,
                record.provider_version,
                record.workspace,
                record.title,
                _encode(record.options),
                record.created_at,
                record.updated_at,
                self._owner.token,
            )
        )
        if record.recovery is not None:
            self.update_session(record.session_id, recovery=_encode(record.recovery))
        if record.parent_id is not None:
            self.update_session(
                record.session_id, parent_id=record.parent_id, fork_seq=record.fork_sequence
            )

    def update_session(self, session_id: str, **fields: Any) -> None:
        """Queue a change of the session's row (closing it also drops ownership)."""
        if fields.get("state") == "closed":
            fields["owner"] = None
        elif fields.get("state") == "active":
            fields["owner"] = self._owner.token
        if "options" in fields:
            fields["options"] = _encode(fields["options"])
        if "policy" in fields:
            fields["policy"] = _encode(fields["policy"])
        self._submit((OP_UPDATE, session_id, fields))

    def run_started(self, session_id: str, run_id: str, sequence: int) -> None:
        """Queue a run's start."""
        self._submit((OP_RUN, session_id, run_id, sequence, "running", None, ()))

    def run_ended(
        self,
        session_id: str,
        run_id: str,
        sequence: int,
        state: str,
        position: bytes | None,
        points: Sequence[tuple[int, bytes]] = (),
    ) -> None:
        """Queue a run's end (``position``: the provider's point at its end, or ``None``;
        ``points``: its checkpoints inside the run)."""
        self._submit((OP_RUN, session_id, run_id, sequence, state, position, tuple(points)))

    def interaction_opened(
        self, session_id: str, interaction_id: str, run_id: str, request: bytes
    ) -> None:
        """Queue a pending interaction."""
        self._submit((OP_INTERACTION, session_id, interaction_id, run_id, request))

    def interaction_settled(
        self, session_id: str, interaction_id: str, status: str, answer: bytes | None
    ) -> None:
        """Queue an interaction's settlement."""
        self._submit((OP_SETTLE, session_id, interaction_id, status, answer))

    def save_receipt(
        self, command_id: str, session_id: str, payload: bytes, result: bytes, created_at: str
    ) -> None:
        """Queue a command receipt (the first one of ``command_id`` stays)."""
        self._submit((OP_RECEIPT, command_id, session_id, payload, result, created_at))

    def add_blob(self, session_id: str, sha256: str, data: bytes) -> None:
        """Queue a run input's image (stored once by ``sha256``, referenced by the session)."""
        self._submit((OP_BLOB, session_id, sha256, data))

    # ------------------------------------------------------------------ reads

    def _check(self) -> None:
        if self.health == "corrupt":
            raise self._corrupt_error()

    async def _read(self, read: Callable[..., T], *args: Any) -> T:
        """Run a read in a worker thread; return its result.  Raises
        :class:`JournalCorrupt` (and marks the journal damaged) when what it reads is
        damaged, :class:`JournalError` for another failure to read."""
        from agent_bridge.workers import run_sync

        self._check()
        try:
            return await run_sync(read, *args)
        except (sqlite3.Error, *DAMAGE) as exc:
            if classify(exc) == "damaged":
                log.error("journal %s: a read found damage (%s)", self.path, exc)
                self._set_corrupt()
                if self._on_commit is not None:
                    self._on_commit()
                raise self._corrupt_error() from None
            raise JournalError(f"cannot read the journal {self.path}: {exc}") from None

    async def find_receipt(self, command_id: str) -> tuple[bytes, bytes] | None:
        """Return ``(payload, result)`` of the first use of ``command_id``, if stored."""
        return await self._read(self._reader.receipt, command_id)

    async def load_session(self, session_id: str) -> SessionRecord | None:
        """Return the stored session, or ``None``."""
        return await self._read(self._reader.session, session_id)

    async def list_sessions(
        self, provider: str | None, workspace: str | None, cursor: str | None, limit: int
    ) -> tuple[list[SessionRecord], str | None]:
        """Return up to ``limit`` sessions, newest first, and the next page's cursor."""
        try:
            after = int(cursor) if cursor is not None else None
        except ValueError:
            after = 0
        records, more = await self._read(self._reader.sessions, provider, workspace, after, limit)
        return records, None if more is None else str(more)

    async def read_events(self, session_id: str, lo: int, hi: int) -> list[bytes]:
        """Return the stored envelopes of sequences ``lo``..``hi``."""
        return await self._read(self._reader.events, session_id, lo, hi)

    async def read_raw(self, session_id: str, lo: int, hi: int) -> list[RawRecord]:
        """Return the raw records events ``lo``..``hi`` were projected from."""
        return await self._read(self._reader.raw, session_id, lo, hi)

    async def read_blob(self, sha256: str) -> bytes | None:
        """Return the stored image with this SHA-256 (hex), or ``None``."""
        return await self._read(self._reader.blob, sha256)

    async def has_forks(self, session_id: str) -> bool:
        """Whether a fork reads from this session."""
        return await self._read(self._reader.has_forks, session_id)

    async def interaction_state(self, interaction_id: str) -> tuple[str, str] | None:
        """The journaled interaction's status and its session's state, or ``None``."""
        return await self._read(self._reader.interaction_state, interaction_id)

    async def open_turns(self, session_id: str) -> list[tuple[str, int, list[tuple[str, bytes]]]]:
        """The session's runs left open (:func:`~agent_bridge.journal.queries.open_turns`)."""
        return await self._read(self._reader.open_turns, session_id)

    async def position_at(self, session_id: str, sequence: int) -> tuple[int, bytes] | None:
        """Return the latest ``(sequence, position)`` at or before ``sequence`` (through
        parents)."""
        return await self._read(self._reader.position, session_id, sequence)

    # ------------------------------------------------------------------ ownership

    async def claim(self, session_id: str) -> tuple[ClaimStatus, SessionRecord | None]:
        """Take ownership of a stored session no live process has open (recovering it
        first if its owner crashed); return the status and, when claimed, the record."""
        self._check()
        await self.committed_through(self.mark())
        status, record = await self._read(self._claim_sync, session_id)
        if status == "claimed":
            # other processes may have written the session since this one last did (it
            # was resumed elsewhere, a crash recovery closed it): the writer's cached
            # last sequence of it is stale, and would refuse the next event as a gap
            self._submit((OP_FORGET, session_id))
        return status, record

    def _take_from_dead_owner(self, owner: str) -> bool:
        """Recover ``owner``'s sessions if it is gone; return whether it was gone."""
        if owner == self._owner.token:
            return True
        if owner_alive(self.state_dir, owner):
            return False
        with dead_owner(self.state_dir, owner) as dead:
            if dead:
                recover_owner(self._control, owner, self._clock)
        return dead

    def _claim_sync(self, session_id: str) -> tuple[ClaimStatus, SessionRecord | None]:
        me = self._owner.token
        with self._control_lock:
            conn = self._control
            taken = takeable(conn, session_id, "?", self._take_from_dead_owner)
            if isinstance(taken, str):
                return taken, None
            with transaction(conn):
                changed = conn.execute(CLAIM, (me, session_id, me)).rowcount
            if not changed:
                return "in_use", None
        record = self._reader.session(session_id)
        return ("claimed", record) if record is not None else ("not_found", None)

    async def bind_native(self, provider_id: str, native_ref: str, session_id: str) -> str:
        """Bind the provider session ``native_ref`` to ``session_id`` unless it is bound
        already (by this or another process: the table's key decides); return the session
        it is bound to."""
        self._check()
        return await self._read(self._bind_sync, provider_id, native_ref, session_id)

    def _bind_sync(self, provider_id: str, native_ref: str, session_id: str) -> str:
        with self._control_lock, transaction(self._control):
            return bind_native(self._control, provider_id, native_ref, session_id, "?")

    async def unbind_native(self, provider_id: str, native_ref: str, session_id: str) -> None:
        """Drop the binding of ``native_ref`` if it is to ``session_id`` (a session that
        could not be opened, or is gone)."""
        self._check()
        await self._read(self._unbind_sync, provider_id, native_ref, session_id)

    def _unbind_sync(self, provider_id: str, native_ref: str, session_id: str) -> None:
        with self._control_lock, transaction(self._control):
            self._control.execute(UNBIND, (provider_id, native_ref, session_id))

    async def native_bindings(self, provider_id: str, native_refs: list[str]) -> dict[str, str]:
        """The bridge session each of ``native_refs`` is bound to (only those bound)."""
        self._check()
        return await self._read(self._bindings_sync, provider_id, native_refs)

    def _bindings_sync(self, provider_id: str, native_refs: list[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        with self._control_lock:
            conn = self._control
            for start in range(0, len(native_refs), 500):
                chunk = native_refs[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(
                    "SELECT native_ref, session_id FROM native_bindings "  # noqa: S608
                    f"WHERE provider_id = ? AND native_ref IN ({marks})",
                    (provider_id, *chunk),
                ).fetchall()
                out.update((str(ref), str(sid)) for ref, sid in rows)
        return out

    async def delete(self, session_id: str) -> DeleteStatus:
        """Delete everything stored about a session that no other live process has open."""
        self._check()
        await self.committed_through(self.mark())
        status = await self._read(self._delete_sync, session_id)
        if status == "deleted":
            self._submit((OP_FORGET, session_id))  # the writer's caches are its own
        return status

    def _delete_sync(self, session_id: str) -> DeleteStatus:
        with self._control_lock:
            conn = self._control
            skey = deletable(conn, session_id, "?", self._take_from_dead_owner)
            if isinstance(skey, str):
                return skey
            with transaction(conn):
                delete_session_rows(conn, skey)
            conn.execute("PRAGMA incremental_vacuum").fetchall()
        return "deleted"
