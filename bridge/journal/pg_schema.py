"""The PostgreSQL journal's address, connections, tables and failure classes.

``--journal postgresql://…`` (or ``postgres://…``) names the database.  Everything else
libpq knows how to find stays libpq's: the password file (``~/.pgpass``,
``PGPASSFILE``), the service file (``service=`` in the query, ``PGSERVICE``), the ``PG*``
environment, TLS settings in the query (``sslmode=verify-full&sslrootcert=…``).  A password
written into the address itself is refused (:func:`check_url`): it would sit in argv (any
local user's ``ps``), in shell history and in whatever logs a command line; the error says
to use the password file instead.  So no credential ever passes through the bridge.

This module imports ``psycopg`` only inside its functions: :func:`check_url` runs on the
start path (``serve --journal …`` is parsed before the first reply) and is plain string
work (:mod:`agent_bridge.dburl`).  The tables mirror the SQLite journal's
(:mod:`agent_bridge.journal.schema`), in
PostgreSQL types; ``journal_meta`` holds the schema version.  Creating them runs under a
transaction-level advisory lock, so two bridges opening a fresh database at once never
see each other's half-created schema.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any, Final

from agent_bridge.dburl import SCHEMES, check_url, is_pg_url
from agent_bridge.journal.errors import DAMAGE, Fault, JournalError

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "PG_SCHEMA_VERSION",
    "SCHEMES",
    "LeaseLost",
    "check_url",
    "classify_pg",
    "connect_pg",
    "create_schema",
    "is_pg_url",
]

#: 1: the tables below; 2: event blocks are written with Zstandard (``codec`` 2; see
#: :mod:`agent_bridge.journal.blocks`), so a member that cannot read them refuses the
#: database as newer instead of taking them for damage
PG_SCHEMA_VERSION: Final = 2
#: ``pg_advisory_xact_lock`` key held while the schema is created or checked
_SCHEMA_LOCK: Final = 0x41425247


class LeaseLost(Exception):
    """This process's owner row is gone from the journal: another member found its lease
    expired and took its sessions over, so it must never write again (fencing)."""


#: SQLSTATE classes and codes -> fault
_BY_STATE: Final[dict[str, Fault]] = {
    "53100": "disk_full",
    "53": "disk_full",  # insufficient resources (out of memory, too many connections: heals)
    "08": "io_error",  # connection exception
    "57": "io_error",  # operator intervention: admin shutdown, crash shutdown, cannot connect now
    "58": "io_error",  # system error (an I/O error on the server)
    "25006": "read_only",  # read-only transaction (a standby, default_transaction_read_only)
    # insufficient privilege: the role's rights were taken back (a REVOKE, another owner):
    # the database refuses this member's writes until an operator grants them again,
    # as a file system remounted read-only does; retried, never taken for a bug
    "42501": "read_only",
    "XX001": "damaged",  # data corrupted
    "XX002": "damaged",  # index corrupted
    "40": "other",  # serialization failure, deadlock: retrying heals
    "55": "other",  # object not in prerequisite state (lock not available)
}


def classify_pg(exc: BaseException) -> Fault:
    """Return what an exception from a PostgreSQL read or commit means (never raises):
    a lost connection or a server going down is ``io_error`` (retried, like a full disk),
    ``disk_full``/``read_only``/``damaged`` by SQLSTATE, a wrong statement or a broken
    invariant ``internal`` (a bug: never retried), damaged stored data ``damaged``."""
    import psycopg

    if isinstance(exc, LeaseLost):
        return "internal"
    if isinstance(exc, psycopg.Error):
        state = exc.sqlstate or ""
        fault = _BY_STATE.get(state) or _BY_STATE.get(state[:2])
        if fault is not None:
            return fault
        if isinstance(exc, psycopg.OperationalError) or state == "":
            return "io_error"  # no SQLSTATE: the connection itself failed
        if isinstance(
            exc,
            (
                psycopg.ProgrammingError,
                psycopg.IntegrityError,
                psycopg.DataError,
                psycopg.NotSupportedError,
                psycopg.InterfaceError,
            ),
        ):
            return "internal"
        return "other"
    if isinstance(exc, DAMAGE):
        return "damaged"
    if isinstance(exc, MemoryError):
        return "other"
    return "internal"


def one_line(exc: BaseException) -> str:
    """The first line of a driver error (libpq's messages name the server and the reason,
    never a password; the address has none, see :func:`check_url`)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def with_deadlines(url: str, lease: float) -> str:
    """``url`` with time limits, from the ``lease`` (seconds), for a member whose network
    to the database goes away without a word (a cable pulled, a partition: nothing
    closes its connections), each added only where the address does not set it
    (``PGCONNECT_TIMEOUT``/``PGOPTIONS`` in the environment count as set): libpq's
    ``tcp_user_timeout`` (data unacknowledged for a lease: the call fails, so a commit
    held by a dead network becomes the ``failing`` storage fault instead of hanging for
    the kernel's ~15 minutes), TCP keepalives (an idle connection, the ``LISTEN`` one,
    found dead within a lease), ``connect_timeout``; and the server's
    ``idle_in_transaction_session_timeout`` of two leases, so a transaction whose member
    vanished mid-way does not hold its fence (the ``owners`` row it locked ``FOR
    SHARE``) against a takeover for the server's keepalive time (hours).  Over a Unix
    socket libpq ignores the TCP settings."""
    from urllib.parse import quote

    query = url.split("?", 1)[1] if "?" in url else ""
    given = {item.split("=", 1)[0].strip().lower() for item in query.split("&") if item}
    if "PGCONNECT_TIMEOUT" in os.environ:
        given.add("connect_timeout")
    if "PGOPTIONS" in os.environ:
        given.add("options")
    defaults = {
        "connect_timeout": str(max(2, round(lease))),
        "keepalives": "1",
        "keepalives_idle": str(max(1, round(lease / 3))),
        "keepalives_interval": str(max(1, round(lease / 6))),
        "keepalives_count": "3",
        "tcp_user_timeout": str(max(1000, int(lease * 1000))),
        "options": f"-c idle_in_transaction_session_timeout={max(2000, int(2 * lease * 1000))}",
    }
    extra = [
        f"{key}={quote(value, safe='')}" for key, value in defaults.items() if key not in given
    ]
    if not extra:
        return url
    return url + ("&" if query else "" if url.endswith("?") else "?") + "&".join(extra)


def connect_pg(url: str) -> psycopg.Connection[Any]:
    """Return an autocommit connection to the journal's database (transactions are
    explicit); raises ``psycopg.Error``."""
    import psycopg

    return psycopg.connect(url, autocommit=True, application_name="agent-bridge")


_TABLES: Final = (
    """CREATE TABLE IF NOT EXISTS journal_meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS sessions (
        skey BIGSERIAL PRIMARY KEY,
        session_id TEXT NOT NULL UNIQUE,
        provider_id TEXT NOT NULL,
        provider_version TEXT NOT NULL,
        workspace TEXT,
        title TEXT,
        options BYTEA NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        state TEXT NOT NULL,
        owner TEXT,
        recovery BYTEA,
        bytes BIGINT NOT NULL DEFAULT 0
    )""",
    "CREATE INDEX IF NOT EXISTS sessions_owner ON sessions(owner) WHERE owner IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS sessions_retention ON sessions(state, updated_at)",
    """CREATE TABLE IF NOT EXISTS event_blocks (
        skey BIGINT NOT NULL,
        first_seq BIGINT NOT NULL,
        last_seq BIGINT NOT NULL,
        codec SMALLINT NOT NULL,
        types BYTEA NOT NULL,
        sizes BYTEA NOT NULL,
        bodies BYTEA NOT NULL,
        PRIMARY KEY (skey, first_seq)
    )""",
    """CREATE TABLE IF NOT EXISTS raw_records (
        skey BIGINT NOT NULL,
        raw_id BIGINT NOT NULL,
        record BYTEA NOT NULL,
        PRIMARY KEY (skey, raw_id)
    )""",
    """CREATE TABLE IF NOT EXISTS raw_links (
        skey BIGINT NOT NULL,
        first_seq BIGINT NOT NULL,
        last_seq BIGINT NOT NULL,
        raw_id BIGINT NOT NULL,
        PRIMARY KEY (skey, first_seq)
    )""",
    """CREATE TABLE IF NOT EXISTS runs (
        skey BIGINT NOT NULL,
        run_id TEXT NOT NULL,
        started_seq BIGINT NOT NULL,
        ended_seq BIGINT,
        state TEXT NOT NULL,
        PRIMARY KEY (skey, run_id)
    )""",
    """CREATE TABLE IF NOT EXISTS interactions (
        skey BIGINT NOT NULL,
        interaction_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        status TEXT NOT NULL,
        request BYTEA NOT NULL,
        answer BYTEA,
        PRIMARY KEY (skey, interaction_id)
    )""",
    """CREATE TABLE IF NOT EXISTS receipts (
        command_id TEXT PRIMARY KEY,
        skey BIGINT NOT NULL,
        payload BYTEA NOT NULL,
        result BYTEA NOT NULL,
        created_at TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS receipts_session ON receipts(skey)",
    """CREATE TABLE IF NOT EXISTS owners (
        token TEXT PRIMARY KEY,
        node TEXT NOT NULL,
        pid INTEGER NOT NULL,
        started_at TEXT NOT NULL,
        expires_at TIMESTAMPTZ NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS blobs (
        sha256 TEXT PRIMARY KEY,
        size BIGINT NOT NULL,
        data BYTEA NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS blob_refs (
        skey BIGINT NOT NULL,
        sha256 TEXT NOT NULL,
        PRIMARY KEY (skey, sha256)
    )""",
    "CREATE INDEX IF NOT EXISTS blob_refs_sha256 ON blob_refs(sha256)",
    # requests routed to the member that owns their session (docs/fleet.md)
    """CREATE TABLE IF NOT EXISTS commands (
        id BIGSERIAL PRIMARY KEY,
        owner TEXT NOT NULL,
        method TEXT NOT NULL,
        params BYTEA NOT NULL,
        state TEXT NOT NULL DEFAULT 'new',
        result BYTEA,
        error TEXT
    )""",
    "CREATE INDEX IF NOT EXISTS commands_new ON commands(owner) WHERE state = 'new'",
    # forks: a fork's parent and fork point, a run's position (SQLite schema version 4)
    "ALTER TABLE sessions ADD COLUMN IF NOT EXISTS parent_id TEXT",
    "ALTER TABLE sessions ADD COLUMN IF NOT EXISTS fork_seq BIGINT NOT NULL DEFAULT 0",
    "CREATE INDEX IF NOT EXISTS sessions_parent ON sessions(parent_id) WHERE parent_id IS NOT NULL",
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS position BYTEA",
    # provider sessions bound to bridge sessions (SQLite schema version 5)
    """CREATE TABLE IF NOT EXISTS native_bindings (
        provider_id TEXT NOT NULL,
        native_ref TEXT NOT NULL,
        session_id TEXT NOT NULL,
        PRIMARY KEY (provider_id, native_ref)
    )""",
    "CREATE INDEX IF NOT EXISTS native_bindings_session ON native_bindings(session_id)",
    # what each member serves (docs/fleet.md, Placement): NULL until it declared
    "ALTER TABLE owners ADD COLUMN IF NOT EXISTS providers TEXT[]",
    "ALTER TABLE owners ADD COLUMN IF NOT EXISTS roots TEXT[]",
    # a session's policy (SQLite schema version 7)
    "ALTER TABLE sessions ADD COLUMN IF NOT EXISTS policy BYTEA",
    # fork points inside runs (SQLite schema version 6)
    """CREATE TABLE IF NOT EXISTS fork_points (
        skey BIGINT NOT NULL,
        seq BIGINT NOT NULL,
        position BYTEA NOT NULL,
        PRIMARY KEY (skey, seq)
    )""",
    # hosts attached on each member, per session (docs/fleet.md): counted while the
    # member's lease holds, deleted with its owner row
    """CREATE TABLE IF NOT EXISTS attachments (
        token TEXT NOT NULL,
        session_id TEXT NOT NULL,
        hosts INTEGER NOT NULL,
        PRIMARY KEY (session_id, token)
    )""",
)


def _no_older_members(conn: psycopg.Connection[Any], where: str, version: int) -> None:
    """Raise :class:`JournalError` when members whose lease holds run on the database at
    schema ``version`` (older than this bridge's): a member of this version would have
    upgraded it, so they run an older agent-bridge."""
    live = conn.execute("SELECT node FROM owners WHERE expires_at > now() ORDER BY node").fetchall()
    if live:
        nodes = ", ".join(sorted({str(r[0]) for r in live}))
        raise JournalError(
            f"the journal {where} is in use by members of an older agent-bridge (schema "
            f"version {version}; nodes: {nodes}), which could not read what this one "
            f"writes; upgrade the fleet's members together: stop them, then start the new "
            f"version"
        )


def _expected(statements: tuple[str, ...]) -> tuple[list[str], list[tuple[str, str]]]:
    """The tables and indexes (by name) and the added columns (``(table, column)``) that
    ``statements`` create."""
    relations: list[str] = []
    columns: list[tuple[str, str]] = []
    for statement in statements:
        made = _CREATES.match(statement)
        if made is not None:
            relations.append(made.group(1))
            continue
        added = _ADDS.match(statement)
        assert added is not None, statement  # every statement is one of the two shapes
        columns.append((added.group(1), added.group(2)))
    return relations, columns


#: ``CREATE TABLE|INDEX IF NOT EXISTS name`` and ``ALTER TABLE t ADD COLUMN IF NOT EXISTS c``
_CREATES: Final = re.compile(r"CREATE (?:TABLE|INDEX) IF NOT EXISTS (\w+)")
_ADDS: Final = re.compile(r"ALTER TABLE (\w+) ADD COLUMN IF NOT EXISTS (\w+)")
_RELATIONS, _COLUMNS = _expected(_TABLES)


def _stored_version(conn: psycopg.Connection[Any]) -> int | None:
    """The schema version ``journal_meta`` records, or ``None`` (no journal yet)."""
    row = conn.execute("SELECT to_regclass('journal_meta') IS NOT NULL").fetchone()
    if not (row and row[0]):
        return None
    row = conn.execute("SELECT value FROM journal_meta WHERE key = 'schema'").fetchone()
    return None if row is None else int(row[0])


def _complete(conn: psycopg.Connection[Any]) -> bool:
    """Whether every table, index and column of :data:`_TABLES` exists, read from the
    catalogs (``to_regclass`` and ``pg_attribute`` lock no table)."""
    row = conn.execute(
        "SELECT (SELECT bool_and(to_regclass(r) IS NOT NULL) FROM unnest(%s::text[]) r) "
        "AND (SELECT count(*) FROM unnest(%s::text[], %s::text[]) c(t, a) WHERE EXISTS "
        "(SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(c.t) AND attname = c.a "
        "AND NOT attisdropped)) = %s",
        (
            _RELATIONS,
            [table for table, _ in _COLUMNS],
            [column for _, column in _COLUMNS],
            len(_COLUMNS),
        ),
    ).fetchone()
    return bool(row and row[0])


def create_schema(conn: psycopg.Connection[Any], where: str) -> None:
    """Create the journal's tables where missing, or check their version; raises
    :class:`JournalError` for a database written by a newer agent-bridge (``where``
    names the database in the message), or that this role may not create or change.

    A database already at this version with every table, index and column runs no DDL:
    ``CREATE INDEX`` and ``ALTER TABLE`` lock their table even when there is nothing to
    do (``SHARE``, ``ACCESS EXCLUSIVE``), until this transaction ends, so a member
    starting while anything held a lock on a journal table (a backup, ``pg_dump``, holds
    ``ACCESS SHARE`` on every table for its whole run) stalled the commits of every
    member of the fleet behind its queued ``ALTER``; and only a table's owner may run
    them, so a role granted just the rights to read and write the tables could not
    start at all."""
    import psycopg

    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        version = _stored_version(conn)
        if version is not None and version > PG_SCHEMA_VERSION:
            raise JournalError(
                f"the journal {where} was written by a newer agent-bridge (schema version "
                f"{version}; this one reads up to {PG_SCHEMA_VERSION}); upgrade agent-bridge"
            )
        if version == PG_SCHEMA_VERSION and _complete(conn):
            return
        try:
            for statement in _TABLES:
                conn.execute(statement)
        except psycopg.errors.InsufficientPrivilege as exc:
            raise JournalError(
                f"the journal {where} needs its tables created or upgraded, which this "
                f"role may not do ({one_line(exc)}): start one member with the role that "
                f"owns them (or may create them) first"
            ) from None
        if version is None:
            conn.execute(
                "INSERT INTO journal_meta (key, value) VALUES ('schema', %s) "
                "ON CONFLICT (key) DO NOTHING",
                (str(PG_SCHEMA_VERSION),),
            )
        elif version < PG_SCHEMA_VERSION:
            # 1 -> 2: blocks are written with Zstandard (codec 2); no table changes.  Not
            # under a live member of the older version: it would take the first such
            # block it reads for damage and stop serving the whole journal
            _no_older_members(conn, where, version)
            conn.execute(
                "UPDATE journal_meta SET value = %s WHERE key = 'schema'",
                (str(PG_SCHEMA_VERSION),),
            )
