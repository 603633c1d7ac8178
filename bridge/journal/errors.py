"""The journal's exceptions, and how a SQLite failure is classified.

:class:`JournalError`: the journal cannot be used, in one line.  :class:`JournalCorrupt`:
it is damaged (detected at open, by a read, or by a commit) and is never written to
again.  :func:`classify` names what a failed commit means, so that the writer retries
what can heal (a full disk, an I/O error, a read-only remount) and stops on damage.
"""

from __future__ import annotations

import sqlite3
import zlib
from typing import Final, Literal

import msgspec

__all__ = ["DAMAGE", "Fault", "JournalCorrupt", "JournalError", "classify"]

Fault = Literal["disk_full", "io_error", "read_only", "damaged", "other"]

#: What reading a damaged file can raise besides SQLite's own errors: a block whose
#: compressed data or envelope was changed, a row whose JSON was.
DAMAGE: Final = (zlib.error, msgspec.DecodeError, msgspec.ValidationError, ValueError)

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
