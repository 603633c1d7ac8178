"""Crash recovery: ending what a bridge process that died left open in the journal.

A session is *owned* by the bridge process that has it open (``sessions.owner``).  When
that process ends without closing it (SIGKILL, OOM, power loss) the next bridge to open
the journal — at start-up, or when asked to resume one of its sessions — finds the owner
gone (see :mod:`agent_bridge.journal.owners`) and, in one transaction per dead owner, appends
to each of its sessions, after the last committed event:

1. ``interaction.settled`` (``cancelled``, ``auto``) for each interaction still pending;
2. ``run.failed`` with the error ``bridge_crashed`` (retryable) for each run started but
   not ended;
3. ``session.closed`` with reason ``bridge_crashed``.

The session is then closed and unowned: ``session/resume {sessionId}`` reopens it.

Except a run that waits on an interaction in a session whose policy says
``resumesTurns`` (its provider has ``recovery.resumeTurn``): it and its pending
interactions stay open, and the bridge that reopens the session continues it under its
run id (:mod:`agent_bridge.runtime.continuing`), the interactions offered again under
their ids.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TypeVar

from agent_bridge.envelope import EnvelopeFormat, stamp
from agent_bridge.ids import Clock
from agent_bridge.journal.base import decode_policy
from agent_bridge.journal.blocks import TYPE_CODES
from agent_bridge.journal.owners import dead_owner
from agent_bridge.journal.queries import Executes, Marker, marked
from agent_bridge.journal.rows import insert_events, last_sequence
from agent_bridge.journal.transactions import transaction
from agent_bridge.wire.errors import ErrorInfo
from agent_bridge.wire.events import EventPayload, InteractionSettled, RunFailed, SessionClosed

__all__ = ["close_crashed", "close_crashed_session", "recover_dead_owners"]

C = TypeVar("C", bound=Executes)


def recover_dead_owners(
    conn: sqlite3.Connection, state_dir: str, me: str, clock: Clock
) -> list[str]:
    """Recover every session whose owner is gone; return their ids.  Owners that are
    alive (another bridge on the same journal) are left alone."""
    owners = {
        str(row[0])
        for row in conn.execute(
            "SELECT owner FROM sessions WHERE owner IS NOT NULL UNION SELECT token FROM owners"
        )
    }
    owners.discard(me)
    recovered: list[str] = []
    for token in sorted(owners):
        with dead_owner(state_dir, token) as dead:
            if dead:
                recovered += recover_owner(conn, token, clock)
    return recovered


def recover_owner(conn: sqlite3.Connection, token: str, clock: Clock) -> list[str]:
    """Close the sessions of the dead owner ``token`` in one transaction; return their
    ids.  The caller holds the owner's lock."""
    with transaction(conn):
        sessions = conn.execute(
            "SELECT skey, session_id, state FROM sessions WHERE owner = ?", (token,)
        ).fetchall()
        for skey, session_id, state in sessions:
            close_crashed_session(conn, int(skey), str(session_id), str(state), clock)
        conn.execute("DELETE FROM owners WHERE token = ?", (token,))
    return [str(row[1]) for row in sessions]


def close_crashed_session(
    conn: sqlite3.Connection, skey: int, session_id: str, state: str, clock: Clock
) -> int:
    """Append the closing events of a crashed session (see the module docstring) and mark
    it closed and unowned; return how many events were appended.  Runs inside the
    caller's transaction."""
    return close_crashed(conn, skey, session_id, state, clock, "?", last_sequence, insert_events)


def close_crashed(
    conn: C,
    skey: int,
    session_id: str,
    state: str,
    clock: Clock,
    marker: Marker,
    last_seq: Callable[[C, int], int],
    insert: Callable[[C, int, int, bytes, list[bytes]], int],
) -> int:
    """:func:`close_crashed_session` on any backend: ``marker`` is its parameter marker
    (``?`` or ``%s``; the statements are written with ``?``), ``last_seq`` and ``insert``
    its sequence and event-insert functions; return how many events were appended."""

    def q(statement: str) -> str:
        return marked(statement, marker)

    now = clock.now_iso()
    stamp_at = now.encode()
    fmt = EnvelopeFormat(session_id)
    sequence = last_seq(conn, skey)
    first = sequence + 1
    items: list[tuple[int, bytes]] = []

    def append(run_id: str | None, payload: EventPayload) -> int:
        nonlocal sequence
        sequence += 1
        items.append((TYPE_CODES[type(payload)], stamp(fmt, sequence, run_id, stamp_at, payload)))
        return sequence

    row = conn.execute(q("SELECT policy FROM sessions WHERE skey = ?"), (skey,)).fetchone()
    policy = None if row is None or row[0] is None else bytes(row[0])
    turns = bool((decode_policy(policy) or {}).get("resumesTurns"))
    pending = conn.execute(
        q(
            "SELECT interaction_id, run_id FROM interactions WHERE skey = ? "
            "AND status = 'pending' ORDER BY interaction_id"
        ),
        (skey,),
    ).fetchall()
    runs = conn.execute(
        q("SELECT run_id FROM runs WHERE skey = ? AND ended_seq IS NULL ORDER BY started_seq"),
        (skey,),
    ).fetchall()
    # a run that waits on an interaction, of a provider that continues such a run
    # (recovery.resumeTurn, which the runtime notes as the session's resumesTurns): kept
    # open, with its pending interactions, for the bridge that resumes the session
    kept = {str(r) for _, r in pending} & {str(r) for (r,) in runs} if turns else set()
    for interaction_id, run_id in pending:
        if str(run_id) in kept:
            continue
        append(str(run_id), InteractionSettled(str(interaction_id), "cancelled", None, True))
        conn.execute(
            q("UPDATE interactions SET status = 'cancelled' WHERE skey = ? AND interaction_id = ?"),
            (skey, interaction_id),
        )
    for (run_id,) in runs:
        if str(run_id) in kept:
            continue
        ended = append(str(run_id), RunFailed(error=ErrorInfo.of("bridge_crashed")))
        conn.execute(
            q("UPDATE runs SET ended_seq = ?, state = 'failed' WHERE skey = ? AND run_id = ?"),
            (ended, skey, run_id),
        )
    if state != "closed":
        append(None, SessionClosed(reason="bridge_crashed"))
    stored = 0
    if items:
        stored = insert(
            conn, skey, first, bytes(code for code, _ in items), [body for _, body in items]
        )
    conn.execute(
        q(
            "UPDATE sessions SET state = 'closed', owner = NULL, updated_at = ?, "
            "bytes = bytes + ? WHERE skey = ?"
        ),
        (now, stored, skey),
    )
    return len(items)
