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
  ``journal.created``, written once the schema is first committed, is there) and no
  write-ahead log: refused as emptied.  A 0-byte file without the marker is a journal
  another bridge has just begun to create, or a new one: created.  A missing file is a
  new journal (the user moved the old one away), marker or not;
* a file whose pages SQLite finds damaged (``PRAGMA quick_check``, which reads through
  the write-ahead log): refused;
* a ``-shm`` file without its ``-wal`` (the log of committed transactions was lost):
  refused, before SQLite would silently open the older state.

A refusal is certain: what is only suspected from the raw file (shorter than its header
says) is never a reason by itself, because the newest pages may sit in the write-ahead log
(a checkpoint cut short by a full disk leaves exactly that: page 1 already rewritten, the
file not yet extended); it names the damage SQLite itself found.  A failure that is not
damage (a full disk, an I/O error, a read-only filesystem) is reported as what it is,
never as damage, and no refusal advises discarding data that SQLite can read.

Every refusal is a :class:`JournalError` (:class:`JournalCorrupt` for damage) with a
one-line message.  The checks, the creation and the upgrade run holding an exclusive
``flock`` on ``journal.open.lock``, so two bridges opening a fresh state directory at
once never see each other's half-created file.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import sys
import time
from collections.abc import Iterator
from typing import Final, Literal

from agent_bridge.journal.errors import JournalCorrupt, JournalError, classify, on_read_only_fs
from agent_bridge.journal.transactions import transaction

__all__ = [
    "APPLICATION_ID",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "configure",
    "configure_sync",
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
    "keep a copy of it and of its -wal file, then save what SQLite can still read "
    "(sqlite3 FILE .recover) or restore a backup; or choose another --state-dir"
)
#: A write-ahead log holds frames past its 32-byte header.
_WAL_HEADER: Final = 32
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

#: Version 3: the bytes of run inputs' images, stored once by their SHA-256 (``blobs``)
#: and referenced by the sessions whose runs sent them (``blob_refs``); a blob goes with
#: the last session that references it.
_V3: Final = (
    """CREATE TABLE blobs (
        sha256 TEXT PRIMARY KEY,
        size INTEGER NOT NULL,
        data BLOB NOT NULL
    )""",
    """CREATE TABLE blob_refs (
        skey INTEGER NOT NULL,
        sha256 TEXT NOT NULL,
        PRIMARY KEY (skey, sha256)
    ) WITHOUT ROWID""",
    "CREATE INDEX blob_refs_sha256 ON blob_refs(sha256)",
)

#: Version 4: forks.  A fork names its parent session and the sequence it was forked at
#: (its history reads the parent's up to there: nothing is copied), and a run keeps the
#: provider's position at its end (what a fork at that run is made from).
_V4: Final = (
    "ALTER TABLE sessions ADD COLUMN parent_id TEXT",
    "ALTER TABLE sessions ADD COLUMN fork_seq INTEGER NOT NULL DEFAULT 0",
    "CREATE INDEX sessions_parent ON sessions(parent_id) WHERE parent_id IS NOT NULL",
    "ALTER TABLE runs ADD COLUMN position BLOB",
)

#: Version 5: provider sessions bound to bridge sessions (``provider/sessions/continue``):
#: one bridge session per provider session, whichever bridge process binds it first.
_V5: Final = (
    """CREATE TABLE native_bindings (
        provider_id TEXT NOT NULL,
        native_ref TEXT NOT NULL,
        session_id TEXT NOT NULL,
        PRIMARY KEY (provider_id, native_ref)
    ) WITHOUT ROWID""",
    "CREATE INDEX native_bindings_session ON native_bindings(session_id)",
)

#: Version 6: fork points inside runs.  A provider that forks at its messages (not only
#: between its turns) names its position after each; a fork at an event inside a run is
#: made from the latest at or before it.
_V6: Final = (
    """CREATE TABLE fork_points (
        skey INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        position BLOB NOT NULL,
        PRIMARY KEY (skey, seq)
    ) WITHOUT ROWID""",
)

#: Version 7: a session's policy (``retryOnLimit``, the model and mode switched by
#: ``session/configure``), JSON, kept for a reopen in a later bridge process.
_V7: Final = ("ALTER TABLE sessions ADD COLUMN policy BLOB",)

#: Version 8: event blocks are written Zstandard-compressed (``codec`` 2,
#: :mod:`agent_bridge.journal.blocks`; the zlib blocks already there stay as they are and
#: are still read).  No table changes: the version makes an older bridge, which cannot
#: read those blocks, refuse the file as newer instead of taking them for damage.
_V8: Final[tuple[str, ...]] = ()

#: Version n is reached from n - 1 by running ``MIGRATIONS[n]``.
MIGRATIONS: Final[dict[int, tuple[str, ...]]] = {
    1: _V1,
    2: _V2,
    3: _V3,
    4: _V4,
    5: _V5,
    6: _V6,
    7: _V7,
    8: _V8,
}
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


def _not_a_file(mode: int) -> str:
    """What a path whose ``st_mode`` is ``mode`` is, when it is not a regular file."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"


def check_files(path: str) -> None:
    """Refuse a journal, or its write-ahead log or wal-index, that is there but is not a
    regular file: opening a named pipe waits for a writer for ever (the bridge hung at
    start, silent), and a device (a link to ``/dev/null``) read as an I/O error of the
    disk.  Raises :class:`JournalError` naming the file and what it is (``doctor``
    reports the same line)."""
    for name in (path, path + "-wal", path + "-shm"):
        try:
            mode = os.stat(name).st_mode
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise JournalError(f"cannot read the journal {name}: {exc.strerror}") from None
        if not stat.S_ISREG(mode):
            raise JournalError(
                f"the journal {name} is {_not_a_file(mode)}, not a file; "
                "move it away or choose another --state-dir"
            )


def _check_header(path: str) -> None:
    check_files(path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(100)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise JournalError(f"cannot read the journal {path}: {exc.strerror}") from None
    if not head and os.path.exists(_marker(path)) and not _wal_has_frames(path):
        raise JournalCorrupt(
            f"the journal {path} is empty (0 bytes, no write-ahead log), but this state "
            f"directory held a journal; restore it from a backup, or delete it and "
            f"{_marker(path)} to start a new one"
        )
    if head and (len(head) < 100 or not head.startswith(_SQLITE_MAGIC)):
        raise JournalError(
            f"the journal {path} is not a SQLite database (damaged?); "
            "move it away or choose another --state-dir"
        )
    if os.path.exists(path + "-shm") and not os.path.exists(path + "-wal"):
        time.sleep(0.1)  # another bridge closing the journal deletes the -wal first
        if os.path.exists(path + "-shm") and not os.path.exists(path + "-wal"):
            missing = _frames_not_checkpointed(path + "-shm")
            if missing:
                raise JournalCorrupt(
                    f"the journal {path} lost its write-ahead log ({path}-wal is missing; "
                    f"{path}-shm says {missing} committed pages were only in it); restore "
                    f"the -wal file, or {_DAMAGED_ADVICE.replace('FILE', path)}"
                )


def _frames_not_checkpointed(shm: str) -> int:
    """Return how many frames of the write-ahead log the wal-index ``shm`` says were
    never copied into the journal file (``mxFrame - nBackfill``; SQLite's wal-index
    header, native byte order); 1 when the file cannot be read or makes no sense, so that
    only a wal-index that proves nothing was lost lets the journal open."""
    try:
        with open(shm, "rb") as fh:
            head = fh.read(136)
    except OSError:
        return 1
    if len(head) < 100 or head[12] != 1 or head[:48] != head[48:96]:
        return 1  # not initialised, or the two copies of the header disagree
    max_frame = int.from_bytes(head[16:20], sys.byteorder)
    backfilled = int.from_bytes(head[96:100], sys.byteorder)
    return max(max_frame - backfilled, 0) if backfilled <= max_frame else 1


def _wal_has_frames(path: str) -> bool:
    """Whether the journal's write-ahead log exists and holds frames (committed pages
    that the journal file itself may not have yet)."""
    try:
        return os.path.getsize(path + "-wal") > _WAL_HEADER
    except OSError:
        return False


def _truncated(path: str) -> bool:
    """Whether the journal file is shorter than the page count its header records, with
    no write-ahead log that could hold the missing pages (used only to name damage that
    SQLite found, never as a reason to refuse by itself)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(100)
        size = os.path.getsize(path)
    except OSError:
        return False
    return len(head) == 100 and _pages_missing(head, size) and not _wal_has_frames(path)


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
    """Return the one-line :class:`JournalError` for a SQLite error on ``path``:
    :class:`JournalCorrupt` only for damage SQLite reports (``SQLITE_CORRUPT``,
    ``SQLITE_NOTADB``); a full disk, an I/O error, a read-only filesystem are named as
    such, with the journal left as it is."""
    text = " ".join(str(exc).split())
    if "locked" in text or "busy" in text:
        return JournalError(
            f"the journal {path} is locked by another program; "
            "close it or choose another --state-dir"
        )
    fault = on_read_only_fs(classify(exc), os.path.dirname(path) or ".")
    if fault == "damaged":
        what = "shorter than its header says: truncated" if _truncated(path) else text
        return JournalCorrupt(
            f"the journal {path} is damaged ({what}); {_DAMAGED_ADVICE.replace('FILE', path)}"
        )
    if fault == "disk_full":
        return JournalError(
            f"the disk holding the journal {path} is full ({_free(path)} free); free some "
            "space and start again (the journal was not changed)"
        )
    if fault == "read_only":
        return JournalError(
            f"the filesystem holding the journal {path} is read-only; remount it "
            "read-write or choose another --state-dir (the journal was not changed)"
        )
    if fault == "io_error":
        return JournalError(
            f"the journal {path} cannot be read or written (I/O error: {text}); check the "
            "disk (the journal was not changed)"
        )
    return JournalError(f"cannot use the journal {path}: {text}")


def _free(path: str) -> str:
    """The space left on the filesystem holding ``path``, for a person ("12 KiB")."""
    try:
        st = os.statvfs(os.path.dirname(path) or ".")
    except OSError:
        return "no space"
    free = st.f_bavail * st.f_frsize
    if free < 1024:
        return f"{free} bytes"
    if free < 1 << 20:
        return f"{free >> 10} KiB"
    return f"{free >> 20} MiB"


def open_journal_db(
    path: str, *, busy_timeout: float = 3.0, sync: Sync = DEFAULT_SYNC
) -> sqlite3.Connection:
    """Open (creating or upgrading) the journal at ``path`` and return a connection to it
    in WAL mode; raises :class:`JournalError` for a newer, foreign, damaged or locked
    file (which is then left untouched), :class:`JournalCorrupt` when it is damaged."""
    with _open_lock(path):
        return _open_locked(path, busy_timeout, sync)


#: the version from which blocks are written with Zstandard, which older bridges cannot read
_ZSTD_VERSION: Final = 8


def _no_older_bridges(path: str, conn: sqlite3.Connection, version: int) -> None:
    """Raise :class:`JournalError` when bridges of an older version (the file is at
    ``version``, below :data:`_ZSTD_VERSION`) are running on it: upgrading it under them
    would have them take the first Zstandard block they read for damage and stop serving
    the whole journal."""
    from agent_bridge.journal.owners import owner_alive

    state_dir = os.path.dirname(path)
    tokens = [str(row[0]) for row in conn.execute("SELECT token FROM owners")]
    live = [t for t in tokens if owner_alive(state_dir, t)]
    if live:
        raise JournalError(
            f"the journal {path} is in use by {len(live)} running bridge(s) of an older "
            f"agent-bridge (schema version {version}), which could not read what this one "
            "writes; stop them, then start this version"
        )


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
        configure_sync(conn, sync)
        with transaction(conn):
            version, app_id = _identify(path, conn)  # another process may have upgraded it
            if 1 <= version < _ZSTD_VERSION:
                _no_older_bridges(path, conn, version)
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
        raise explain(path, exc) from None
    if row is None or row[0] != "ok":
        detail = "?" if row is None else " ".join(str(row[0]).split())[:80]
        if _truncated(path):
            detail = f"shorter than its header says: truncated; {detail}"
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


def configure_sync(conn: sqlite3.Connection, sync: Sync) -> None:
    """Set the connection's ``synchronous`` pragma for the ``--journal-sync`` mode."""
    conn.execute("PRAGMA synchronous = " + ("FULL" if sync == "full" else "NORMAL"))


def configure(conn: sqlite3.Connection, sync: Sync) -> None:
    """Set the per-connection pragmas every journal connection uses."""
    configure_sync(conn, sync)
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("PRAGMA wal_autocheckpoint = 4000")
    conn.execute("PRAGMA cache_size = -8192")


def database_path(state_dir: str) -> str:
    """Return the journal file's path in ``state_dir``."""
    from agent_bridge.journal.paths import JOURNAL_FILE

    return os.path.join(state_dir, JOURNAL_FILE)
