"""A fork's history reads its parent's events: re-heading a parent's envelope for a fork.

A fork's first events are its parent's, never copied: a read of the fork reads the
parent up to the fork point and gives each envelope the fork's identity (its
``sessionId`` and an ``eventId`` of its own), so a fork's history reads like any other
session's.  Every envelope starts with the same head (:mod:`agent_bridge.envelope`):
``{"eventId":"evt_<token>_<hex sequence>","sessionId":"<session id>",`` — only that head
changes.
"""

from __future__ import annotations

__all__ = ["rehead", "reheader"]

from collections.abc import Callable


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
