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
        committed; return whether producers should wait (:meth:`EventStream.drained`).

        The hot path: one list append, no object per event.  A stream's held envelopes
        are one list; ``held_marks`` says which history event each stretch of it is:
        ``(history index of its first envelope, its position in the list)``, a new mark
        only where the history's counter skipped (another session's events came
        between), so one mark while a session streams alone."""
        history = self._history
        index = history.appended
        held = stream.held
        if held is None:
            held = stream.held = []
            stream.held_marks = [(index, 0)]
            self._holding[stream] = None
        elif index != stream.held_next:
            stream.held_marks.append((index, len(held)))
        held.append(body)
        stream.held_next = index + 1
        if history.committed >= index:
            self._release(stream)
        return index - history.committed > self.high_water or stream.behind

    def hold_many(self, stream: EventStream, bodies: list[bytes]) -> bool:
        """As :meth:`hold` for the stream's newest ``len(bodies)`` envelopes (the
        history's latest events, consecutive there too: one list extend)."""
        history = self._history
        index = history.appended - len(bodies) + 1  # the first of them in the history
        held = stream.held
        if held is None:
            held = stream.held = []
            stream.held_marks = [(index, 0)]
            self._holding[stream] = None
        elif index != stream.held_next:
            stream.held_marks.append((index, len(held)))
        held += bodies
        stream.held_next = history.appended + 1
        if history.committed >= index:
            self._release(stream)
        return history.appended - history.committed > self.high_water or stream.behind

    @staticmethod
    def _durable_count(stream: EventStream, committed: int) -> int:
        """Return how many of ``stream``'s held envelopes (from the first) are committed
        when the history's first ``committed`` events are."""
        held = stream.held
        assert held is not None
        marks = stream.held_marks
        last = len(marks) - 1
        for i, (index, pos) in enumerate(marks):
            end = marks[i + 1][1] if i < last else len(held)
            if committed < index + (end - pos) - 1:
                return pos + max(0, committed - index + 1)
        return len(held)

    def _release(self, stream: EventStream) -> None:
        held = stream.held
        assert held is not None
        count = self._durable_count(stream, self._history.committed)
        if count:
            first = stream.last_sequence - len(held) + 1
            # One batch for the whole committed stretch: the hot path while streaming.
            if count == len(held):
                ready = held
                stream.held = None
                self._holding.pop(stream, None)
            else:
                marks = stream.held_marks
                last = len(marks) - 1
                kept: list[tuple[int, int]] = []
                for i, (index, pos) in enumerate(marks):
                    end = marks[i + 1][1] if i < last else len(held)
                    if end <= count:
                        continue  # wholly released
                    if pos < count:  # cut inside this stretch: it now begins at the cut
                        kept.append((index + count - pos, 0))
                    else:
                        kept.append((index, pos - count))
                stream.held_marks = kept
                ready = held[:count]
                del held[:count]
            stream.release(first, ready)

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
        waiting = len(held) - self._durable_count(stream, self._history.committed)
        return stream.last_sequence - waiting

    def forget(self, stream: EventStream) -> None:
        """Drop what ``stream`` still holds (its session was deleted)."""
        stream.held = None
        self._holding.pop(stream, None)
