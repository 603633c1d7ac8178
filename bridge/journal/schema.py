"""The journal's tables, their versions and the checks made when the file is opened.

The schema version is ``PRAGMA user_version``; ``PRAGMA application_id`` marks the file
as an agent-bridge journal.  Opening:

* a missing or empty file: the whole schema is created (version 0 → current);
* an older version: upgraded in one transaction by the steps in :data:`MIGRATIONS`
  (each takes version *n - 1* to *n*).  Upgrades go one way: an older bridge then
  refuses the file as newer, it never misreads it;
* a newer version: refused before anything is written (the file is left as it was);
* a file that is not SQLite, or SQLite that is not ours, or a damaged one: refused;
* a file another program keeps locked past the busy timeout: refused;
* a 0-byte file in a state directory that held a journal (the marker file
  ``journal.created``, written once the schema is first committed, is there): refused as
  truncated.  A 0-byte file without the marker is a journal another bridge has just
  begun to create, or a new one: created.  A missing file is a new journal (the user
  moved the old one away), marker or not;
* a file whose pages SQLite finds damaged (``PRAGMA quick_check``): refused;
* a ``-shm`` file without its ``-wal`` (the log of committed transactions was lost):
  refused, before SQLite would silently open the older state.

Every refusal is a :class:`JournalError` (:class:`JournalCorrupt` for damage) with a
one-line message.  The checks, the creation and the upgrade run holding an exclusive
``flock`` on ``journal.open.lock``, so two bridges opening a fresh state directory at
once never see each other's half-created file.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator
from typing import Final, Literal

from agent_bridge.journal.errors import JournalCorrupt, JournalError
from agent_bridge.journal.transactions import transaction

__all__ = [
    "APPLICATION_ID",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "configure",
    "connect",
    "database_path",
    "explain",
    "open_journal_db",
]

APPLICATION_ID: Final = 0x41425247  # "ABRG"
#: Next to the journal: created once its schema is first committed ("this directory has
#: held a journal"), so a 0-byte journal is told apart from a new one.
MARKER_FILE: Final = "journal.created"
#: Held (``flock``) while a journal is checked, created or upgraded.
OPEN_LOCK_FILE: Final = "journal.open.lock"
_DAMAGED_ADVICE: Final = (
    "keep a copy, then restore it from a backup or recover it "
    "(sqlite3 FILE .recover), or choose another --state-dir"
)
_SQLITE_MAGIC: Final = b"SQLite format 3\x00"

#: Version 1: sessions, event blocks, raw provider records and their links to events,
#: runs, interactions, command receipts and the bridge processes that own sessions.
_V1: Final = (
    """CREATE TABLE sessions (
        skey INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL UNIQUE,
        provider_id TEXT NOT NULL,
        provider_version TEXT NOT NULL,
        workspace TEXT,
        title TEXT,
        options BLOB NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        state TEXT NOT NULL,
        owner TEXT,
        recovery BLOB
    )""",
    "CREATE INDEX sessions_owner ON sessions(owner) WHERE owner IS NOT NULL",
    """CREATE TABLE event_blocks (
        skey INTEGER NOT NULL,
        first_seq INTEGER NOT NULL,
        last_seq INTEGER NOT NULL,
        codec INTEGER NOT NULL,
        types BLOB NOT NULL,
        sizes BLOB NOT NULL,
        bodies BLOB NOT NULL,
        PRIMARY KEY (skey, first_seq)
    ) WITHOUT ROWID""",
    """CREATE TABLE raw_records (
        skey INTEGER NOT NULL,
        raw_id INTEGER NOT NULL,
        record BLOB NOT NULL,
        PRIMARY KEY (skey, raw_id)
    )""",
    """CREATE TABLE raw_links (
        skey INTEGER NOT NULL,
        first_seq INTEGER NOT NULL,
        last_seq INTEGER NOT NULL,
        raw_id INTEGER NOT NULL,
        PRIMARY KEY (skey, first_seq)
    ) WITHOUT ROWID""",
    """CREATE TABLE runs (
        skey INTEGER NOT NULL,
        run_id TEXT NOT NULL,
        started_seq INTEGER NOT NULL,
        ended_seq INTEGER,
        state TEXT NOT NULL,
        PRIMARY KEY (skey, run_id)
    ) WITHOUT ROWID""",
    "CREATE INDEX runs_open ON runs(skey) WHERE ended_seq IS NULL",
    """CREATE TABLE interactions (
        skey INTEGER NOT NULL,
        interaction_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        status TEXT NOT NULL,
        request BLOB NOT NULL,
        answer BLOB,
        PRIMARY KEY (skey, interaction_id)
    ) WITHOUT ROWID""",
    "CREATE INDEX interactions_pending ON interactions(skey) WHERE status = 'pending'",
    """CREATE TABLE receipts (
        command_id TEXT PRIMARY KEY,
        skey INTEGER NOT NULL,
        payload BLOB NOT NULL,
        result BLOB NOT NULL,
        created_at TEXT NOT NULL
    )""",
    "CREATE INDEX receipts_session ON receipts(skey)",
    """CREATE TABLE owners (
        token TEXT PRIMARY KEY,
        pid INTEGER NOT NULL,
        started_at TEXT NOT NULL
    )""",
)

#: Version 2: retention.  Each session counts the bytes of its stored events (backfilled
#: from the blocks already there) and closed sessions are indexed by age.
_V2: Final = (
    "ALTER TABLE sessions ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0",
    """UPDATE sessions SET bytes = (
        SELECT COALESCE(SUM(length(bodies)), 0) FROM event_blocks b WHERE b.skey = sessions.skey
    )""",
    "CREATE INDEX sessions_retention ON sessions(state, updated_at)",
)

#: Version n is reached from n - 1 by running ``MIGRATIONS[n]``.
MIGRATIONS: Final[dict[int, tuple[str, ...]]] = {1: _V1, 2: _V2}
SCHEMA_VERSION: Final = max(MIGRATIONS)

Sync = Literal["normal", "full"]
#: ``full``: every commit is on the disk before anything it holds is acknowledged or
#: delivered, so what a host saw survives a crash of the machine too (``normal``: of the
#: bridge process only); see docs/journal.md, "Durability"
DEFAULT_SYNC: Final[Sync] = "full"


def connect(path: str, *, busy_timeout: float, readonly: bool = False) -> sqlite3.Connection:
    """Return a connection to ``path`` in autocommit mode (transactions are explicit),
    usable from any one thread at a time; raises :class:`JournalError`."""
    try:
        if readonly:
            uri = "file:" + _quote(path) + "?mode=ro"
            conn = sqlite3.connect(
                uri, uri=True, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
        else:
            conn = sqlite3.connect(
                path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
    except sqlite3.Error as exc:
        raise JournalError(f"cannot open the journal {path}: {exc}") from None
    return conn


def _quote(path: str) -> str:
    from urllib.parse import quote

    return quote(path)


def _check_header(path: str) -> None:
    try:
        with open(path, "rb") as fh:
            head = fh.read(100)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise JournalError(f"cannot read the journal {path}: {exc.strerror}") from None
    if not head and os.path.exists(_marker(path)):
        raise JournalCorrupt(
            f"the journal {path} is empty, but this state directory held a journal "
            f"(truncated?); {_DAMAGED_ADVICE.replace('FILE', path)} — or delete it and "
            f"{_marker(path)} to start a new one"
        )
    if head and (len(head) < 100 or not head.startswith(_SQLITE_MAGIC)):
        raise JournalError(
            f"the journal {path} is not a SQLite database (damaged?); "
            "move it away or choose another --state-dir"
        )
    if head and _pages_missing(head, os.path.getsize(path)):
        raise JournalCorrupt(
            f"the journal {path} is shorter than its header says (truncated); "
            f"{_DAMAGED_ADVICE.replace('FILE', path)}"
        )
    if os.path.exists(path + "-shm") and not os.path.exists(path + "-wal"):
        time.sleep(0.1)  # another bridge closing the journal deletes the -wal first
        if os.path.exists(path + "-shm") and not os.path.exists(path + "-wal"):
            raise JournalCorrupt(
                f"the journal {path} lost its write-ahead log ({path}-wal is missing, "
                f"{path}-shm is there): committed history may be gone; restore the -wal "
                f"file, or {_DAMAGED_ADVICE.replace('FILE', path)}"
            )


def _pages_missing(head: bytes, size: int) -> bool:
    """Whether a SQLite file of ``size`` bytes is shorter than the page count its header
    ``head`` records (read only when the header says that count is valid: the change
    counter at offset 24 equals the version-valid-for number at offset 92)."""
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if head[24:28] != head[92:96]:
        return False
    pages = int.from_bytes(head[28:32], "big")
    return pages > 0 and size < pages * page_size


def _marker(path: str) -> str:
    return os.path.join(os.path.dirname(path), MARKER_FILE)


@contextlib.contextmanager
def _open_lock(path: str) -> Iterator[None]:
    """Hold the exclusive lock on the state directory's ``journal.open.lock``."""
    lock = os.path.join(os.path.dirname(path), OPEN_LOCK_FILE)
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise JournalError(f"cannot create {lock}: {exc.strerror}") from None
    try:
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - Windows
            pass
        yield
    finally:
        os.close(fd)  # drops the lock


def _create_private(path: str) -> None:
    """Create a missing journal file readable by its owner only (SQLite gives the ``-wal``
    and ``-shm`` files the same permissions)."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return
    except OSError as exc:
        raise JournalError(f"cannot create the journal {path}: {exc.strerror}") from None
    os.close(fd)


def explain(path: str, exc: sqlite3.Error) -> JournalError:
    """Return the one-line :class:`JournalError` for a SQLite error on ``path``."""
    text = str(exc)
    if "locked" in text or "busy" in text:
        return JournalError(
            f"the journal {path} is locked by another program; "
            "close it or choose another --state-dir"
        )
    if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
        return JournalCorrupt(
            f"the journal {path} is damaged ({text}); {_DAMAGED_ADVICE.replace('FILE', path)}"
        )
    return JournalError(f"cannot use the journal {path}: {text}")


def open_journal_db(
    path: str, *, busy_timeout: float = 3.0, sync: Sync = DEFAULT_SYNC
) -> sqlite3.Connection:
    """Open (creating or upgrading) the journal at ``path`` and return a connection to it
    in WAL mode; raises :class:`JournalError` for a newer, foreign, damaged or locked
    file (which is then left untouched), :class:`JournalCorrupt` when it is damaged."""
    with _open_lock(path):
        return _open_locked(path, busy_timeout, sync)


def _open_locked(path: str, busy_timeout: float, sync: Sync) -> sqlite3.Connection:
    _check_header(path)
    existed = os.path.exists(path) and os.path.getsize(path) > 0
    _create_private(path)
    conn = connect(path, busy_timeout=busy_timeout)
    try:
        if existed:
            _quick_check(path, conn)
        version, app_id = _identify(path, conn)
        if version == 0 and app_id == 0:
            conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise JournalError(f"the journal {path} cannot use write-ahead logging here")
        conn.execute("PRAGMA synchronous = " + ("FULL" if sync == "full" else "NORMAL"))
        with transaction(conn):
            version, app_id = _identify(path, conn)  # another process may have upgraded it
            for step in range(version + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[step]:
                    conn.execute(statement)
            if version < SCHEMA_VERSION:
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        configure(conn, sync)
        if not os.path.exists(_marker(path)):
            from agent_bridge.private_files import open_private

            os.close(open_private(_marker(path), os.O_WRONLY))
    except OSError as exc:
        conn.close()
        raise JournalError(f"cannot create {_marker(path)}: {exc.strerror}") from None
    except JournalError:
        conn.close()
        raise
    except sqlite3.Error as exc:
        conn.close()
        raise explain(path, exc) from None
    return conn


def _quick_check(path: str, conn: sqlite3.Connection) -> None:
    """Raise :class:`JournalCorrupt` if SQLite finds the file's pages damaged."""
    try:
        row = conn.execute("PRAGMA quick_check(1)").fetchone()
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            return  # checked by the opening transaction below
        raise JournalCorrupt(
            f"the journal {path} is damaged ({' '.join(str(exc).split())}); "
            f"{_DAMAGED_ADVICE.replace('FILE', path)}"
        ) from None
    if row is None or row[0] != "ok":
        detail = "?" if row is None else " ".join(str(row[0]).split())[:80]
        raise JournalCorrupt(
            f"the journal {path} is damaged ({detail}); {_DAMAGED_ADVICE.replace('FILE', path)}"
        )


def _identify(path: str, conn: sqlite3.Connection) -> tuple[int, int]:
    """Return ``(user_version, application_id)``; raise for a newer or foreign file."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
    tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    if app_id != APPLICATION_ID and (app_id != 0 or version != 0 or tables):
        raise JournalError(
            f"{path} is not an agent-bridge journal; move it away or choose another --state-dir"
        )
    if version > SCHEMA_VERSION:
        raise JournalError(
            f"the journal {path} was written by a newer agent-bridge (schema version "
            f"{version}; this one reads up to {SCHEMA_VERSION}); upgrade agent-bridge "
            "or choose another --state-dir"
        )
    return version, app_id


def configure(conn: sqlite3.Connection, sync: Sync) -> None:
    """Set the per-connection pragmas every journal connection uses."""
    conn.execute("PRAGMA synchronous = " + ("FULL" if sync == "full" else "NORMAL"))
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("PRAGMA wal_autocheckpoint = 4000")
    conn.execute("PRAGMA cache_size = -8192")


def database_path(state_dir: str) -> str:
    """Return the journal file's path in ``state_dir``."""
    from agent_bridge.journal.paths import JOURNAL_FILE

    return os.path.join(state_dir, JOURNAL_FILE)
