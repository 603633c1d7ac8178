"""A fork's history reads its parent's: the walk through a fork's parents, and re-heading
a parent's envelope for a fork.

A fork's first events are its parent's, never copied: a read of the fork reads the
parent up to the fork point and gives each envelope the fork's identity (its
``sessionId`` and an ``eventId`` of its own), so a fork's history reads like any other
session's.  Every envelope starts with the same head (:mod:`agent_bridge.envelope`):
``{"eventId":"evt_<token>_<hex sequence>","sessionId":"<session id>",`` — only that head
changes.

The walk is the same for every store (SQLite, PostgreSQL, memory); only how a store
finds a session and reads its own rows differs, so :func:`read_through_forks` and
:func:`position_through_forks` take those as functions: ``fork_of(session id)`` returns
``(handle, parent id, fork sequence)`` (the handle is whatever the store reads a
session's rows by: a key, an object) or ``None`` for an unknown session.
"""

from __future__ import annotations

__all__ = ["position_through_forks", "read_through_forks", "rehead", "reheader"]

from collections.abc import Callable
from typing import TypeVar

H = TypeVar("H")
T = TypeVar("T")


def read_through_forks(
    session_id: str,
    lo: int,
    hi: int,
    *,
    fork_of: Callable[[str], tuple[H, str | None, int] | None],
    own: Callable[[H, int, int], list[T]],
    adopt: Callable[[list[T], str, str], list[T]] | None = None,
) -> list[T]:
    """Return items ``lo``..``hi`` of a session's history: of a fork, its parent's (read
    the same way, through the parent's own parents) up to the fork point, passed through
    ``adopt(items, parent id, fork id)`` when given, then ``own(handle, lo, hi)`` for the
    rest.  ``[]`` for an unknown session or an empty range."""
    found = fork_of(session_id)
    if found is None or hi < lo:
        return []
    handle, parent, fork_seq = found
    before: list[T] = []
    if parent is not None and lo <= fork_seq:
        before = read_through_forks(
            parent, lo, min(hi, fork_seq), fork_of=fork_of, own=own, adopt=adopt
        )
        if adopt is not None:
            before = adopt(before, parent, session_id)
        lo = fork_seq + 1
        if hi < lo:
            return before
    return before + own(handle, lo, hi)


def position_through_forks(
    session_id: str,
    sequence: int,
    *,
    fork_of: Callable[[str], tuple[H, str | None, int] | None],
    latest: Callable[[H, int], tuple[int, bytes] | None],
) -> tuple[int, bytes] | None:
    """Return the latest ``(sequence, position)`` at or before ``sequence`` of a session's
    history: ``latest(handle, sequence)`` of the session, else of its parent at or before
    the fork point, and so on up; ``None`` when no session on the way has one (or the
    session is unknown)."""
    while True:
        found = fork_of(session_id)
        if found is None:
            return None
        handle, parent, fork_seq = found
        point = latest(handle, sequence)
        if point is not None:
            return point
        if parent is None:
            return None
        session_id, sequence = parent, min(sequence, fork_seq)


def _token(session_id: str) -> bytes:
    return session_id.split("_", 1)[-1].encode()


def reheader(parent_id: str, fork_id: str) -> Callable[[bytes], bytes]:
    """Return the function that turns an envelope of ``parent_id`` into the same event of
    ``fork_id``; an envelope without the expected head is returned unchanged."""
    old_id = b'{"eventId":"evt_' + _token(parent_id) + b"_"
    old_session = b'","sessionId":"' + parent_id.encode() + b'"'
    new_id = b'{"eventId":"evt_' + _token(fork_id) + b"_"
    new_session = b'","sessionId":"' + fork_id.encode() + b'"'
    start = len(old_id)

    def rehead_one(body: bytes) -> bytes:
        if not body.startswith(old_id):
            return body
        end = body.find(b'"', start)
        if end < 0 or not body.startswith(old_session, end):
            return body
        return new_id + body[start:end] + new_session + body[end + len(old_session) :]

    return rehead_one


def rehead(bodies: list[bytes], parent_id: str, fork_id: str) -> list[bytes]:
    """``bodies`` (envelopes of ``parent_id``) as events of ``fork_id``."""
    one = reheader(parent_id, fork_id)
    return [one(body) for body in bodies]
