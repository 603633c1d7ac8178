"""Release of events to subscribers: in each session's order, and only once durable.

With a journal, an event is given to subscribers only after the commit that holds it: the
stream stamps it, queues it for the journal and *holds* it here; each commit releases
what it made durable, one batch per stream.  So everything a host has seen survives a
crash of the bridge, and a page read from history and the live stream never disagree.
Without a journal (:class:`~agent_bridge.journal.MemoryHistory`) events go straight to the
subscribers and this class is not involved.

Backpressure on the journal: :meth:`Delivery.hold` reports congestion when more than
``high_water`` events wait for a commit, and :meth:`Delivery.drained` waits until half of
them are committed.  While the journal fails to commit, :meth:`Delivery.pause` lowers
the high water to zero, so every producer waits in :meth:`Delivery.drained` until
commits succeed again (:meth:`Delivery.resume`): the provider is held back at no cost
per event.  Each subscriber's own backpressure is the stream's
(:meth:`~agent_bridge.runtime.stream.EventStream.drained`).
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Protocol

import anyio

if TYPE_CHECKING:
    from agent_bridge.runtime.stream import EventStream

__all__ = ["Delivery"]


class _Counts(Protocol):
    appended: int
    committed: int


class Delivery:
    """See the module docstring."""

    __slots__ = ("_history", "_holding", "_normal", "_space", "high_water")

    def __init__(self, history: _Counts, high_water: int = 8192) -> None:
        self._history = history
        self.high_water = high_water
        self._normal = high_water
        self._holding: dict[EventStream, None] = {}
        self._space: anyio.Event | None = None

    def hold(self, stream: EventStream, body: bytes) -> bool:
        """Hold the stream's newest envelope (the history's latest event) until it is
        committed; return whether producers should wait (:meth:`EventStream.drained`)."""
        history = self._history
        held = stream.held
        if held is None:
            held = stream.held = collections.deque()
            self._holding[stream] = None
        held.append((history.appended, body))
        if history.committed >= history.appended:
            self._release(stream)
        return history.appended - history.committed > self.high_water or stream.behind

    def _release(self, stream: EventStream) -> None:
        held = stream.held
        assert held is not None
        committed = self._history.committed
        first = stream.last_sequence - len(held) + 1
        # One batch for the whole committed stretch: the hot path while streaming.
        ready: list[bytes] = []
        while held and held[0][0] <= committed:
            ready.append(held.popleft()[1])
        if ready:
            stream.release(first, ready)
        if not held:
            stream.held = None
            self._holding.pop(stream, None)

    def release(self) -> None:
        """Send every held envelope that is now committed (called after each commit)."""
        for stream in list(self._holding):
            self._release(stream)
        space = self._space
        if space is not None and self._backlog() <= self.high_water // 2:
            self._space = None
            space.set()

    def pause(self) -> None:
        """Hold producers back until :meth:`resume` (the journal cannot commit): every
        event makes :meth:`hold` report congestion and :meth:`drained` wait."""
        self.high_water = 0

    def resume(self) -> None:
        """End :meth:`pause`; producers go on once the backlog is back under the usual
        high water (at the next :meth:`release`)."""
        self.high_water = self._normal

    def _backlog(self) -> int:
        return self._history.appended - self._history.committed

    async def drained(self) -> None:
        """Wait until at most half the high water of events await a commit."""
        while self._backlog() > self.high_water // 2:
            if self._space is None:
                self._space = anyio.Event()
            await self._space.wait()

    def committed_sequence(self, stream: EventStream) -> int:
        """Return the newest sequence of ``stream`` that is committed."""
        held = stream.held
        if not held:
            return stream.last_sequence
        committed = self._history.committed
        waiting = 0
        for index, _ in reversed(held):
            if index <= committed:
                break
            waiting += 1
        return stream.last_sequence - waiting

    def forget(self, stream: EventStream) -> None:
        """Drop what ``stream`` still holds (its session was deleted)."""
        stream.held = None
        self._holding.pop(stream, None)
