"""SQL that the SQLite and PostgreSQL journals share, written once with ``?`` markers.

The two backends differ in their parameter marker (SQLite's ``?``, psycopg's ``%s``);
what a statement asks is the same, so it is written once here and each backend passes
its marker.  Where the dialects differ beyond the marker (SQLite's ``INSERT OR
REPLACE`` against PostgreSQL's ``ON CONFLICT``), :class:`OperationSql` holds each
dialect's statement for the writer's operations (:data:`SQLITE_OPS`, :data:`PG_OPS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = ["PG_OPS", "SQLITE_OPS", "Marker", "OperationSql", "marked", "sessions_filter"]

#: a backend's parameter marker
Marker = Literal["?", "%s"]


def marked(statement: str, marker: Marker) -> str:
    """Return ``statement`` (written with ``?`` markers, and no other ``?``) with
    ``marker`` in their place."""
    return statement if marker == "?" else statement.replace("?", marker)


def sessions_filter(
    provider: str | None, workspace: str | None, cursor: int | None, marker: Marker
) -> tuple[str, list[Any]]:
    """Return the ``WHERE`` clause (``""`` when nothing filters) and its arguments that
    select the sessions of ``provider`` in ``workspace`` below key ``cursor``, each
    ``None`` meaning any."""
    where: list[str] = []
    args: list[Any] = []
    for column, value in (("provider_id =", provider), ("workspace =", workspace)):
        if value is not None:
            where.append(f"{column} {marker}")
            args.append(value)
    if cursor is not None:
        where.append(f"skey < {marker}")
        args.append(cursor)
    return (" WHERE " + " AND ".join(where)) if where else "", args


@dataclass(frozen=True, slots=True)
class OperationSql:
    """One dialect's statements for the writer's operations other than events and images
    (:meth:`~agent_bridge.journal.committer.GroupCommitter._apply_other`), each with that
    dialect's markers."""

    #: the dialect's parameter marker (for the ``UPDATE sessions`` built per call)
    marker: Marker
    #: ``OP_SESSION``: insert a session row (session_id … updated_at, owner)
    session: str
    #: ``OP_RECEIPT``: insert a receipt once (command_id, skey, payload, result, created_at)
    receipt: str
    #: ``OP_RUN``: store a fork point (skey, seq, position), replacing one stored
    fork_point: str
    #: ``OP_RUN`` running: store the run as running (skey, run_id, started_seq)
    run_started: str
    #: ``OP_RUN`` ended: (ended_seq, state, position, skey, run_id)
    run_ended: str
    #: ``OP_INTERACTION``: store a pending interaction (skey, interaction_id, run_id, request)
    interaction: str
    #: ``OP_SETTLE``: (status, answer, skey, interaction_id)
    settle: str


_SESSION = (
    "INSERT INTO sessions (session_id, provider_id, provider_version, workspace, "
    "title, options, created_at, updated_at, state, owner) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'active', ?)"
)
_RECEIPT = "INTO receipts (command_id, skey, payload, result, created_at) VALUES (?, ?, ?, ?, ?)"
_FORK_POINT = "INTO fork_points (skey, seq, position) VALUES (?, ?, ?)"
_RUN_STARTED = (
    "INTO runs (skey, run_id, started_seq, ended_seq, state) VALUES (?, ?, ?, NULL, 'running')"
)
_RUN_ENDED = "UPDATE runs SET ended_seq = ?, state = ?, position = ? WHERE skey = ? AND run_id = ?"
_INTERACTION = (
    "INTO interactions (skey, interaction_id, run_id, status, request, answer) "
    "VALUES (?, ?, ?, 'pending', ?, NULL)"
)
_SETTLE = "UPDATE interactions SET status = ?, answer = ? WHERE skey = ? AND interaction_id = ?"

#: SQLite: a replayed session is skipped by the writer; a replace is ``INSERT OR REPLACE``
SQLITE_OPS: Final = OperationSql(
    marker="?",
    session=_SESSION,
    receipt="INSERT OR IGNORE " + _RECEIPT,
    fork_point="INSERT OR REPLACE " + _FORK_POINT,
    run_started="INSERT OR REPLACE " + _RUN_STARTED,
    run_ended=_RUN_ENDED,
    interaction="INSERT OR REPLACE " + _INTERACTION,
    settle=_SETTLE,
)

#: PostgreSQL: every insert is idempotent (``ON CONFLICT``), a commit of unknown outcome
#: being retried whole
PG_OPS: Final = OperationSql(
    marker="%s",
    session=marked(_SESSION + " ON CONFLICT (session_id) DO NOTHING", "%s"),
    receipt=marked("INSERT " + _RECEIPT + " ON CONFLICT (command_id) DO NOTHING", "%s"),
    fork_point=marked(
        "INSERT "
        + _FORK_POINT
        + " ON CONFLICT (skey, seq) DO UPDATE SET position = EXCLUDED.position",
        "%s",
    ),
    run_started=marked(
        "INSERT " + _RUN_STARTED + " ON CONFLICT (skey, run_id) DO UPDATE "
        "SET started_seq = EXCLUDED.started_seq, ended_seq = NULL, state = 'running'",
        "%s",
    ),
    run_ended=marked(_RUN_ENDED, "%s"),
    interaction=marked(
        "INSERT " + _INTERACTION + " ON CONFLICT (skey, interaction_id) DO UPDATE "
        "SET run_id = EXCLUDED.run_id, status = 'pending', request = EXCLUDED.request, "
        "answer = NULL",
        "%s",
    ),
    settle=marked(_SETTLE, "%s"),
)
