"""The PostgreSQL journal: the SQLite journal's contract on a database several machines share.

:class:`PgJournal` is the :class:`~agent_bridge.journal.journal.Journal` with its storage
replaced: the event-loop side (queueing writes, sealing event batches, tickets, health,
``on_commit``) is inherited unchanged, so both backends release an event to a host only
once it is committed, keep each session's sequence gapless, and hold (``failing``, the
disk-full path) while commits fail.  For PostgreSQL "commits fail" includes the server
going away: the writer (:mod:`agent_bridge.journal.pg_writer`) keeps the operations and
reconnects until a commit succeeds, so a restarted database resumes the stream with
nothing lost and no restart of the bridge.

Ownership.  SQLite tells a live owner from a dead one by a lock file; a database shared by
machines cannot, so each process holds a **lease**: its row in ``owners`` carries
``expires_at``, renewed every third of the lease by a heartbeat thread on a connection of
its own.  An owner is gone when its lease expired, or, on the same node, when its process
no longer exists and its session-level advisory lock is free (a SIGKILLed bridge on this
machine is recovered at once, not after the lease).  Recovering an owner deletes its row
in the same transaction that closes its sessions (``bridge_crashed``, as
:mod:`agent_bridge.journal.recovery`), and every commit of an owner first locks its own
row (``FOR SHARE``): so recovery waits for a commit in flight, and an owner whose row is
gone never commits again (fencing; see ``docs/fleet.md``).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, TypeVar

import msgspec

from agent_bridge.ids import Clock
from agent_bridge.journal.base import ClaimStatus, DeleteStatus, Member
from agent_bridge.journal.errors import DAMAGE, JournalError
from agent_bridge.journal.journal import Journal
from agent_bridge.journal.pg_reader import PgReader
from agent_bridge.journal.pg_schema import (
    check_url,
    classify_pg,
    connect_pg,
    create_schema,
    one_line,
    with_deadlines,
)
from agent_bridge.journal.pg_writer import (
    CHANNEL,
    COMMANDS,
    REPLIES,
    PgWriter,
    notify_lines,
    pg_delete_session_rows,
    pg_insert_events,
    pg_last_sequence,
)
from agent_bridge.journal.queries import (
    CLAIM,
    UNBIND,
    bind_native,
    deletable,
    marked,
    takeable,
)
from agent_bridge.journal.recovery import close_crashed
from agent_bridge.journal.retention import Retention, _iso
from agent_bridge.lazylog import lazy_logger
from agent_bridge.wire.errors import ErrorInfo

if TYPE_CHECKING:
    import anyio
    import psycopg

__all__ = ["DEFAULT_LEASE", "PgJournal", "open_pg_journal"]

log = lazy_logger("agent_bridge.journal")

T = TypeVar("T")

#: Seconds an owner's lease lasts without renewal (``--lease-seconds``).
DEFAULT_LEASE: Final = 15.0
#: Seconds a member waits for the answer to a request it routed to another
#: (:meth:`PgJournal.route`); the owner tries to write its answer for as long
ROUTE_WAIT: Final = 30.0
#: The first key of the owners' session-level advisory locks (the second: the token's hash)
_OWNER_LOCK_CLASS: Final = 0x4142


class _Owner:
    """This process in ``owners``: its token and node (what the SQLite journal's
    :class:`~agent_bridge.journal.owners.OwnerLock` is for a state directory)."""

    def __init__(self, node: str) -> None:
        self.token = os.urandom(8).hex()
        self.node = node

    def release(self) -> None:
        """Nothing to release locally (the lease lives in the database)."""


def redact(url: str) -> str:
    """``url`` without its query (which may name files and settings) for messages."""
    return url.split("?", 1)[0]


class PgJournal(Journal):
    """Durable history in PostgreSQL; make one with :func:`open_pg_journal`."""

    url: str
    lease: float
    node: str
    #: the control connection (claims, deletes, recovery; the SQLite journal's ``_control``)
    _pg: psycopg.Connection[Any]
    #: called in the event loop with the sessions this member took over (closed
    #: ``bridge_crashed`` after their owner's lease expired): the runtime resumes them
    on_takeover: Callable[[list[str]], None] | None = None
    #: the workspace roots this member runs sessions under (``--node-workspaces``, real
    #: paths; ``None``: any) and the providers it serves (``--node-providers``; ``None``:
    #: every provider of the bridge)
    roots: tuple[str, ...] | None = None
    serves: tuple[str, ...] | None = None
    #: what :meth:`declare` last recorded
    _providers: tuple[str, ...] = ()
    #: whether this member has recorded what it serves (:meth:`declare_now`, before
    #: its first reply, or :meth:`declare`)
    declared: bool = False

    # ------------------------------------------------------------------ lease

    def _start_heartbeat(self, conn: psycopg.Connection[Any]) -> None:
        self._lease_conn: psycopg.Connection[Any] | None = conn
        self._beat_stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, name="journal-lease", daemon=True)
        self._beat.start()

    def _heartbeat(self) -> None:
        """Renew the lease every third of it, then take over what members whose lease
        expired left (:meth:`_sweep`); reconnect (and take the owner's advisory lock
        again) when the connection broke."""
        interval = self.lease / 3
        while not self._beat_stop.wait(interval):
            try:
                if self._lease_conn is None or self._lease_conn.closed:
                    self._lease_conn = connect_pg(self.url)
                    _hold_owner_lock(self._lease_conn, self._owner.token)
                renewed = self._lease_conn.execute(
                    "UPDATE owners SET expires_at = now() + make_interval(secs => %s) "
                    "WHERE token = %s",
                    (self.lease, self._owner.token),
                ).rowcount
            except Exception as exc:
                log.warning("journal: cannot renew the lease (%s)", one_line(exc))
                with contextlib.suppress(Exception):
                    if self._lease_conn is not None:
                        self._lease_conn.close()
                self._lease_conn = None
                continue
            if not renewed:
                log.error("journal: this bridge's lease was taken over by another member")
                return
            try:
                taken = self._sweep()
            except Exception as exc:
                log.warning("journal: cannot look for expired leases (%s)", one_line(exc))
            else:
                if taken and self.on_takeover is not None:
                    self._to_loop(self.on_takeover, taken)

    def _sweep(self) -> list[str]:
        """Recover every owner whose lease expired (and sessions whose owner has no row
        any more): their sessions end ``bridge_crashed`` and stay resumable, within a
        lease and a third of it of the owner's last renewal, whichever member gets
        there first (the row lock makes it one).  Returns the sessions closed."""
        me = self._owner.token
        closed: list[str] = []
        with self._control_lock:
            conn = self._control_conn()
            tokens = [
                str(row[0])
                for row in conn.execute(
                    "SELECT token FROM owners WHERE expires_at < now() AND token <> %(me)s "
                    "UNION SELECT DISTINCT s.owner FROM sessions s WHERE s.owner IS NOT NULL "
                    "AND s.owner <> %(me)s AND NOT EXISTS "
                    "(SELECT 1 FROM owners o WHERE o.token = s.owner)",
                    {"me": me},
                ).fetchall()
            ]
            for token in tokens:
                closed += recover_if_dead(conn, token, self.node, self._clock) or []
        return closed

    # ------------------------------------------------------------------ following

    def _init_follow(self) -> None:
        #: the newest committed sequence per session as told by notifications
        self._newest: dict[str, int] = {}
        #: who waits for a session's next commit
        self._followers: dict[str, set[anyio.Event]] = {}
        self._listening: anyio.Event | None = None
        self._listener: threading.Thread | None = None
        #: sessions whose stored last sequence was read since listening (re)started
        self._looked: set[str] = set()
        import anyio

        #: set when commands for this member may be waiting (:meth:`serve_commands`)
        self._command_event = anyio.Event()
        #: routed commands waiting for their reply, by id
        self._replies: dict[int, anyio.Event] = {}

    async def pending_interactions(self, session_id: str) -> list[tuple[str, str, bytes]]:
        """Return the session's interactions journaled as pending (``Followable``)."""
        reader = self._reader
        assert isinstance(reader, PgReader)
        return await self._read(reader.pending, session_id)

    async def wait_committed(self, session_id: str, after: int) -> None:
        """Return once ``session_id`` has committed events after ``after``: told by the
        writer's ``NOTIFY`` (any member's), read from the database once on entry (a
        commit notified before this member listened) and after the listening
        connection was lost and made again.  Raises :class:`JournalError`."""
        import anyio

        await self._listen()
        if session_id not in self._looked and self._newest.get(session_id, 0) <= after:
            # commits made before this member listened were never notified here
            self._note(session_id, await self._read(self._last_sync, session_id))
            self._looked.add(session_id)
        while self._newest.get(session_id, 0) <= after:
            event = anyio.Event()
            waiting = self._followers.setdefault(session_id, set())
            waiting.add(event)
            try:
                await event.wait()
            finally:
                waiting.discard(event)
                if not waiting:
                    self._followers.pop(session_id, None)
            if self._newest.get(session_id, 0) <= after:  # woken by a reconnect
                self._note(session_id, await self._read(self._last_sync, session_id))
                self._looked.add(session_id)

    async def delete(self, session_id: str) -> DeleteStatus:
        """:meth:`Journal.delete`; the newest sequence this member was told of for the
        session is forgotten with it (a session created again under its id starts at
        1, and a follower of it must not take the old one's events as committed)."""
        status = await super().delete(session_id)
        if status == "deleted":
            self._newest.pop(session_id, None)
            self._looked.discard(session_id)
        return status

    def _last_sync(self, session_id: str) -> int:
        record = self._reader.session(session_id)
        return 0 if record is None else record.last_sequence

    def _note(self, session_id: str, last: int) -> None:
        if last > self._newest.get(session_id, 0):
            self._newest[session_id] = last

    async def _listen(self) -> None:
        """Start the listening thread (once) and wait until it listens."""
        import anyio

        if self._listening is None:
            self._listening = anyio.Event()
            self._listener = threading.Thread(
                target=self._listen_main, name="journal-listen", daemon=True
            )
            self._listener.start()
        await self._listening.wait()

    def _listen_main(self) -> None:
        """``LISTEN`` on a connection of its own; hand each notification to the event
        loop.  A lost connection is made again (every follower is then woken to read
        what it may have missed)."""
        import time

        delay = 0.1
        while not self._beat_stop.is_set():
            try:
                conn = connect_pg(self.url)
            except Exception as exc:
                log.warning("journal: cannot listen for commits (%s)", one_line(exc))
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
                continue
            delay = 0.1
            try:
                conn.execute(f"LISTEN {CHANNEL}")
                conn.execute(f"LISTEN {COMMANDS}")
                conn.execute(f"LISTEN {REPLIES}")
                self._to_loop(self._listen_ready)
                while not self._beat_stop.is_set():
                    # each notification is handed over as it arrives; the generator
                    # ends each second (to look at the stop flag; closing also wakes
                    # it at once with a notification)
                    for note in conn.notifies(timeout=1.0):
                        if self._beat_stop.is_set():
                            break  # (closing wakes this with a notification)
                        if note.channel == CHANNEL:
                            self._to_loop(self._notified, note.payload)
                        elif note.channel == COMMANDS:
                            if note.payload == self._owner.token:
                                self._to_loop(self._command_event.set)
                        else:
                            self._to_loop(self._replied, note.payload)
            except Exception as exc:
                log.warning("journal: the listening connection broke (%s)", one_line(exc))
            finally:
                with contextlib.suppress(Exception):
                    conn.close()

    def _to_loop(self, call: Callable[..., None], *args: Any) -> None:
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed
                loop.call_soon_threadsafe(call, *args)

    def _listen_ready(self) -> None:
        self._looked.clear()  # what was committed while not listening is read again
        self._command_event.set()  # commands queued while not listening are taken
        for event in self._replies.values():
            event.set()
        if self._listening is not None:
            self._listening.set()
        for waiting in list(self._followers.values()):  # (re)connected: look again
            for event in waiting:
                event.set()

    def _notified(self, payload: str) -> None:
        for line in payload.splitlines():
            session_id, _, last = line.rpartition(" ")
            with contextlib.suppress(ValueError):
                self._note(session_id, int(last))
            for event in self._followers.get(session_id, ()):
                event.set()

    # ------------------------------------------------------------------ routing

    def _replied(self, payload: str) -> None:
        with contextlib.suppress(ValueError):
            event = self._replies.get(int(payload))
            if event is not None:
                event.set()

    def _owner_of_sync(self, kind: str, key: str) -> str | None:
        """The live member owning the session a request names (by session, run or
        interaction id), when it is not this one."""
        query = {
            "session": "SELECT o.token FROM owners o WHERE o.expires_at > now() AND o.token = "
            "(SELECT s.owner FROM sessions s WHERE s.session_id = %s)",
            "run": "SELECT o.token FROM owners o WHERE o.expires_at > now() AND o.token = "
            "(SELECT s.owner FROM runs r JOIN sessions s ON s.skey = r.skey "
            "WHERE r.run_id = %s AND r.ended_seq IS NULL LIMIT 1)",
            "interaction": "SELECT o.token FROM owners o WHERE o.expires_at > now() AND "
            "o.token = (SELECT s.owner FROM interactions i JOIN sessions s ON s.skey = i.skey "
            "WHERE i.interaction_id = %s LIMIT 1)",
        }[kind]

        def read(conn: psycopg.Connection[Any]) -> str | None:
            row = conn.execute(query, (key,)).fetchone()
            token = None if row is None else str(row[0])
            return None if token == self._owner.token else token

        return self._reader._run(read)  # type: ignore[attr-defined, no-any-return]

    def _send_sync(self, owner: str, method: str, params: bytes) -> int:
        def write(conn: psycopg.Connection[Any]) -> int:
            with conn.transaction():
                row = conn.execute(
                    "INSERT INTO commands (owner, method, params) VALUES (%s, %s, %s) RETURNING id",
                    (owner, method, params),
                ).fetchone()
                conn.execute("SELECT pg_notify(%s, %s)", (COMMANDS, owner))
            assert row is not None  # RETURNING gives the row
            return int(row[0])

        return self._reader._run(write)  # type: ignore[attr-defined, no-any-return]

    def _reply_sync(self, command: int) -> tuple[bytes | None, str | None] | None:
        def read(conn: psycopg.Connection[Any]) -> tuple[bytes | None, str | None] | None:
            row = conn.execute(
                "DELETE FROM commands WHERE id = %s AND state = 'done' RETURNING result, error",
                (command,),
            ).fetchone()
            if row is None:
                return None
            return (None if row[0] is None else bytes(row[0])), row[1]

        return self._reader._run(read)  # type: ignore[attr-defined, no-any-return]

    # ------------------------------------------------------------------ placement

    def me(self) -> Member:
        """This member: token, node, the providers it last declared, its roots."""
        return Member(self._owner.token, self.node, self._providers, self.roots)

    def _declare_sync(self, conn: psycopg.Connection[Any], providers: tuple[str, ...]) -> None:
        conn.execute(
            "UPDATE owners SET providers = %s, roots = %s WHERE token = %s",
            (
                list(providers),
                None if self.roots is None else list(self.roots),
                self._owner.token,
            ),
        )

    async def declare(self, providers: tuple[str, ...]) -> Member:
        """Record what this member serves (``providers``, its workspace roots) in its
        ``owners`` row, where :meth:`members` of every member reads it; return it.
        Raises :class:`JournalError`."""

        def write(conn: psycopg.Connection[Any]) -> None:
            self._declare_sync(conn, providers)

        self._providers = providers
        await self._read(self._reader._run, write)  # type: ignore[attr-defined]
        self.declared = True
        return self.me()

    def declare_now(self, providers: tuple[str, ...]) -> Member:
        """:meth:`declare`, blocking, before the event loop runs (a command declares
        its member before its first reply, so placement on any member sees it as soon
        as a host does).  Raises :class:`JournalError`."""
        import psycopg

        try:
            with self._control_lock:
                conn = self._control_conn()
                with conn.transaction():
                    self._declare_sync(conn, providers)
        except psycopg.Error as exc:
            raise JournalError(f"cannot record what this member serves: {one_line(exc)}") from None
        self._providers = providers
        self.declared = True
        return self.me()

    async def members(self) -> list[Member]:
        """The live members (lease not expired) that declared what they serve, with how
        many sessions each has open.  Raises :class:`JournalError`."""

        def read(conn: psycopg.Connection[Any]) -> list[Member]:
            rows = conn.execute(
                "SELECT o.token, o.node, o.providers, o.roots, "
                "(SELECT count(*) FROM sessions s WHERE s.owner = o.token) "
                "FROM owners o WHERE o.expires_at > now() AND o.providers IS NOT NULL "
                "ORDER BY o.node, o.token"
            ).fetchall()
            return [
                Member(
                    str(token),
                    str(node),
                    tuple(providers),
                    None if roots is None else tuple(roots),
                    int(count),
                )
                for token, node, providers, roots, count in rows
            ]

        return await self._read(self._reader._run, read)  # type: ignore[attr-defined]

    async def publish_hosts(self, counts: dict[str, int]) -> None:
        """Record the hosts attached here per session in ``counts`` (a row per session
        with hosts, under this member's token; 0 deletes it), in one transaction.
        Raises :class:`JournalError`."""
        token = self._owner.token
        keep = [(token, sid, n) for sid, n in counts.items() if n > 0]
        drop = [sid for sid, n in counts.items() if n <= 0]

        def write(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                if drop:
                    conn.execute(
                        "DELETE FROM attachments WHERE token = %s AND session_id = ANY(%s)",
                        (token, drop),
                    )
                if keep:
                    with conn.cursor() as cur:
                        cur.executemany(
                            "INSERT INTO attachments (token, session_id, hosts) "
                            "VALUES (%s, %s, %s) ON CONFLICT (session_id, token) "
                            "DO UPDATE SET hosts = EXCLUDED.hosts",
                            keep,
                        )

        await self._read(self._reader._run, write)  # type: ignore[attr-defined]

    async def route(
        self, kind: str, key: str, method: str, params: bytes, timeout: float = ROUTE_WAIT
    ) -> tuple[bytes | None, str | None] | None:
        """Have the live member that owns the session ``key`` names (``kind``:
        ``session``, ``run`` or ``interaction``) handle the request ``method`` with the
        encoded ``params``; return ``(result, None)`` or ``(None, error)`` (the owner's
        :class:`ErrorInfo` as JSON text), or
        ``None`` when no other live member owns it (but ``(None, session_in_use)`` for an
        interaction still pending whose owner died, until a member has its session open
        again: retry).  The request is a row of
        ``commands`` the owner takes once (``FOR UPDATE SKIP LOCKED``); a host that
        retries through another member is deduplicated by the owner's ``commandId``
        receipts.  An owner that does not answer within ``timeout`` seconds:
        ``(None, "session_in_use")``.  Raises :class:`JournalError`."""
        await self._listen()
        owner = await self._read(self._owner_of_sync, kind, key)
        if owner is None:
            if kind == "interaction" and await self._read(self._orphaned_sync, key):
                # its owner died and no member has the session open again yet: the
                # member taking it over will offer it again (docs/fleet.md)
                return None, msgspec.json.encode(ErrorInfo.of("session_in_use")).decode()
            return None
        return await self.route_to(owner, method, params, timeout)

    def _orphaned_sync(self, interaction_id: str) -> bool:
        """Whether the interaction is pending in a session no live member owns (its owner
        died and a run left open waits for the member that resumes the session)."""

        def read(conn: psycopg.Connection[Any]) -> bool:
            row = conn.execute(
                "SELECT 1 FROM interactions i JOIN sessions s ON s.skey = i.skey "
                "WHERE i.interaction_id = %s AND i.status = 'pending' AND NOT EXISTS "
                "(SELECT 1 FROM owners o WHERE o.token = s.owner AND o.expires_at > now())",
                (interaction_id,),
            ).fetchone()
            return row is not None

        return self._reader._run(read)  # type: ignore[attr-defined, no-any-return]

    async def route_to(
        self, token: str, method: str, params: bytes, timeout: float = ROUTE_WAIT
    ) -> tuple[bytes | None, str | None]:
        """Have the member ``token`` handle the request ``method`` with the encoded
        ``params`` (as :meth:`route`); ``(None, session_in_use)`` when it does not answer
        within ``timeout`` seconds, or sooner once its lease has expired (it died).
        Raises :class:`JournalError`."""
        import anyio

        await self._listen()
        command = await self._read(self._send_sync, token, method, params)
        event = self._replies[command] = anyio.Event()
        try:
            with anyio.move_on_after(timeout):
                while True:
                    reply = await self._read(self._reply_sync, command)
                    if reply is not None:
                        return reply
                    with anyio.move_on_after(self.lease / 3):
                        await event.wait()
                    if not event.is_set() and not await self._read(self._live_sync, token):
                        break  # its lease expired: it will not answer (it died)
                    event = self._replies[command] = anyio.Event()
            return None, msgspec.json.encode(ErrorInfo.of("session_in_use")).decode()
        finally:
            self._replies.pop(command, None)

    def _live_sync(self, token: str) -> bool:
        """Whether the member ``token`` holds a current lease."""

        def read(conn: psycopg.Connection[Any]) -> bool:
            row = conn.execute(
                "SELECT 1 FROM owners WHERE token = %s AND expires_at > now()", (token,)
            ).fetchone()
            return row is not None

        return self._reader._run(read)  # type: ignore[attr-defined, no-any-return]

    def _take_sync(self) -> list[tuple[int, str, bytes]]:
        def take(conn: psycopg.Connection[Any]) -> list[tuple[int, str, bytes]]:
            rows = conn.execute(
                "UPDATE commands SET state = 'taken' WHERE id IN (SELECT id FROM commands "
                "WHERE owner = %s AND state = 'new' ORDER BY id FOR UPDATE SKIP LOCKED) "
                "RETURNING id, method, params",
                (self._owner.token,),
            ).fetchall()
            return sorted((int(r[0]), str(r[1]), bytes(r[2])) for r in rows)

        return self._reader._run(take)  # type: ignore[attr-defined, no-any-return]

    def _finish_sync(self, command: int, result: bytes | None, error: str | None) -> None:
        def finish(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                conn.execute(
                    "UPDATE commands SET state = 'done', result = %s, error = %s WHERE id = %s",
                    (result, error, command),
                )
                conn.execute("SELECT pg_notify(%s, %s)", (REPLIES, str(command)))

        self._reader._run(finish)  # type: ignore[attr-defined]

    async def serve_commands(
        self, execute: Callable[[str, bytes], Awaitable[tuple[bytes | None, str | None]]]
    ) -> None:
        """Handle the requests other members route to this one, in the order they were
        sent, each once: ``execute(method, params)`` returns the encoded result or the
        encoded error (:class:`ErrorInfo` as JSON text).  Runs until cancelled; a
        failure to reach the database is logged and retried at the next notification."""
        import anyio

        await self._listen()
        while True:
            await self._command_event.wait()
            self._command_event = anyio.Event()
            try:
                commands = await self._read(self._take_sync)
                for command, method, params in commands:
                    result, error = await execute(method, params)
                    await self._finish(command, method, result, error)
            except JournalError as exc:
                log.warning("journal: cannot take routed requests (%s)", exc)

    async def _finish(
        self, command: int, method: str, result: bytes | None, error: str | None
    ) -> None:
        """Write the answer to the routed request ``command`` (done here) for the member
        that asked, trying again while the database cannot take it, for as long as that
        member waits (:data:`ROUTE_WAIT`): the request was carried out, and an answer
        lost would reach its host as ``session_in_use`` (retryable) after the wait, so a
        retry would carry it out twice (a second prompt).  Raises :class:`JournalError`
        once the asker no longer waits or the journal is damaged."""
        import anyio

        from agent_bridge.journal.errors import JournalCorrupt

        deadline = anyio.current_time() + ROUTE_WAIT
        delay = 0.1
        while True:
            try:
                await self._read(self._finish_sync, command, result, error)
                return
            except JournalCorrupt:
                raise
            except JournalError as exc:
                if anyio.current_time() + delay > deadline:
                    raise
                log.warning(
                    "journal: cannot answer a routed %s yet (%s); trying again", method, exc
                )
            await anyio.sleep(delay)
            delay = min(delay * 2, 2.0)

    # ------------------------------------------------------------------ closing

    def _close_sync(self) -> None:
        self._beat_stop.set()
        self._beat.join(5)
        with self._control_lock:
            if self._listener is not None:
                # wake the listening thread now rather than at its next second
                with contextlib.suppress(Exception):
                    self._control_conn().execute("SELECT pg_notify(%s, '')", (COMMANDS,))
                self._listener.join(5)
            try:
                try:
                    _leave(self._control_conn(), self._owner.token)
                except Exception:
                    if not self._pg.broken:
                        raise
                    _leave(self._control_conn(), self._owner.token)
            except Exception as exc:
                log.error("journal: could not record this process's exit (%s)", one_line(exc))
            with contextlib.suppress(Exception):
                self._pg.close()
        with contextlib.suppress(Exception):
            if self._lease_conn is not None:
                self._lease_conn.close()
        self._writer.close()
        self._reader.close()

    # ------------------------------------------------------------------ reads

    async def _read(self, read: Callable[..., T], *args: Any) -> T:
        """Run a read in a worker thread; raises :class:`JournalCorrupt` for damaged data,
        :class:`JournalError` (one line, no credential) for another failure."""
        import psycopg

        from agent_bridge.workers import run_sync

        self._check()
        try:
            return await run_sync(read, *args)
        except (psycopg.Error, *DAMAGE) as exc:
            if classify_pg(exc) == "damaged":
                log.error("journal %s: a read found damage (%s)", self.path, one_line(exc))
                self._set_corrupt()
                if self._on_commit is not None:
                    self._on_commit()
                raise self._corrupt_error() from None
            raise JournalError(f"cannot read the journal {self.path}: {one_line(exc)}") from None

    def _control_conn(self) -> psycopg.Connection[Any]:
        if self._pg.closed or self._pg.broken:
            self._pg = connect_pg(self.url)
        return self._pg

    def _retrying(self, call: Callable[[str], T], session_id: str) -> T:
        """``call(session_id)``, made once more on a new control connection when the
        old one turns out broken (the server restarted since it was last used)."""
        try:
            return call(session_id)
        except Exception:
            if not (self._pg.closed or self._pg.broken):
                raise
        return call(session_id)

    # ------------------------------------------------------------------ ownership

    def _take_from_dead_owner(self, owner: str) -> bool:
        if owner == self._owner.token:
            return True
        return recover_if_dead(self._control_conn(), owner, self.node, self._clock) is not None

    def _claim_sync(self, session_id: str) -> tuple[ClaimStatus, Any]:
        return self._retrying(self._claim_once, session_id)

    def _claim_once(self, session_id: str) -> tuple[ClaimStatus, Any]:
        me = self._owner.token
        with self._control_lock:
            conn = self._control_conn()
            taken = takeable(conn, session_id, "%s", self._take_from_dead_owner)
            if isinstance(taken, str):
                return taken, None
            changed = conn.execute(marked(CLAIM, "%s"), (me, session_id, me)).rowcount
            if not changed:
                return "in_use", None
        record = self._reader.session(session_id)
        return ("claimed", record) if record is not None else ("not_found", None)

    # ------------------------------------------------------------------ bindings

    def _bind_sync(self, provider_id: str, native_ref: str, session_id: str) -> str:
        def once(_: str) -> str:
            with self._control_lock:
                conn = self._control_conn()
                with conn.transaction():
                    return bind_native(conn, provider_id, native_ref, session_id, "%s")

        return self._retrying(once, session_id)

    def _unbind_sync(self, provider_id: str, native_ref: str, session_id: str) -> None:
        def once(_: str) -> None:
            with self._control_lock:
                conn = self._control_conn()
                with conn.transaction():
                    conn.execute(marked(UNBIND, "%s"), (provider_id, native_ref, session_id))

        self._retrying(once, session_id)

    def _bindings_sync(self, provider_id: str, native_refs: list[str]) -> dict[str, str]:
        def once(_: str) -> dict[str, str]:
            with self._control_lock:
                rows = (
                    self._control_conn()
                    .execute(
                        "SELECT native_ref, session_id FROM native_bindings "
                        "WHERE provider_id = %s AND native_ref = ANY(%s)",
                        (provider_id, native_refs),
                    )
                    .fetchall()
                )
            return {str(ref): str(sid) for ref, sid in rows}

        return self._retrying(once, provider_id)

    def _delete_sync(self, session_id: str) -> DeleteStatus:
        return self._retrying(self._delete_once, session_id)

    def _delete_once(self, session_id: str) -> DeleteStatus:
        with self._control_lock:
            conn = self._control_conn()
            skey = deletable(conn, session_id, "%s", self._take_from_dead_owner)
            if isinstance(skey, str):
                return skey
            with conn.transaction():
                pg_delete_session_rows(conn, skey)
        return "deleted"


def _leave(conn: psycopg.Connection[Any], token: str) -> None:
    """Delete the owner ``token``'s row and its attached hosts (it is closing)."""
    with conn.transaction():
        conn.execute("DELETE FROM owners WHERE token = %s", (token,))
        conn.execute("DELETE FROM attachments WHERE token = %s", (token,))


def _lock_key(conn: psycopg.Connection[Any], token: str) -> int:
    row = conn.execute("SELECT hashtext(%s)", (token,)).fetchone()
    assert row is not None
    return int(row[0])


def _hold_owner_lock(conn: psycopg.Connection[Any], token: str) -> None:
    """Take the owner's session-level advisory lock on ``conn`` (held while it lives)."""
    conn.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", (_OWNER_LOCK_CLASS, token))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def recover_if_dead(
    conn: psycopg.Connection[Any], token: str, node: str, clock: Clock
) -> list[str] | None:
    """Recover the owner ``token`` if it is gone (see the module docstring): close its
    sessions as crashed and delete its row, in one transaction; return the ids of the
    sessions this call closed (none when another member's recovery got there first:
    an owner with no row at all is gone), or ``None`` when the owner is alive.  Raises
    ``psycopg.Error``."""
    key = _lock_key(conn, token)
    got = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (_OWNER_LOCK_CLASS, key)).fetchone()
    locked = bool(got and got[0])
    try:
        with conn.transaction():
            row = conn.execute(
                "SELECT node, pid, expires_at < now() FROM owners WHERE token = %s FOR UPDATE",
                (token,),
            ).fetchone()
            if row is not None:
                owner_node, pid, expired = row
                crashed_here = owner_node == node and locked and not _pid_alive(int(pid))
                if not (expired or crashed_here):
                    return None
            sessions = conn.execute(
                "SELECT skey, session_id, state FROM sessions WHERE owner = %s FOR UPDATE",
                (token,),
            ).fetchall()
            notes = []
            for skey, session_id, state in sessions:
                close_crashed_session(conn, int(skey), str(session_id), str(state), clock)
                notes.append(f"{session_id} {pg_last_sequence(conn, int(skey))}")
            conn.execute("DELETE FROM owners WHERE token = %s", (token,))
            conn.execute("DELETE FROM attachments WHERE token = %s", (token,))
            # requests routed to it that it will never answer (their askers stop waiting
            # once its lease has expired: session_in_use)
            conn.execute("DELETE FROM commands WHERE owner = %s", (token,))
            if notes:  # hosts following these sessions on other members read the ends
                notify_lines(conn, CHANNEL, notes)
            if sessions:
                log.warning(
                    "journal: owner %s is gone; closed its %d session(s) as crashed",
                    token,
                    len(sessions),
                )
        return [str(session_id) for _, session_id, _ in sessions]
    finally:
        if locked:
            conn.execute("SELECT pg_advisory_unlock(%s, %s)", (_OWNER_LOCK_CLASS, key))


def recover_dead_owners(
    conn: psycopg.Connection[Any], me: str, node: str, clock: Clock
) -> list[str]:
    """Recover every owner that is gone; return the ids of the sessions closed."""
    tokens = {
        str(row[0])
        for row in conn.execute(
            "SELECT owner FROM sessions WHERE owner IS NOT NULL UNION SELECT token FROM owners"
        ).fetchall()
    }
    tokens.discard(me)
    recovered: list[str] = []
    for token in sorted(tokens):
        recovered += recover_if_dead(conn, token, node, clock) or []
    return recovered


def close_crashed_session(
    conn: psycopg.Connection[Any], skey: int, session_id: str, state: str, clock: Clock
) -> int:
    """Append the closing events of a crashed session (as
    :func:`agent_bridge.journal.recovery.close_crashed_session`) and mark it closed and
    unowned, inside the caller's transaction; return how many events were appended."""
    return close_crashed(
        conn, skey, session_id, state, clock, "%s", pg_last_sequence, pg_insert_events
    )


def apply_pg_retention(
    conn: psycopg.Connection[Any], policy: Retention, now: float | None = None
) -> list[str]:
    """Delete the closed sessions the caps say to delete (as
    :func:`agent_bridge.journal.retention.apply_retention`), in one transaction; return
    their ids."""
    import time

    if not policy.enabled:
        return []
    now = time.time() if now is None else now
    deleted: list[str] = []
    with conn.transaction():
        if policy.max_age_days is not None:
            cutoff = _iso(now - policy.max_age_days * 86400.0)
            for skey, session_id in conn.execute(
                "SELECT skey, session_id FROM sessions WHERE state = 'closed' "
                "AND updated_at < %s "
                "AND NOT EXISTS "
                "(SELECT 1 FROM sessions f WHERE f.parent_id = sessions.session_id) "
                "FOR UPDATE",
                (cutoff,),
            ).fetchall():
                pg_delete_session_rows(conn, int(skey))
                deleted.append(str(session_id))
        if policy.max_bytes is not None:
            row = conn.execute("SELECT COALESCE(SUM(bytes), 0) FROM sessions").fetchone()
            total = int(row[0]) if row else 0
            if total > policy.max_bytes:
                for skey, session_id, size in conn.execute(
                    "SELECT skey, session_id, bytes FROM sessions WHERE state = 'closed' "
                    "AND NOT EXISTS "
                    "(SELECT 1 FROM sessions f WHERE f.parent_id = sessions.session_id) "
                    "ORDER BY updated_at, skey FOR UPDATE"
                ).fetchall():
                    if total <= policy.max_bytes:
                        break
                    pg_delete_session_rows(conn, int(skey))
                    deleted.append(str(session_id))
                    total -= int(size)
    return deleted


def open_pg_journal(
    url: str,
    *,
    retention: Retention = Retention(),  # noqa: B008 - frozen
    clock: Clock | None = None,
    lease: float = DEFAULT_LEASE,
    node: str | None = None,
    providers: tuple[str, ...] | None = None,
    roots: tuple[str, ...] | None = None,
) -> PgJournal:
    """Open (creating the tables where missing, recovering owners that are gone, applying
    retention) the journal in the database ``url`` for the member ``node`` serving
    ``providers`` under the workspace ``roots`` (``None``: every provider it has, any
    workspace; recorded by :meth:`PgJournal.declare`); raises :class:`JournalError` with a
    one-line message that names the database without its query and never a credential."""
    try:
        check_url(url)
    except ValueError as exc:
        raise JournalError(f"--journal: {exc}") from None
    try:
        import psycopg
    except ImportError:
        raise JournalError(
            "--journal postgresql://… needs the PostgreSQL driver: "
            "pip install 'agent-bridge[postgres]'"
        ) from None
    clock = clock or Clock()
    node = node or socket.gethostname()
    where = redact(url)
    given, url = url, with_deadlines(url, lease)
    conns: list[psycopg.Connection[Any]] = []
    owner = _Owner(node)
    try:
        control = connect_pg(url)
        conns.append(control)
        create_schema(control, where)
        lease_conn = connect_pg(url)
        conns.append(lease_conn)
        _hold_owner_lock(lease_conn, owner.token)
        control.execute(
            "INSERT INTO owners (token, node, pid, started_at, expires_at) "
            "VALUES (%s, %s, %s, %s, now() + make_interval(secs => %s))",
            (owner.token, node, os.getpid(), clock.now_iso(), lease),
        )
        recovered = recover_dead_owners(control, owner.token, node, clock)
        apply_pg_retention(control, retention)
        writer_conn = connect_pg(url)
        conns.append(writer_conn)
        reader_conn = connect_pg(url)
        conns.append(reader_conn)
    except BaseException as exc:
        for conn in conns:
            with contextlib.suppress(Exception):
                conn.close()
        if isinstance(exc, psycopg.Error):
            # libpq repeats an address it cannot parse whole: name it without its query
            reason = one_line(exc).replace(url, where).replace(given, where)
            raise JournalError(f"cannot open the journal {where}: {reason}") from None
        raise
    journal = PgJournal(
        where,
        control,  # type: ignore[arg-type]
        writer_conn,  # type: ignore[arg-type]
        PgReader(url, reader_conn),  # type: ignore[arg-type]
        owner,  # type: ignore[arg-type]
        retention,
        clock,
        recovered,
    )
    journal.url = url
    journal._pg = control
    journal.lease = lease
    journal.node = node
    journal.serves = providers
    journal.roots = None if roots is None else tuple(os.path.realpath(r) for r in roots)
    journal.path = where
    writer = PgWriter(
        url,
        writer_conn,
        owner.token,
        journal._notify,
        retention,
        lambda conn: apply_pg_retention(conn, retention),
    )
    writer.stall_after(max(lease, 2.0))  # a commit unanswered for a lease is a fault
    journal._writer = writer  # type: ignore[assignment]
    journal._queue = journal._writer.queue
    journal._init_follow()
    journal._start_heartbeat(lease_conn)
    return journal
