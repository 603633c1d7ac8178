"""A session's event stream: stamping, the gapless sequence, and delivery to subscribers.

Each open session has one :class:`EventStream`.  :meth:`EventStream.publish` turns a
payload into an encoded :class:`~agent_bridge.wire.events.EventEnvelope` (id, sequence and
time stamped in one step, see :mod:`agent_bridge.envelope`), records it in the history and
hands it to the :class:`~agent_bridge.runtime.delivery.Delivery`, which releases it to the
stream's subscribers once it is durable.

A :class:`Subscriber` is one attached client of the runtime (a host connection of a
front-end); the runtime does not know the wire protocol or how many there are.  Each
subscriber has its own :class:`Subscription` per stream, with its own cursor (the newest
sequence it was given) and its own backpressure; while a subscription replays history
(``session/attach``) its live events are buffered and then sent without gap or duplicate
(at most :data:`REPLAY_BUFFER_MAX` of journaled events: past that it catches up from the
journal, as a subscriber that falls behind does).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol

import anyio
import msgspec

from agent_bridge.envelope import EnvelopeFormat
from agent_bridge.journal import TYPE_CODES, History, encode_raw
from agent_bridge.wire.events import EventEnvelope, EventPayload

if TYPE_CHECKING:
    from agent_bridge.ids import Clock
    from agent_bridge.runtime.delivery import Delivery
    from agent_bridge.runtime.interactions import Interaction

__all__ = [
    "REPLAY_BUFFER_MAX",
    "EventStream",
    "Released",
    "Subscriber",
    "Subscription",
    "UnencodableEvent",
]

log = logging.getLogger("agent_bridge.runtime")

_encode = msgspec.json.encode
_TYPE_CODES: Final = TYPE_CODES
_decode_envelope: Final = msgspec.json.Decoder(EventEnvelope).decode


class Released(msgspec.Struct, gc=False):
    """Consecutive events of one session, as the runtime gives them to a subscriber.

    ``bodies`` are their encoded :class:`~agent_bridge.wire.events.EventEnvelope` s,
    encoded once (the bridge protocol sends them as they are); ``first`` is the first
    one's sequence.  For live events ``payloads`` and ``run_ids`` are what each event
    says, the very objects that were encoded, so a front-end that works on payloads (the
    ACP agent) does not decode what the runtime just encoded; for history being replayed
    they are ``None`` and :meth:`events` decodes the bodies.

    A struct, not a class with ``__init__``: one is made per release (per event when
    events go straight to the subscribers), and a struct is built in C at about half the
    cost.  An event published straight to the subscribers comes as one-item tuples (a
    tuple is one allocation, a list two: 16 ns of three, about 2% of ``publish`` with one
    subscriber, see bench/README.md), a batch as lists; a subscriber only reads them.
    ``gc=False``: it holds only sequences of bytes, payloads and strings, never itself,
    so it cannot be part of a reference cycle.
    """

    session_id: str
    first: int
    bodies: Sequence[bytes]
    payloads: Sequence[EventPayload] | None = None
    run_ids: Sequence[str | None] | None = None
    #: the bytes of ``bodies`` together, when the runtime counted them (``None``: not
    #: counted; a subscriber that needs the figure counts them itself)
    size: int | None = None

    def events(self) -> list[tuple[str | None, EventPayload]]:
        """Return each event's ``(run id, payload)``, in order: the objects themselves
        for live events, decoded from the bodies for replayed history.  Raises
        ``msgspec.DecodeError`` for a stored body that is not an event envelope."""
        if self.payloads is not None and self.run_ids is not None:
            return list(zip(self.run_ids, self.payloads, strict=True))
        decoded = map(_decode_envelope, self.bodies)
        return [(event.run_id, event.payload) for event in decoded]

    def after(self, sequence: int) -> Released | None:
        """The events past ``sequence`` (``None``: none), sharing what they can."""
        skip = sequence + 1 - self.first
        if skip <= 0:
            return self
        if skip >= len(self.bodies):
            return None
        payloads, run_ids = self.payloads, self.run_ids
        return Released(
            self.session_id,
            self.first + skip,
            self.bodies[skip:],
            None if payloads is None else payloads[skip:],
            None if run_ids is None else run_ids[skip:],
        )


class UnencodableEvent(ValueError):
    """A payload cannot be encoded as JSON (a ``str`` holding a lone surrogate, from
    bytes that were not UTF-8); raised by :meth:`EventStream.publish` before the payload
    is given a sequence number, so the stream, its history and its subscribers are as
    they were."""


def _encoded(payload: EventPayload) -> bytes:
    """Return ``payload`` as JSON; raises :class:`UnencodableEvent`."""
    try:
        return _encode(payload)
    except (UnicodeEncodeError, TypeError, ValueError, OverflowError) as exc:
        raise UnencodableEvent(
            f"a {type(payload).__name__} payload cannot be encoded: {type(exc).__name__}"
        ) from None


class Subscriber(Protocol):
    """One client attached to the runtime (a front-end's host connection)."""

    def publish(self, events: Released) -> bool:
        """Send ``events`` (never blocks); return whether the client is now congested
        (producers should await :meth:`drained`)."""
        ...

    @property
    def congested(self) -> bool:
        """Whether the client is behind and producers should wait for :meth:`drained`."""
        ...

    async def drained(self) -> None:
        """Wait until the client has caught up."""
        ...

    def can_answer(self, kind: str) -> bool:
        """Whether the client declared it can answer interactions of ``kind``."""
        ...

    async def ask(self, interaction: Interaction) -> None:
        """Deliver ``interaction`` to the client and apply its answer (runs in a task)."""
        ...


#: the most live events held for a subscription replaying an attach; past it, journaled
#: events are dropped and the subscription catches up from the journal after its replay,
#: and events not journaled (nothing to catch up from) hold the producers back until the
#: replay ends: either way a host that stops reading during its replay costs bounded memory
REPLAY_BUFFER_MAX: Final = 4096


class Subscription:
    """One subscriber's view of one stream: its cursor, and its buffer while replaying
    (both written only by its own methods)."""

    __slots__ = (
        "buffer",
        "buffered",
        "cursor",
        "lagging",
        "limit",
        "replay_ended",
        "spilled",
        "subscriber",
        "turn",
    )

    def __init__(self, subscriber: Subscriber, cursor: int) -> None:
        self.subscriber = subscriber
        #: the newest sequence this subscriber was given
        self.cursor = cursor
        #: while replaying: the live stretches held back
        self.buffer: list[Released] | None = None
        #: how many events the buffer holds, and the most it may (``None``: no bound)
        self.buffered = 0
        self.limit: int | None = None
        #: the buffer outgrew its limit while replaying: its events were dropped, and
        #: the subscription catches up from the journal once the replay ends
        self.spilled = False
        #: fell behind while others kept up: given no live events (and holding nobody
        #: back) until it has caught up from the journal (:func:`reading.catch_up`)
        self.lagging = False
        #: set when the current replay ends (made by :meth:`begin_replay`)
        self.replay_ended: anyio.Event | None = None
        #: held by whatever sends this subscriber history (an attach's replay, a
        #: catch-up): one at a time, or two would send the same events, and the live
        #: ones would be released between a replay's pages
        self.turn = anyio.Lock()

    @property
    def replaying(self) -> bool:
        """Whether history is being replayed to this subscriber (live events wait)."""
        return self.buffer is not None

    @property
    def holding(self) -> bool:
        """Whether this replaying subscription, its live events not journaled, holds
        more than :data:`REPLAY_BUFFER_MAX` of them: the producers wait for its replay
        to end (:meth:`EventStream.drained`)."""
        return self.buffer is not None and self.limit is None and self.buffered > REPLAY_BUFFER_MAX

    def send(self, events: Released) -> bool:
        """Give the subscriber ``events``, skipping any it already has; return whether it
        is congested (while replaying: whether it holds the producers back)."""
        buffer = self.buffer
        if buffer is not None:
            if not self.spilled:
                buffer.append(events)
                self.buffered += len(events.bodies)
                if self.limit is None:
                    return self.buffered > REPLAY_BUFFER_MAX  # not journaled: wait
                if self.buffered > self.limit:
                    buffer.clear()  # the journal has them: caught up after the replay
                    self.spilled = True
            return False
        if events.first <= self.cursor:
            left = events.after(self.cursor)
            if left is None:
                return False
            events = left
        self.cursor = events.first + len(events.bodies) - 1
        return self.subscriber.publish(events)

    def begin_replay(self, after: int, limit: int | None = None) -> None:
        """Hold live events from now on (at most ``limit`` of them; ``None``: all); the
        replay continues after sequence ``after``."""
        self.buffer = []
        self.buffered = 0
        self.limit = limit
        self.spilled = False
        self.cursor = after
        self.replay_ended = anyio.Event()

    def replayed(self, last: int) -> None:
        """Record that history up to sequence ``last`` was given to the subscriber."""
        self.cursor = max(self.cursor, last)

    def end_replay(self) -> bool:
        """Send what was held during the replay (past the cursor) and go live again;
        return whether the subscriber is congested.  A subscription whose buffer
        :attr:`spilled` is left ``lagging`` instead (its owner starts the catch-up, see
        :meth:`EventStream.end_replay`)."""
        held, self.buffer = self.buffer or [], None
        self.buffered = 0
        if self.replay_ended is not None:
            self.replay_ended.set()
            self.replay_ended = None
        if self.spilled:
            self.spilled = False
            self.lagging = True
            return False
        congested = False
        for events in held:
            congested = self.send(events) or congested
        return congested


class EventStream:
    """The events of one session (see the module docstring).

    The stream is the only writer of its sequence, run id, raw-record marks, ``behind``
    and subscription table; what waits for a commit is its
    :class:`~agent_bridge.runtime.delivery.Held` queue's, written only by that queue."""

    __slots__ = (
        "_fmt",
        "_held",
        "_history",
        "_rejoined",
        "_run_id",
        "_run_id_bytes",
        "behind",
        "clock",
        "delivery",
        "last_sequence",
        "on_hosts",
        "on_lag",
        "raw_id",
        "raw_object",
        "session_id",
        "subscriptions",
    )

    def __init__(
        self,
        session_id: str,
        history: History,
        delivery: Delivery,
        clock: Clock,
        last_sequence: int = 0,
    ) -> None:
        self.session_id = session_id
        self._history = history
        self.delivery = delivery
        self.clock = clock
        self._fmt = EnvelopeFormat(session_id)
        self.last_sequence = last_sequence
        self._run_id: str | None = None
        self._run_id_bytes = b""
        #: envelopes waiting for their commit (written only by the delivery's queue)
        self._held = delivery.queue(self)
        #: whether a subscriber said it was congested when last given events
        self.behind = False
        #: the raw record of the latest emit that had one, and its id
        self.raw_object: Any = None
        self.raw_id = 0
        self.subscriptions: dict[Subscriber, Subscription] = {}
        #: called with a subscription that fell behind while another subscriber kept up
        #: (the runtime starts its catch-up from the journal); ``None``: a slow
        #: subscriber holds the producers back, as it always does when it is the only one
        self.on_lag: Callable[[EventStream, Subscription], None] | None = None
        #: told when a subscriber comes or goes (a fleet member publishes its host counts)
        self.on_hosts: Callable[[], None] | None = None
        #: set when a lagging subscription is live again (only while producers wait)
        self._rejoined: anyio.Event | None = None

    # ------------------------------------------------------------------ publishing

    def publish(self, run_id: str | None, payload: EventPayload, raw: Any = None) -> bool:
        """Stamp ``payload`` with id, sequence and time, record it (with the raw record it
        came from, if any) and release it to the subscribers once it is durable; return
        whether producers should wait (:meth:`drained`).  Raises
        :class:`UnencodableEvent` (nothing stamped, recorded or sent) for a payload that
        cannot be encoded: an event is encoded before it is given a sequence number."""
        try:
            encoded = _encode(payload)
        except (UnicodeEncodeError, TypeError, ValueError, OverflowError):
            encoded = _encoded(payload)  # raises UnencodableEvent
        sequence = self.last_sequence + 1
        self.last_sequence = sequence
        fmt = self._fmt
        if run_id is None:
            body = fmt.sessionwide % (
                sequence,
                sequence,
                self.clock.now_iso_bytes(),
                encoded,
            )
        else:
            if run_id is not self._run_id:  # one encode per run, not per event
                self._run_id = run_id
                self._run_id_bytes = run_id.encode()
            body = fmt.run % (
                sequence,
                self._run_id_bytes,
                sequence,
                self.clock.now_iso_bytes(),
                encoded,
            )
        raw_id = 0 if raw is None else self._raw_id(raw, sequence)
        history = self._history
        history.append(self.session_id, sequence, _TYPE_CODES[type(payload)], body, raw_id)
        held = self._held
        if history.durable or held.bodies is not None:
            return held.hold(body, payload, run_id)
        # not journaled and nothing waiting: straight to the subscribers, if any
        if not self.subscriptions:
            self.behind = False
            return False
        return self.release(sequence, (body,), (payload,), (run_id,))

    def publish_many(
        self,
        run_id: str,
        payloads: list[EventPayload],
        raw: Any = None,
        kind: type[EventPayload] | None = None,
    ) -> bool:
        """As :meth:`publish` for each of ``payloads`` (a run's, at least one), in order,
        each its own event: consecutive sequences, stamped with one clock read, recorded
        and held (or sent) as one batch; return whether producers should wait.  ``kind``:
        the type of every payload, when the caller has checked that they share one (their
        type codes are then one look-up).  Raises :class:`UnencodableEvent` (none of them
        stamped) if one cannot be encoded."""
        try:
            encoded = list(map(_encode, payloads))
        except (UnicodeEncodeError, TypeError, ValueError, OverflowError):
            encoded = list(map(_encoded, payloads))  # raises UnencodableEvent
        first = self.last_sequence + 1
        stop = first + len(payloads)
        self.last_sequence = stop - 1
        if run_id is not self._run_id:
            self._run_id = run_id
            self._run_id_bytes = run_id.encode()
        template = self._fmt.run_batch(self._run_id_bytes, self.clock.now_iso_bytes())
        bodies = [
            template % (sequence, sequence, body) for sequence, body in enumerate(encoded, first)
        ]
        if kind is None:
            codes = bytes(map(_TYPE_CODES.__getitem__, map(type, payloads)))
        else:
            codes = bytes((_TYPE_CODES[kind],)) * len(payloads)
        raw_id = 0 if raw is None else self._raw_id(raw, first)
        history = self._history
        held = self._held
        if history.durable or held.bodies is not None:
            history.append_many(self.session_id, first, codes, bodies, raw_id)
            return held.hold_many(bodies, payloads, run_id)
        # Not journaled: the history in memory and the subscribers both count the bytes
        # (its budget, their output's high water): counted once, here, for both.
        size = sum(map(len, bodies))
        history.append_many(self.session_id, first, codes, bodies, raw_id, size)
        if not self.subscriptions:
            self.behind = False
            return False
        return self.release(first, bodies, payloads, [run_id] * len(bodies), size)

    def _raw_id(self, raw: Any, sequence: int) -> int:
        """Return the id of the raw record ``raw`` the event at ``sequence`` was projected
        from: the previous emit's when it is the same object, else ``raw`` is recorded
        now with that sequence as its id (0 if it cannot be encoded)."""
        if raw is self.raw_object:
            return self.raw_id
        record = encode_raw(raw)
        if record is None:
            log.warning("session %s: an unencodable raw record was dropped", self.session_id)
            return 0
        self.raw_object = raw
        self.raw_id = sequence
        self._history.add_raw(self.session_id, sequence, record)
        return sequence

    def release(
        self,
        first: int,
        bodies: Sequence[bytes],
        payloads: Sequence[EventPayload],
        run_ids: Sequence[str | None],
        size: int | None = None,
    ) -> bool:
        """Give every subscriber the events ``bodies`` (the first at sequence ``first``;
        ``payloads`` and ``run_ids`` are what they encode; ``size``: their bytes, if
        counted), newly durable or not journaled; return whether one of them is
        congested (called by the stream's :class:`~agent_bridge.runtime.delivery.Held`
        queue, and by :meth:`publish`)."""
        subscriptions = self.subscriptions
        if not subscriptions:
            self.behind = False
            return False
        events = Released(self.session_id, first, bodies, payloads, run_ids, size)
        slow: list[Subscription] | None = None
        for subscription in subscriptions.values():
            if not subscription.lagging and subscription.send(events):
                if slow is None:
                    slow = [subscription]
                else:
                    slow.append(subscription)
        # Judged only once every subscriber has been given the batch: a subscriber
        # checked before another had its share would see that other "keeping up" and
        # fall behind itself, leaving the slow one holding the producers back.
        congested = slow is not None and not self._lag(slow)
        self.behind = congested
        return congested

    def _can_lag(self) -> bool:
        return self.on_lag is not None and self._history.durable

    def _lag(self, slow: list[Subscription]) -> bool:
        """Let each congested subscription of ``slow`` fall behind alone if another
        subscriber keeps up (one host that stops reading must not stall the others);
        return whether none of them must hold the producers back.

        A subscription that falls behind is ``lagging``: it is given no live events and
        nothing waits for it (its memory is bounded by its connection's high-water mark),
        and :attr:`on_lag` starts its catch-up from the journal.  Only for journaled
        events; alone (or all slow), a subscriber holds the producers back."""
        if not self._can_lag():
            return False
        subscriptions = self.subscriptions.values()
        if all(s.lagging or s.subscriber.congested for s in subscriptions):
            return False  # nobody keeps up
        assert self.on_lag is not None
        for subscription in slow:
            if (
                not subscription.lagging
                and not subscription.replaying
                and self.subscriptions.get(subscription.subscriber) is subscription
            ):
                subscription.lagging = True
                self.on_lag(self, subscription)
        return True

    def rejoin(self, subscription: Subscription) -> None:
        """Make a lagging ``subscription`` live again (its catch-up found it at the newest
        committed event): it is given the next release, and producers waiting for a
        subscriber to drain look again (:meth:`drained`)."""
        subscription.lagging = False
        rejoined = self._rejoined
        if rejoined is not None:
            self._rejoined = None
            rejoined.set()

    async def drained(self) -> None:
        """Wait until the journal has caught up, and the subscribers: every congested one
        when a slow subscriber must hold the producers back (the events are not
        journaled); else until one subscriber keeps up (the first to drain, or a lagging
        one back from its catch-up), the others still congested then falling behind
        alone (see :meth:`_lag`): the producers go at the pace of the fastest
        subscriber, never of the slowest."""
        await self.delivery.drained()
        waited = False
        while self.behind:
            live = [s for s in self.subscriptions.values() if not s.lagging]
            congested = [s for s in live if s.subscriber.congested]
            # (a subscription replaying an attach buffers its live events: it holds
            # nobody back, see Subscription.send, but may be the one to drain first)
            waiting = [s for s in congested if not s.replaying]
            if not self._can_lag():
                for subscription in waiting:
                    await subscription.subscriber.drained()
                # a replay holding too many events not journaled: wait for its end
                for subscription in list(self.subscriptions.values()):
                    ended = subscription.replay_ended
                    if subscription.holding and ended is not None:
                        await ended.wait()
                break
            if not waiting:
                break
            if self._lag(waiting) or waited:
                break
            await self._first_drained(congested, len(live) < len(self.subscriptions))
            waited = True  # look once more: who drained keeps up, the others lag
        self.behind = False

    async def _first_drained(self, waiting: list[Subscription], rejoin: bool) -> None:
        """Wait until one of ``waiting`` has drained or (``rejoin``) a lagging
        subscription is live again."""
        if len(waiting) == 1 and not rejoin:
            await waiting[0].subscriber.drained()
            return
        async with anyio.create_task_group() as tg:

            async def first(wait: Callable[[], Awaitable[Any]]) -> None:
                await wait()
                tg.cancel_scope.cancel()

            for subscription in waiting:
                tg.start_soon(first, subscription.subscriber.drained)
            if rejoin:
                if self._rejoined is None:
                    self._rejoined = anyio.Event()
                tg.start_soon(first, self._rejoined.wait)

    # ------------------------------------------------------------------ subscribers

    def subscribe(self, subscriber: Subscriber) -> Subscription:
        """Return the subscriber's subscription, new ones starting at the newest event."""
        subscription = self.subscriptions.get(subscriber)
        if subscription is None:
            subscription = Subscription(subscriber, self.last_sequence)
            self.subscriptions[subscriber] = subscription
            if self.on_hosts is not None:
                self.on_hosts()
        return subscription

    def begin_replay(self, subscription: Subscription, after: int) -> None:
        """Start replaying history after sequence ``after`` to ``subscription``: its
        live events are held meanwhile, at most :data:`REPLAY_BUFFER_MAX` of them when
        they are journaled (the rest it catches up from the journal afterwards)."""
        subscription.begin_replay(after, REPLAY_BUFFER_MAX if self._can_lag() else None)

    def end_replay(self, subscription: Subscription) -> bool:
        """End ``subscription``'s replay: send the live events it held, or, when they
        outgrew their bound, start its catch-up from the journal; return whether its
        subscriber is congested."""
        congested = subscription.end_replay()
        if (
            subscription.lagging
            and self.on_lag is not None
            and self.subscriptions.get(subscription.subscriber) is subscription
        ):
            self.on_lag(self, subscription)
        return congested

    def unsubscribe(self, subscriber: Subscriber) -> None:
        """Stop sending to ``subscriber`` (it detached)."""
        if self.subscriptions.pop(subscriber, None) is not None and self.on_hosts is not None:
            self.on_hosts()

    def committed_sequence(self) -> int:
        """The newest sequence that is durable."""
        return self._held.committed_sequence()

    def forget_held(self) -> None:
        """Drop the envelopes still waiting for their commit (the session was deleted)."""
        self._held.forget()
