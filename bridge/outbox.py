"""Delivery of events to the host: in each session's order, and only once durable.

With a journal, an event is sent to the host only after the commit that holds it: the
runtime stamps it, queues it for the journal and *holds* it here; each commit releases
what it made durable.  So everything a host has seen survives a crash of the bridge, and
a page read from history and the live stream never disagree.  Without a journal
(:class:`~bridge.journal.memory.MemoryHistory`) events go straight to the host and this
class only steps in while a session is *paused* (``session/attach`` replaying its history:
live events wait until the replay is out, so there is no gap and no duplicate).

Backpressure: :meth:`hold` reports congestion when more than ``high_water`` events wait
for a commit (or the host is congested), and :meth:`drained` waits until half of them
are committed and the host has caught up.
"""

from __future__ import annotations

import collections
from typing import Protocol

import anyio

__all__ = ["Outbox"]


class _Host(Protocol):
    def publish(self, envelope: bytes) -> bool: ...

    @property
    def congested(self) -> bool: ...

    async def drained(self) -> None: ...


class _Counts(Protocol):
    appended: int
    committed: int


class Held(Protocol):
    """What the outbox keeps on a session: held envelopes (``(event index, body)``, in
    sequence order, ending at the session's newest event) and the pause flag."""

    held: collections.deque[tuple[int, bytes]] | None
    paused: bool
    last_sequence: int


class Outbox:
    """See the module docstring."""

    def __init__(self, host: _Host, history: _Counts, high_water: int = 8192) -> None:
        self._host = host
        self._history = history
        self.high_water = high_water
        self._holding: dict[Held, None] = {}
        self._space: anyio.Event | None = None
        #: what the host said when it was last given an envelope (congested or not)
        self._host_behind = False

    def hold(self, session: Held, body: bytes) -> bool:
        """Hold the session's newest envelope (the history's latest event) until it is
        committed; return whether producers should wait (:meth:`drained`)."""
        history = self._history
        held = session.held
        if held is None:
            held = session.held = collections.deque()
            self._holding[session] = None
        held.append((history.appended, body))
        if not session.paused and history.committed >= history.appended:
            self._release(session)
        return history.appended - history.committed > self.high_water or self._host_behind

    def _release(self, session: Held) -> None:
        held = session.held
        assert held is not None
        committed = self._history.committed
        behind = self._host_behind
        publish_many = getattr(self._host, "publish_many", None)
        if publish_many is not None:
            # One call for the whole committed stretch: the hot path while streaming.
            ready: list[bytes] = []
            while held and held[0][0] <= committed:
                ready.append(held.popleft()[1])
            if ready:
                behind = publish_many(ready)
        else:
            publish = self._host.publish
            while held and held[0][0] <= committed:
                behind = publish(held.popleft()[1])
        self._host_behind = behind
        if not held:
            session.held = None
            self._holding.pop(session, None)

    def release(self) -> None:
        """Send every held envelope that is now committed (called after each commit)."""
        for session in list(self._holding):
            if not session.paused:
                self._release(session)
        space = self._space
        if space is not None and self._backlog() <= self.high_water // 2:
            self._space = None
            space.set()

    def _backlog(self) -> int:
        return self._history.appended - self._history.committed

    async def drained(self) -> None:
        """Wait until at most half the high water of events await a commit and the host
        has caught up."""
        while self._backlog() > self.high_water // 2:
            if self._space is None:
                self._space = anyio.Event()
            await self._space.wait()
        if self._host.congested:
            await self._host.drained()
        self._host_behind = False

    # ------------------------------------------------------------------ replay

    def pause(self, session: Held) -> None:
        """Hold every new envelope of ``session`` until :meth:`resume`."""
        session.paused = True
        if session.held is None:
            session.held = collections.deque()
            self._holding[session] = None

    def committed_sequence(self, session: Held) -> int:
        """Return the newest sequence of ``session`` that is committed."""
        held = session.held
        if not held:
            return session.last_sequence
        committed = self._history.committed
        waiting = 0
        for index, _ in reversed(held):
            if index <= committed:
                break
            waiting += 1
        return session.last_sequence - waiting

    def drop_committed(self, session: Held) -> int:
        """Forget the held envelopes of a paused session that are committed (a replay from
        history is about to send them); return the newest committed sequence."""
        last = self.committed_sequence(session)
        held = session.held
        committed = self._history.committed
        while held and held[0][0] <= committed:
            held.popleft()
        return last

    def resume(self, session: Held) -> None:
        """End a pause: send what is committed, keep holding the rest."""
        session.paused = False
        if session.held is not None:
            self._release(session)
