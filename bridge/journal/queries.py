"""SQL that the SQLite and PostgreSQL journals share, written once with ``?`` markers.

The two backends differ in their parameter marker (SQLite's ``?``, psycopg's ``%s``);
what a statement asks is the same, so it is written once here and each backend passes
its marker.  Where the dialects differ beyond the marker (SQLite's ``INSERT OR
REPLACE`` against PostgreSQL's ``ON CONFLICT``), :class:`OperationSql` holds each
dialect's statement for the writer's operations (:data:`SQLITE_OPS`, :data:`PG_OPS`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, Literal, Protocol

import msgspec

__all__ = [
    "CLAIM",
    "PG_OPS",
    "SQLITE_OPS",
    "UNBIND",
    "Executes",
    "Marker",
    "OpenTurn",
    "OperationSql",
    "bind_native",
    "deletable",
    "delete_session_rows",
    "fork_of",
    "interaction_state",
    "marked",
    "open_turns",
    "sessions_filter",
    "takeable",
]

#: a backend's parameter marker
Marker = Literal["?", "%s"]


def marked(statement: str, marker: Marker) -> str:
    """Return ``statement`` (written with ``?`` markers, and no other ``?``) with
    ``marker`` in their place."""
    return statement if marker == "?" else statement.replace("?", marker)


class Executes(Protocol):
    """A connection of either journal: ``sqlite3.Connection`` or ``psycopg.Connection``."""

    def execute(self, statement: str, args: Sequence[Any], /) -> Any:
        """Run ``statement`` with ``args``; return its cursor."""


#: the tables that hold a session's rows by ``skey`` (``sessions`` last)
_SESSION_TABLES: Final = (
    "event_blocks",
    "raw_links",
    "raw_records",
    "runs",
    "fork_points",
    "interactions",
    "receipts",
    "sessions",
)


def fork_of(conn: Executes, session_id: str, marker: Marker) -> tuple[int, str | None, int] | None:
    """``(skey, parent id, fork sequence)`` of a session, or ``None`` when there is none
    (the step :func:`agent_bridge.journal.forks.read_through_forks` walks by)."""
    row = conn.execute(
        marked("SELECT skey, parent_id, fork_seq FROM sessions WHERE session_id = ?", marker),
        (session_id,),
    ).fetchone()
    return None if row is None else (int(row[0]), row[1], int(row[2] or 0))


def delete_session_rows(conn: Executes, skey: int, marker: Marker) -> None:
    """Delete everything the journal holds about one session (and the blobs no other
    session references), inside the caller's transaction on ``conn``; raises what the
    storage raised."""
    shas = [
        row[0]
        for row in conn.execute(
            marked("SELECT sha256 FROM blob_refs WHERE skey = ?", marker), (skey,)
        ).fetchall()
    ]
    conn.execute(marked("DELETE FROM blob_refs WHERE skey = ?", marker), (skey,))
    orphan = marked(
        "DELETE FROM blobs WHERE sha256 = ? "
        "AND NOT EXISTS (SELECT 1 FROM blob_refs WHERE sha256 = ?)",
        marker,
    )
    for sha in shas:
        conn.execute(orphan, (sha, sha))
    conn.execute(
        marked(
            "DELETE FROM native_bindings WHERE session_id = "
            "(SELECT session_id FROM sessions WHERE skey = ?)",
            marker,
        ),
        (skey,),
    )
    for table in _SESSION_TABLES:
        conn.execute(f"DELETE FROM {table} WHERE skey = {marker}", (skey,))  # noqa: S608 - fixed names


def takeable(
    conn: Executes, session_id: str, marker: Marker, take_from_dead: Callable[[str], bool]
) -> int | Literal["not_found", "in_use"]:
    """Return the key of the session ``session_id`` if this process may take it (to
    claim or delete it), else why not: ``not_found``, or ``in_use`` (its owner is a
    live process: ``take_from_dead(owner)`` did not take the dead owner's sessions)."""
    row = conn.execute(
        marked("SELECT skey, owner FROM sessions WHERE session_id = ?", marker), (session_id,)
    ).fetchone()
    if row is None:
        return "not_found"
    if row[1] is not None and not take_from_dead(str(row[1])):
        return "in_use"
    return int(row[0])


def deletable(
    conn: Executes, session_id: str, marker: Marker, take_from_dead: Callable[[str], bool]
) -> int | Literal["not_found", "in_use", "has_forks"]:
    """Return the key of the session ``session_id`` if it may be deleted, else why not:
    :func:`takeable`'s reasons, or ``has_forks``."""
    skey = takeable(conn, session_id, marker, take_from_dead)
    if (
        isinstance(skey, int)
        and conn.execute(
            marked("SELECT 1 FROM sessions WHERE parent_id = ? LIMIT 1", marker), (session_id,)
        ).fetchone()
    ):
        return "has_forks"
    return skey


#: claim a session for owner ``?`` unless another owner holds it (owner, session_id, owner)
CLAIM: Final = (
    "UPDATE sessions SET owner = ?, state = 'active' "
    "WHERE session_id = ? AND (owner IS NULL OR owner = ?)"
)


_BIND = "INTO native_bindings (provider_id, native_ref, session_id) VALUES (?, ?, ?)"

#: drop a binding if it is to the session (provider_id, native_ref, session_id)
UNBIND: Final = (
    "DELETE FROM native_bindings WHERE provider_id = ? AND native_ref = ? AND session_id = ?"
)


def bind_native(
    conn: Executes, provider_id: str, native_ref: str, session_id: str, marker: Marker
) -> str:
    """Bind ``native_ref`` to ``session_id`` unless it is bound already (the table's key
    decides), inside the caller's transaction; return the session it is bound to."""
    insert = (
        "INSERT OR IGNORE " + _BIND
        if marker == "?"
        else marked("INSERT " + _BIND + " ON CONFLICT DO NOTHING", marker)
    )
    conn.execute(insert, (provider_id, native_ref, session_id))
    row = conn.execute(
        marked(
            "SELECT session_id FROM native_bindings WHERE provider_id = ? AND native_ref = ?",
            marker,
        ),
        (provider_id, native_ref),
    ).fetchone()
    return str(row[0])


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


class OperationSql(msgspec.Struct, frozen=True, kw_only=True):
    """One dialect's statements for the writer's operations other than images
    (:meth:`~agent_bridge.journal.committer.GroupCommitter._apply_other`) and for the raw
    records that come with events, each with that dialect's markers.  (A struct, not a
    dataclass: this module is imported before ``serve``'s first reply, and importing
    ``dataclasses`` and making the class cost about a millisecond there.)"""

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
    #: events: link events to their raw record (skey, first_seq, last_seq, raw_id),
    #: replacing one stored
    raw_link: str
    #: events: store a raw record (skey, raw_id, record), replacing one stored
    raw_record: str
    #: events and images: add to a session's stored bytes (bytes, skey)
    charge: str


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
_RAW_LINK = "INTO raw_links (skey, first_seq, last_seq, raw_id) VALUES (?, ?, ?, ?)"
_RAW_RECORD = "INTO raw_records (skey, raw_id, record) VALUES (?, ?, ?)"
_CHARGE = "UPDATE sessions SET bytes = bytes + ? WHERE skey = ?"
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
    raw_link="INSERT OR REPLACE " + _RAW_LINK,
    raw_record="INSERT OR REPLACE " + _RAW_RECORD,
    charge=_CHARGE,
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
    raw_link=marked(
        "INSERT " + _RAW_LINK + " ON CONFLICT (skey, first_seq) DO UPDATE "
        "SET last_seq = EXCLUDED.last_seq, raw_id = EXCLUDED.raw_id",
        "%s",
    ),
    raw_record=marked(
        "INSERT " + _RAW_RECORD + " ON CONFLICT (skey, raw_id) DO UPDATE "
        "SET record = EXCLUDED.record",
        "%s",
    ),
    charge=marked(_CHARGE, "%s"),
)


#: a run and its pending interactions, as :func:`open_turns` gives them
OpenTurn = tuple[str, int, list[tuple[str, bytes]]]


def open_turns(conn: Executes, session_id: str, marker: Marker) -> list[OpenTurn]:
    """The runs of ``session_id`` not ended (a bridge that died while they waited on an
    interaction left them open: :mod:`agent_bridge.journal.recovery`), oldest first,
    each as ``(run id, sequence of its run.started, [(interaction id, request JSON)])``
    of its pending interactions in id order."""
    runs = conn.execute(
        marked(
            "SELECT r.run_id, r.started_seq FROM runs r JOIN sessions s ON s.skey = r.skey "
            "WHERE s.session_id = ? AND r.ended_seq IS NULL ORDER BY r.started_seq",
            marker,
        ),
        (session_id,),
    ).fetchall()
    if not runs:
        return []
    pending: dict[str, list[tuple[str, bytes]]] = {}
    for interaction_id, run_id, request in conn.execute(
        marked(
            "SELECT i.interaction_id, i.run_id, i.request FROM interactions i "
            "JOIN sessions s ON s.skey = i.skey WHERE s.session_id = ? "
            "AND i.status = 'pending' ORDER BY i.interaction_id",
            marker,
        ),
        (session_id,),
    ).fetchall():
        pending.setdefault(str(run_id), []).append((str(interaction_id), bytes(request)))
    return [(str(r), int(seq), pending.get(str(r), [])) for r, seq in runs]


def interaction_state(
    conn: Executes, interaction_id: str, marker: Marker
) -> tuple[str, str] | None:
    """``(status, state of its session)`` of a journaled interaction, or ``None``."""
    row = conn.execute(
        marked(
            "SELECT i.status, s.state FROM interactions i JOIN sessions s ON s.skey = i.skey "
            "WHERE i.interaction_id = ? LIMIT 1",
            marker,
        ),
        (interaction_id,),
    ).fetchone()
    return None if row is None else (str(row[0]), str(row[1]))
