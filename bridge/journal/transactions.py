"""One write transaction on a journal connection, written once.

Why this module exists: every write the journal makes outside the writer's row helpers
(opening and upgrading the file, registering an owner, claiming and deleting sessions,
crash recovery, retention, the writer's group commit) is one ``BEGIN IMMEDIATE`` …
``COMMIT`` that must be rolled back when anything in it fails, and that block was
copied into each of them.  :func:`transaction` is the block.

Connections are opened in autocommit mode (:func:`agent_bridge.journal.schema.connect`), so
transactions are explicit; ``IMMEDIATE`` takes the write lock at ``BEGIN``, so a busy
journal fails there (``SQLITE_BUSY``) rather than half-way through.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from types import TracebackType

__all__ = ["begin_immediate", "transaction"]


def begin_immediate(conn: sqlite3.Connection) -> None:
    """Start a write transaction on ``conn``; raises :class:`sqlite3.Error` (e.g.
    ``OperationalError`` "database is locked" past the busy timeout)."""
    conn.execute("BEGIN IMMEDIATE")


class _Transaction:
    """The context manager :func:`transaction` returns."""

    __slots__ = ("_begin", "_conn", "_on_abort")

    def __init__(
        self,
        conn: sqlite3.Connection,
        begin: Callable[[sqlite3.Connection], None],
        on_abort: Callable[[], None] | None,
    ) -> None:
        self._conn = conn
        self._begin = begin
        self._on_abort = on_abort

    def __enter__(self) -> sqlite3.Connection:
        self._begin(self._conn)
        return self._conn

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            try:
                self._conn.execute("COMMIT")
            except BaseException:
                self._abort()
                raise
        else:
            self._abort()  # returning None lets the body's exception propagate

    def _abort(self) -> None:
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")
        if self._on_abort is not None:
            self._on_abort()


def transaction(
    conn: sqlite3.Connection,
    *,
    begin: Callable[[sqlite3.Connection], None] = begin_immediate,
    on_abort: Callable[[], None] | None = None,
) -> _Transaction:
    """Return a context manager running its body as one write transaction on ``conn``.

    Entering calls ``begin(conn)`` (``BEGIN IMMEDIATE`` by default; a caller may retry a
    busy journal in its own ``begin``) and returns ``conn``; if ``begin`` raises, the
    exception propagates and nothing else happens.  Leaving normally runs ``COMMIT``.
    If the body or the ``COMMIT`` raises (any :class:`BaseException`, cancellation
    included), the transaction is rolled back if it is still open, then ``on_abort`` is
    called, then the exception propagates unchanged; an exception raised by the
    ``ROLLBACK`` or by ``on_abort`` propagates instead, chained to it.
    """
    return _Transaction(conn, begin, on_abort)
