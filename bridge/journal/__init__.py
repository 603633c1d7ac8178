"""Durable session history: an embedded SQLite journal, a PostgreSQL one, or memory.

:func:`open_history` picks the backend: PostgreSQL when ``--journal postgresql://…``
names a database (``docs/fleet.md``), else from the state-directory setting (see
:mod:`agent_bridge.journal.paths`).  The runtime talks to either through the
:class:`~agent_bridge.journal.base.History` port.  ``docs/journal.md`` describes the design:
tables, write path, durability bounds, recovery and retention.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_bridge.journal.base import Followable, History, Member, Routable, SessionRecord
from agent_bridge.journal.blocks import TYPE_CODES
from agent_bridge.journal.errors import JournalBroken, JournalCorrupt, JournalError
from agent_bridge.journal.paths import DEFAULT_MEMORY_HISTORY_MB, MEMORY, resolve_state_dir
from agent_bridge.journal.retention import Retention
from agent_bridge.journal.schema import DEFAULT_SYNC, Sync
from agent_bridge.journal.writer import WriterMode

if TYPE_CHECKING:
    from agent_bridge.journal.memory import MemoryHistory
    from agent_bridge.journal.paging import page_range
    from agent_bridge.journal.raw import encode_raw
    from agent_bridge.journal.settle import settle

# Imported at first use (PEP 562): ``serve`` opens its journal before its first reply and
# needs none of these then (the memory history only for ``:memory:``; paging, raw records
# and settling once sessions are read or run).
_LAZY = {
    "MemoryHistory": "agent_bridge.journal.memory",
    "page_range": "agent_bridge.journal.paging",
    "encode_raw": "agent_bridge.journal.raw",
    "settle": "agent_bridge.journal.settle",
}


def __getattr__(name: str) -> Any:
    """The names of :data:`_LAZY`, imported (and kept here) at first use; raises
    :class:`AttributeError` for any other name."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "TYPE_CODES",
    "Followable",
    "History",
    "JournalBroken",
    "JournalCorrupt",
    "JournalError",
    "Member",
    "MemoryHistory",
    "Retention",
    "Routable",
    "SessionRecord",
    "Sync",
    "encode_raw",
    "open_history",
    "page_range",
    "settle",
]


def open_history(
    state_dir: str | None,
    *,
    retention: Retention = Retention(),  # noqa: B008 - frozen
    sync: Sync = DEFAULT_SYNC,
    memory_bytes: int = DEFAULT_MEMORY_HISTORY_MB * 1024 * 1024,
    journal: str | None = None,
    lease: float | None = None,
    node: str | None = None,
    writer: WriterMode = "auto",
    providers: tuple[str, ...] | None = None,
    roots: tuple[str, ...] | None = None,
) -> History:
    """Return the history for ``state_dir`` (the ``--state-dir`` value, or ``None`` for
    the environment or platform default): :class:`MemoryHistory` for ``:memory:``, else
    the opened journal; ``memory_bytes`` bounds the memory history.  ``journal`` (the
    ``--journal`` value) names a PostgreSQL database instead: then the journal is there
    (:mod:`agent_bridge.journal.postgres`, whose driver is imported only then), ``lease``
    is its owner lease in seconds, ``node`` this member's name, ``providers`` and
    ``roots`` what it serves (``docs/fleet.md``; ignored without ``journal``).  ``writer``
    says who commits to a SQLite journal (``--journal-writer``: ``thread``, ``process``
    or ``auto``, see :mod:`agent_bridge.journal.writer_process`).  Raises
    :class:`JournalError`."""
    if journal is not None:
        from agent_bridge.journal.postgres import DEFAULT_LEASE, open_pg_journal

        return open_pg_journal(
            journal,
            retention=retention,
            lease=DEFAULT_LEASE if lease is None else lease,
            node=node,
            providers=providers,
            roots=roots,
        )
    resolved = resolve_state_dir(state_dir)
    if resolved == MEMORY:
        from agent_bridge.journal.memory import MemoryHistory

        return MemoryHistory(memory_bytes)
    from agent_bridge.journal.journal import Journal

    return Journal.open(resolved, retention=retention, sync=sync, writer=writer)
