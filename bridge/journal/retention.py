"""Retention: how much closed history the journal keeps.

Two caps, either or both (``serve --retain-days`` and ``--retain-mb``):

* age: a closed session whose last activity (``updatedAt``) is older than the cap is
  deleted;
* size: while the sessions' stored bytes (envelopes and raw records) add up to more
  than the cap, the closed session with the oldest activity is deleted.

Open sessions (in this or any other live bridge process) are never deleted, so the size
cap can be exceeded by them.  The caps are applied when the journal is opened and then by
the writer thread after commits (see :class:`RetentionClock`), never by a timer of its own.
"""

from __future__ import annotations

import sqlite3
import time

import msgspec

from agent_bridge.journal.rows import delete_session_rows
from agent_bridge.journal.transactions import transaction

__all__ = ["Retention", "RetentionClock", "apply_retention"]


class Retention(msgspec.Struct, frozen=True):
    """The caps; ``None`` means no cap of that kind."""

    max_age_days: float | None = None
    max_bytes: int | None = None

    @property
    def enabled(self) -> bool:
        """Whether any cap is set."""
        return self.max_age_days is not None or self.max_bytes is not None


class RetentionClock:
    """Decides, after each commit, whether retention is due: after ``min(cap / 8,
    16 MiB)`` bytes were written since the last pass (size cap), or ``interval`` seconds
    after it (age cap)."""

    def __init__(self, policy: Retention, *, interval: float = 600.0) -> None:
        self.policy = policy
        self.interval = interval
        self._budget = (
            min(policy.max_bytes // 8, 16 * 1024 * 1024) if policy.max_bytes is not None else None
        )
        self._written = 0
        self._last = time.monotonic()

    def wrote(self, nbytes: int) -> bool:
        """Count ``nbytes`` just committed; return whether a retention pass is due now
        (and, if so, start counting afresh)."""
        if not self.policy.enabled:
            return False
        self._written += nbytes
        now = time.monotonic()
        due = (self._budget is not None and self._written >= self._budget) or (
            self.policy.max_age_days is not None and now - self._last >= self.interval
        )
        if due:
            self._written = 0
            self._last = now
        return due


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch)) + ".000Z"


def apply_retention(
    conn: sqlite3.Connection, policy: Retention, now: float | None = None
) -> list[str]:
    """Delete the closed sessions the caps say to delete, in one transaction; return their
    ids.  A session a fork reads from is kept (its fork's history is partly its own).
    ``now`` is a Unix time (default: the current time)."""
    if not policy.enabled:
        return []
    now = time.time() if now is None else now
    deleted: list[str] = []
    with transaction(conn):
        if policy.max_age_days is not None:
            cutoff = _iso(now - policy.max_age_days * 86400.0)
            for skey, session_id in conn.execute(
                "SELECT skey, session_id FROM sessions WHERE state = 'closed' AND updated_at < ? "
                "AND NOT EXISTS (SELECT 1 FROM sessions f WHERE f.parent_id = sessions.session_id)",
                (cutoff,),
            ).fetchall():
                delete_session_rows(conn, int(skey))
                deleted.append(str(session_id))
        if policy.max_bytes is not None:
            total = int(conn.execute("SELECT COALESCE(SUM(bytes), 0) FROM sessions").fetchone()[0])
            if total > policy.max_bytes:
                oldest = conn.execute(
                    "SELECT skey, session_id, bytes FROM sessions WHERE state = 'closed' "
                    "AND NOT EXISTS "
                    "(SELECT 1 FROM sessions f WHERE f.parent_id = sessions.session_id) "
                    "ORDER BY updated_at, skey"
                ).fetchall()
                for skey, session_id, size in oldest:
                    if total <= policy.max_bytes:
                        break
                    delete_session_rows(conn, int(skey))
                    deleted.append(str(session_id))
                    total -= int(size)
    if deleted:
        # Each step of this pragma frees one page: fetch them all.
        conn.execute("PRAGMA incremental_vacuum").fetchall()
    return deleted
