"""Release of events to subscribers: in each session's order, and only once durable.

With a journal, an event is given to subscribers only after the commit that holds it: the
stream stamps it, queues it for the journal and *holds* it in its :class:`Held` queue;
each commit releases what it made durable, one batch per stream.  So everything a host
has seen survives a crash of the bridge, and a page read from history and the live stream
never disagree.  Without a journal (:class:`~agent_bridge.journal.MemoryHistory`) events
go straight to the subscribers and nothing is held.

Each field has one writer.  :class:`Held` (one per stream, made by :meth:`Delivery.queue`)
is the only writer of what a stream holds; :class:`Delivery` is the only writer of which
queues hold something and of the high water; the stream itself
(:class:`~agent_bridge.runtime.stream.EventStream`) is the only writer of its sequence and
its subscribers' state, which this module only reads.

Backpressure on the journal: :meth:`Held.hold` reports congestion when more than
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
    from agent_bridge.wire.events import EventPayload

__all__ = ["Delivery", "Held"]


class _Counts(Protocol):
    appended: int
    committed: int


class Held:
    """The envelopes of one stream that wait for their commit, in order.

    ``bodies`` is one list (``None``: nothing held); ``marks`` says which history event
    each stretch of it is: ``(history index of its first envelope, its position in the
    list)``, a new mark only where the history's counter skipped (another session's
    events came between), so one mark while a session streams alone.  ``next`` is the
    history index the next envelope has if nothing comes between.
    """

    __slots__ = (
        "_delivery",
        "_history",
        "_stream",
        "bodies",
        "marks",
        "next",
        "payloads",
        "run_ids",
    )

    def __init__(self, delivery: Delivery, history: _Counts, stream: EventStream) -> None:
        self._delivery = delivery
        self._history = history
        self._stream = stream
        self.bodies: list[bytes] | None = None
        #: what each held envelope encodes (given to subscribers with it)
        self.payloads: list[EventPayload] = []
        self.run_ids: list[str | None] = []
        self.marks: list[tuple[int, int]] = []
        self.next = 0

    def hold(self, body: bytes, payload: EventPayload, run_id: str | None) -> bool:
        """Hold the stream's newest envelope (the history's latest event) until it is
        committed; return whether producers should wait (:meth:`EventStream.drained`).

        The hot path: one list append, no object per event."""
        history = self._history
        index = history.appended
        held = self.bodies
        if held is None:
            held = self._start(index)
        elif index != self.next:
            self.marks.append((index, len(held)))
        held.append(body)
        self.payloads.append(payload)
        self.run_ids.append(run_id)
        self.next = index + 1
        if history.committed >= index:
            self.release()
        return index - history.committed > self._delivery.high_water or self._stream.behind

    def hold_many(self, bodies: list[bytes], payloads: list[EventPayload], run_id: str) -> bool:
        """As :meth:`hold` for the stream's newest ``len(bodies)`` envelopes (the
        history's latest events, consecutive there too: one list extend)."""
        history = self._history
        appended = history.appended
        index = appended - len(bodies) + 1  # the first of them in the history
        held = self.bodies
        if held is None:
            held = self._start(index)
        elif index != self.next:
            self.marks.append((index, len(held)))
        held += bodies
        self.payloads += payloads
        self.run_ids += [run_id] * len(bodies)
        self.next = appended + 1
        if history.committed >= index:
            self.release()
        return appended - history.committed > self._delivery.high_water or self._stream.behind

    def _start(self, index: int) -> list[bytes]:
        held: list[bytes] = []
        self.bodies = held
        self.payloads = []
        self.run_ids = []
        self.marks = [(index, 0)]
        self._delivery._track(self)
        return held

    def _durable_count(self, committed: int) -> int:
        """Return how many held envelopes (from the first) are committed when the
        history's first ``committed`` events are."""
        held = self.bodies
        assert held is not None
        marks = self.marks
        last = len(marks) - 1
        for i, (index, pos) in enumerate(marks):
            end = marks[i + 1][1] if i < last else len(held)
            if committed < index + (end - pos) - 1:
                return pos + max(0, committed - index + 1)
        return len(held)

    def release(self) -> None:
        """Give the stream's subscribers every held envelope that is now committed."""
        held = self.bodies
        if held is None:
            return
        count = self._durable_count(self._history.committed)
        if not count:
            return
        stream = self._stream
        first = stream.last_sequence - len(held) + 1
        # One batch for the whole committed stretch: the hot path while streaming.
        if count == len(held):
            ready, payloads, run_ids = held, self.payloads, self.run_ids
            self.bodies = None
            self.payloads = []
            self.run_ids = []
            self._delivery._untrack(self)
        else:
            marks = self.marks
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
            self.marks = kept
            ready = held[:count]
            del held[:count]
            payloads = self.payloads[:count]
            del self.payloads[:count]
            run_ids = self.run_ids[:count]
            del self.run_ids[:count]
        stream.release(first, ready, payloads, run_ids)

    def committed_sequence(self) -> int:
        """Return the newest sequence of the stream that is committed."""
        held = self.bodies
        last = self._stream.last_sequence
        if not held:
            return last
        return last - (len(held) - self._durable_count(self._history.committed))

    def forget(self) -> None:
        """Drop what is held (the stream's session was deleted)."""
        self.bodies = None
        self.payloads = []
        self.run_ids = []
        self.marks = []
        self._delivery._untrack(self)


class Delivery:
    """See the module docstring."""

    __slots__ = ("_history", "_holding", "_normal", "_space", "high_water")

    def __init__(self, history: _Counts, high_water: int = 8192) -> None:
        self._history = history
        self.high_water = high_water
        self._normal = high_water
        #: the queues holding something, in the order they began to
        self._holding: dict[Held, None] = {}
        self._space: anyio.Event | None = None

    def queue(self, stream: EventStream) -> Held:
        """Return a new, empty queue of held envelopes for ``stream`` (its only one)."""
        return Held(self, self._history, stream)

    def _track(self, held: Held) -> None:
        self._holding[held] = None

    def _untrack(self, held: Held) -> None:
        self._holding.pop(held, None)

    def release(self) -> None:
        """Send every held envelope that is now committed (called after each commit)."""
        for held in list(self._holding):
            held.release()
        space = self._space
        if space is not None and self._backlog() <= self.high_water // 2:
            self._space = None
            space.set()

    def pause(self) -> None:
        """Hold producers back until :meth:`resume` (the journal cannot commit): every
        event makes :meth:`Held.hold` report congestion and :meth:`drained` wait."""
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
