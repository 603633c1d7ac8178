"""Durable session history: an embedded SQLite journal, or memory.

:func:`open_history` picks the backend from the state-directory setting (see
:mod:`agent_bridge.journal.paths`).  The runtime talks to either through the
:class:`~agent_bridge.journal.base.History` port.  ``docs/journal.md`` describes the design:
tables, write path, durability bounds, recovery and retention.
"""

from __future__ import annotations

from agent_bridge.journal.base import History, SessionRecord
from agent_bridge.journal.blocks import TYPE_CODES
from agent_bridge.journal.errors import JournalBroken, JournalCorrupt, JournalError
from agent_bridge.journal.memory import DEFAULT_MEMORY_HISTORY_MB, MemoryHistory
from agent_bridge.journal.paging import page_range
from agent_bridge.journal.paths import MEMORY, resolve_state_dir
from agent_bridge.journal.raw import encode_raw
from agent_bridge.journal.retention import Retention
from agent_bridge.journal.schema import DEFAULT_SYNC, Sync
from agent_bridge.journal.settle import settle

__all__ = [
    "TYPE_CODES",
    "History",
    "JournalBroken",
    "JournalCorrupt",
    "JournalError",
    "MemoryHistory",
    "Retention",
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
) -> History:
    """Return the history for ``state_dir`` (the ``--state-dir`` value, or ``None`` for
    the environment or platform default): :class:`MemoryHistory` for ``:memory:``, else
    the opened journal; ``memory_bytes`` bounds the memory history.  Raises
    :class:`JournalError`."""
    resolved = resolve_state_dir(state_dir)
    if resolved == MEMORY:
        return MemoryHistory(memory_bytes)
    from agent_bridge.journal.journal import Journal

    return Journal.open(resolved, retention=retention, sync=sync)
