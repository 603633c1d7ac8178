"""Following a session another fleet member owns, for a host attached here.

A session open in this process streams to its subscribers live.  A session open in
another member's process (the PostgreSQL journal, ``docs/fleet.md``) has no stream
here: after the attach replay, :func:`follow_remote` waits for the database to say the
session committed more (:meth:`~agent_bridge.journal.base.Followable.wait_committed`,
``LISTEN``/``NOTIFY``, never a poll), reads the new events from the journal and sends
them on, in order, from the sequence after the replay's last: no gap (every page starts
at the cursor) and no duplicate (the cursor only moves by what was sent).  It ends after
the session's ``session.closed``, when the history cannot be read (logged: the host can
attach again), or when its cancel scope is cancelled (the host detached).
"""

from __future__ import annotations

import logging

import msgspec

from agent_bridge.errors import BridgeError
from agent_bridge.journal import Followable, History
from agent_bridge.runtime.reading import EVENTS_READ_MAX, guard
from agent_bridge.runtime.stream import Released, Subscription

__all__ = ["follow_remote"]

log = logging.getLogger("agent_bridge.runtime")


class _Tail(msgspec.Struct):
    payload: _Type


class _Type(msgspec.Struct):
    type: str


_tail = msgspec.json.Decoder(_Tail)


async def follow_remote(history: History, session_id: str, subscription: Subscription) -> None:
    """Send ``subscription``'s subscriber the session's events committed after its
    cursor, as they are committed elsewhere, until the session closes."""
    assert isinstance(history, Followable)
    subscriber = subscription.subscriber
    try:
        while True:
            cursor = subscription.cursor
            await guard(history.wait_committed(session_id, cursor))
            page = await guard(
                history.read_events(session_id, cursor + 1, cursor + EVENTS_READ_MAX)
            )
            if not page:
                log.warning("session %s: told of events that cannot be read", session_id)
                return
            subscription.cursor = cursor + len(page)
            if subscriber.publish(Released(session_id, cursor + 1, page)):
                await subscriber.drained()
            if _tail.decode(page[-1]).payload.type == "session.closed":
                return
    except BridgeError as exc:
        log.warning("session %s: cannot follow it here (%s)", session_id, exc.error_code)
