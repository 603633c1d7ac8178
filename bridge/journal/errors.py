"""The journal's exceptions, and how a SQLite failure is classified.

:class:`JournalError`: the journal cannot be used, in one line.  :class:`JournalCorrupt`:
it is damaged (detected at open, by a read, or by a commit) and is never written to
again.  :class:`JournalBroken`: a bug (not the storage) made a commit fail; nothing more
is written either.  :func:`classify` names what a failed read or commit means;
:func:`classify_commit` also tells a storage fault from a bug, so that the writer retries
what can heal (a full disk, an I/O error, a read-only remount), and stops on damage and
on a bug (retrying a bug forever would hold every run forever).
"""

from __future__ import annotations

import errno
import os
import sqlite3
from typing import Final, Literal

import msgspec

__all__ = [
    "DAMAGE",
    "Fault",
    "JournalBroken",
    "JournalCorrupt",
    "JournalError",
    "SequenceGap",
    "classify",
    "classify_commit",
    "on_read_only_fs",
]

Fault = Literal[
    "disk_full", "io_error", "read_only", "damaged", "other", "internal", "writer_exited"
]

#: SQLite exceptions that only a wrong statement, wrong parameters or a broken invariant
#: raise (``sqlite3.OperationalError`` and plain ``DatabaseError`` are the storage's).
_BUGS: Final = (
    sqlite3.IntegrityError,
    sqlite3.ProgrammingError,
    sqlite3.InterfaceError,
    sqlite3.DataError,
    sqlite3.NotSupportedError,
)

#: What reading a damaged file can raise besides SQLite's own errors: a block whose
#: compressed data or envelope was changed, a row whose JSON was.  (A damaged zlib or
#: Zstandard block raises ``ValueError``: :func:`~agent_bridge.journal.blocks.decode_bodies`.)
DAMAGE: Final = (msgspec.DecodeError, msgspec.ValidationError, ValueError)

_PRIMARY: Final[dict[int, Fault]] = {
    13: "disk_full",  # SQLITE_FULL
    10: "io_error",  # SQLITE_IOERR (and its extended codes)
    14: "io_error",  # SQLITE_CANTOPEN
    8: "read_only",  # SQLITE_READONLY
    11: "damaged",  # SQLITE_CORRUPT
    26: "damaged",  # SQLITE_NOTADB
}


class JournalError(Exception):
    """The journal cannot be used; ``str()`` is a one-line message for a person (it names
    the file and what to do), printed by ``serve`` on stderr before it exits non-zero."""


class JournalCorrupt(JournalError):
    """The journal file is damaged; nothing more is written to it."""


class JournalBroken(JournalError):
    """A bug made a commit fail; this process writes nothing more to the journal (the
    file itself is sound: a restart uses it again)."""


class SequenceGap(Exception):
    """A session's events handed to the writer do not continue its stored sequence (a
    gap, or an overlap outside the replay of a commit whose report was lost).  Gapless
    per-session sequences are a contract, so this is a broken invariant, never stored:
    the commit fails as ``internal`` (:func:`classify_commit`), nothing of it or after it
    is acknowledged durable, and the writer stops (the journal is ``broken``)."""

    def __init__(self, session_id: str, first: int, last: int) -> None:
        super().__init__(f"session {session_id} continues at {first} after {last} (not gapless)")
        self.session_id = session_id
        self.first = first
        self.last = last


def classify(exc: BaseException) -> Fault:
    """Return what a failed journal operation's exception means (never raises): a
    :class:`sqlite3.Error` by its result code, :data:`DAMAGE` as ``damaged``, anything
    else ``other``."""
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        if isinstance(code, int):
            return _PRIMARY.get(code & 0xFF, "other")
        text = str(exc).lower()
        if "full" in text:
            return "disk_full"
        if "malformed" in text or "not a database" in text:
            return "damaged"
        if "readonly" in text or "read-only" in text:
            return "read_only"
        return "io_error" if "i/o" in text else "other"
    if isinstance(exc, DAMAGE):
        return "damaged"
    return "other"


#: The file :func:`on_read_only_fs` tries to create (and removes at once).
_PROBE: Final = ".write-probe"


def on_read_only_fs(fault: Fault, directory: str) -> Fault:
    """Return ``read_only`` for an ``io_error``/``other`` fault when the filesystem
    holding ``directory`` refuses writes as read-only now, else ``fault`` (never raises).
    A filesystem remounted read-only under open files (ext4's ``errors=remount-ro``; an
    administrator's ``mount -o remount,ro`` is refused while files are open for writing)
    makes SQLite's writes fail with ``EROFS``, which it reports as ``SQLITE_IOERR``; such
    a remount does not always show in ``statvfs`` (ext4's ``emergency_ro``), so a file is
    created in ``directory`` to ask."""
    if fault not in ("io_error", "other"):
        return fault
    try:
        if os.statvfs(directory).f_flag & os.ST_RDONLY:
            return "read_only"
        probe = os.path.join(directory, _PROBE)
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT, 0o600))
        os.unlink(probe)
    except OSError as exc:
        return "read_only" if exc.errno == errno.EROFS else fault
    return fault


def classify_commit(exc: BaseException) -> Fault:
    """Return what an exception from applying or committing a transaction means (never
    raises): ``internal`` for a bug (:data:`_BUGS`, or anything that is not a
    :class:`sqlite3.Error` -- a ``TypeError``, ``KeyError``, a :class:`SequenceGap`, ...
    from the writer's own code), else as :func:`classify` (``MemoryError`` is ``other``:
    it may pass)."""
    if isinstance(exc, _BUGS):
        return "internal"
    if isinstance(exc, sqlite3.Error):
        return classify(exc)
    if isinstance(exc, MemoryError):
        return "other"
    return "internal"
