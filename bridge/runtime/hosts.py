"""A fleet member's attached hosts, published so every member lists the fleet's count.

``session/list``'s ``attachedHosts`` on a fleet (``docs/fleet.md``) is the sum over the
members: each member keeps one row per session it has hosts on (its own sessions'
subscribers and the hosts following another member's sessions from it) in the journal,
under its owner token, so the rows of a member whose lease expired stop counting at
once and are deleted with its owner row.  :class:`HostCounts` writes what changed: a
subscriber coming or going marks it dirty (no I/O on that path), one task writes the
difference from what it wrote last, and a listing writes it first itself (so this
member's own count is never stale in its own list).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import anyio

from agent_bridge.journal import JournalError, Routable

__all__ = ["HostCounts"]

log = logging.getLogger("agent_bridge.runtime")


class HostCounts:
    """Publishes ``count()`` (session id -> hosts attached here) to ``history``."""

    def __init__(self, history: Routable, count: Callable[[], dict[str, int]]) -> None:
        self._history = history
        self._count = count
        self._written: dict[str, int] = {}
        self._dirty = anyio.Event()
        self._lock = anyio.Lock()

    def changed(self) -> None:
        """A host attached or went away (called on the event loop; no I/O here)."""
        self._dirty.set()

    async def sync(self) -> None:
        """Write the counts that changed since the last write; raises
        :class:`JournalError` (what was not written is written at the next change)."""
        async with self._lock:
            self._dirty = anyio.Event()
            now = self._count()
            changes = {sid: n for sid, n in now.items() if self._written.get(sid) != n}
            changes.update({sid: 0 for sid in self._written if sid not in now})
            if not changes:
                return
            try:
                await self._history.publish_hosts(changes)
            except JournalError:
                self._dirty.set()
                raise
            self._written = now

    async def run(self) -> None:
        """Write each change as it comes, until cancelled."""
        while True:
            await self._dirty.wait()
            try:
                await self.sync()
            except JournalError as exc:
                log.warning("fleet: cannot publish this member's attached hosts (%s)", exc)
                await anyio.sleep(1)  # the next change (or this retry) writes them
