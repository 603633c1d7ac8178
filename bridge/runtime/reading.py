"""Reading history: pages of a session's events, and replays to an attaching subscriber.

A page is always exact about what it covers: a source that cannot be read now is
``history_unavailable`` (``history_corrupt`` when it is damaged), never an empty page
presented as authoritative.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Final, TypeVar

import msgspec

from agent_bridge.errors import BridgeError
from agent_bridge.journal import History, JournalCorrupt, JournalError, page_range, settle
from agent_bridge.runtime.stream import EventStream, Released, Subscription
from agent_bridge.wire.methods import EventsReadParams

__all__ = ["EVENTS_READ_MAX", "catch_up", "check_page", "guard", "read_page", "replay"]

EVENTS_READ_MAX: Final = 1000

_encode = msgspec.json.encode
log = logging.getLogger("agent_bridge.runtime")

T = TypeVar("T")


async def guard(read: Awaitable[T]) -> T:
    """Await a history read; raises ``history_corrupt`` when the journal is damaged,
    ``history_unavailable`` when it cannot be read now."""
    try:
        return await read
    except JournalCorrupt:
        raise BridgeError("history_corrupt") from None
    except JournalError:
        raise BridgeError("history_unavailable") from None


async def _events(history: History, session_id: str, lo: int, hi: int) -> list[bytes]:
    page = await guard(history.read_events(session_id, lo, hi))
    if len(page) != hi - lo + 1:
        raise BridgeError("history_unavailable")
    return page


def check_page(params: EventsReadParams) -> None:
    """Raise ``invalid_params`` for a page that cannot be asked for: one bounded on both
    sides (``after`` and ``before``: a page goes one way), or a settled raw view."""
    if params.after is not None and params.before is not None:
        raise BridgeError("invalid_params", details={"field": "before"})
    if params.projection == "settled" and params.view == "raw":
        raise BridgeError("invalid_params", details={"field": "projection"})


async def read_page(history: History, params: EventsReadParams, last: int) -> msgspec.Raw:
    """Return the page ``params`` (checked by :func:`check_page`) asks for of a session
    whose newest durable event is ``last``, as an encoded ``EventsReadResult``.  Raises
    ``history_unavailable``."""
    settled = params.projection == "settled"
    limit = max(1, min(params.limit, EVENTS_READ_MAX))
    session_id = params.session_id
    lo, hi, has_more = page_range(last, params.after, params.before, limit)
    page: list[bytes] = []
    raw = b""
    if hi >= lo:
        page = await _events(history, session_id, lo, hi)
        if params.view == "raw":
            records = await guard(history.read_raw(session_id, lo, hi))
            if records:
                raw = b',"raw":' + _encode(records)
    if settled:
        page = settle(page)
    return msgspec.Raw(
        b'{"events":[%s],"hasMore":%s,"exact":%s,"lastSequence":%d%s}'
        % (
            b",".join(page),
            b"true" if has_more else b"false",
            b"false" if settled else b"true",
            last,
            raw,
        )
    )


async def replay(
    history: History, session_id: str, after: int, last: int, subscription: Subscription
) -> int:
    """Send the stored events ``after + 1``..``last`` to ``subscription``'s subscriber
    in pages, waiting whenever it is congested; return how many were sent."""
    subscriber = subscription.subscriber
    sent = 0
    lo = max(0, after) + 1
    while lo <= last:
        hi = min(last, lo + EVENTS_READ_MAX - 1)
        page = await _events(history, session_id, lo, hi)
        if subscriber.publish(Released(session_id, lo, page)):
            await subscriber.drained()
        sent += len(page)
        lo = hi + 1
    subscription.replayed(last)
    return sent


async def catch_up(history: History, stream: EventStream, subscription: Subscription) -> None:
    """Bring a lagging subscription (one that fell behind while others kept up, see
    :meth:`EventStream._lag`) back to the live stream: wait until its subscriber has
    drained, send it the next committed events from the journal, a page at a time, and
    go live again in the same step that finds it at the newest committed event (so no
    event is missed or sent twice).  Ends early when the subscriber detaches or is live
    again (an attach's replay brought it back); a history that cannot be read leaves it
    lagging (logged: its host can attach again)."""
    async with subscription.turn:  # not while an attach replays to it (nor twice)
        await _catch_up(history, stream, subscription)


async def _catch_up(history: History, stream: EventStream, subscription: Subscription) -> None:
    subscriber = subscription.subscriber
    session_id = stream.session_id
    try:
        while stream.subscriptions.get(subscriber) is subscription and subscription.lagging:
            if subscriber.congested:
                await subscriber.drained()
                continue
            newest = stream.committed_sequence()
            if subscription.cursor >= newest:
                stream.rejoin(subscription)  # live from the next release on
                return
            lo = subscription.cursor + 1
            hi = min(newest, lo + EVENTS_READ_MAX - 1)
            page = await _events(history, session_id, lo, hi)
            if stream.subscriptions.get(subscriber) is not subscription:
                return
            subscription.cursor = hi
            subscriber.publish(Released(session_id, lo, page))
    except BridgeError as exc:
        log.warning("session %s: a lagging client cannot catch up (%s)", session_id, exc.error_code)
