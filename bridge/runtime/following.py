"""Following a session another fleet member owns, for a host attached here.

A session open in this process streams to its subscribers live.  A session open in
another member's process (the PostgreSQL journal, ``docs/fleet.md``) has no stream
here: after the attach replay, :func:`follow_remote` waits for the database to say the
session committed more (:meth:`~agent_bridge.journal.base.Followable.wait_committed`,
``LISTEN``/``NOTIFY``, never a poll), reads the new events from the journal and sends
them on, in order, from the sequence after the replay's last: no gap (every page starts
at the cursor) and no duplicate (the cursor only moves by what was sent).  It ends after
the session's ``session.closed`` (not one for ``bridge_crashed``: a dead owner's session
is closed so, then resumed by the member that takes it over, and the host follows on to
its ``session.resumed`` and what comes after), when the history cannot be read (logged:
the host can attach again), or when its cancel scope is cancelled (the host detached).

Interactions are offered too: an ``interaction.requested`` it passes on is also asked of
its host (``interaction/request``, when the host can answer that kind) as a
:class:`RemoteInteraction`, whose answer is routed to the owner
(:mod:`.routing`); the owner's first valid answer from anywhere settles it, and the
``interaction.settled`` that follows withdraws every other member's offer.  Those
already pending when the host attached (journaled as pending once the replay was sent)
are offered first, under their ids; one settled meanwhile is withdrawn by the
``interaction.settled`` that follows in the stream.  At a ``session.resumed`` (a dead
owner's session reopened, its cut-off run continued: :mod:`.continuing`) every offer is
withdrawn and the interactions still pending are offered again, under their ids.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final, Literal

import anyio
import msgspec

from agent_bridge.errors import BridgeError
from agent_bridge.journal import Followable, History
from agent_bridge.runtime.interactions import Interaction, validate_answer
from agent_bridge.runtime.reading import guard
from agent_bridge.runtime.routing import route
from agent_bridge.runtime.stream import Released, Subscription
from agent_bridge.wire.interactions import Answer, InteractionRequest
from agent_bridge.wire.methods import InteractionRespondParams

__all__ = ["RemoteInteraction", "follow_remote"]

log = logging.getLogger("agent_bridge.runtime")

#: The most events a follower reads at once: everything committed since its cursor, up
#: to this.  (Pages of ``events/read``'s 1,000 made a host on another member fall a read
#: per 1,000 events behind a fast run: ~100 ms at p50 in ``bench/fleet.py``'s burst of
#: 100,000; reading what the notification says is there keeps it one read behind.  The
#: bound keeps a read's memory to a few megabytes.)
FOLLOW_READ_MAX: Final = 10_000


class _Tail(msgspec.Struct):
    payload: _Type


class _Type(msgspec.Struct):
    type: str
    reason: str | None = None  # a session.closed's


_tail = msgspec.json.Decoder(_Tail)


class RemoteInteraction(Interaction):
    """An interaction pending in another member, offered to a host here: its answer is
    routed to the owner (``send``); it is settled here only by the owner's
    ``interaction.settled``, and a host's error withdraws only this offer."""

    __slots__ = ("_send",)

    def __init__(
        self,
        interaction_id: str,
        session_id: str,
        run_id: str,
        request: InteractionRequest,
        send: Callable[[Answer], None],
    ) -> None:
        super().__init__(interaction_id, session_id, run_id, request)
        self._send = send

    def respond(self, answer: Answer) -> Literal["applied", "duplicate"]:
        """Check the answer and send it to the owner (which decides if it settles)."""
        if not self.pending:
            return super().respond(answer)
        validate_answer(self.request, answer)
        self._send(answer)
        return "applied"

    def settle(self, status: Any, answer: Answer | None = None, *, auto: bool = False) -> bool:
        """A host's failure to answer here settles nothing (the owner decides)."""
        return False

    def settled_by_owner(self, status: Any) -> None:
        """The owner settled it: withdraw this offer."""
        super().settle(status, None, auto=True)


async def follow_remote(history: History, session_id: str, subscription: Subscription) -> None:
    """Send ``subscription``'s subscriber the session's events committed after its
    cursor, as they are committed elsewhere, until the session closes."""
    assert isinstance(history, Followable)
    subscriber = subscription.subscriber
    offered: dict[str, RemoteInteraction] = {}
    try:
        async with anyio.create_task_group() as tg:

            def sender(interaction_id: str) -> Callable[[Answer], None]:
                def send(answer: Answer) -> None:
                    tg.start_soon(_answer, history, interaction_id, answer)

                return send

            #: the newest event committed when the pending interactions were last read:
            #: a session.resumed up to it is already reflected in what was offered
            fresh = 0

            async def offer_pending() -> None:
                nonlocal fresh
                stored = await guard(history.load_session(session_id))
                fresh = 0 if stored is None else stored.last_sequence
                for interaction_id, run_id, request in await guard(
                    history.pending_interactions(session_id)
                ):
                    _ask(
                        interaction_id, run_id, request, session_id, offered, subscriber, tg, sender
                    )

            try:
                await offer_pending()
                while True:
                    cursor = subscription.cursor
                    await guard(history.wait_committed(session_id, cursor))
                    page = await guard(
                        history.read_events(session_id, cursor + 1, cursor + FOLLOW_READ_MAX)
                    )
                    if not page:
                        log.warning("session %s: told of events that cannot be read", session_id)
                        break
                    subscription.cursor = cursor + len(page)
                    if subscriber.publish(Released(session_id, cursor + 1, page)):
                        await subscriber.drained()
                    for sequence, body in enumerate(page, cursor + 1):
                        if b'"interaction.' in body:
                            _offer(body, session_id, offered, subscriber, tg, sender)
                        elif b'"session.resumed"' in body and sequence > fresh:
                            # reopened after its owner died: what is still pending (a run
                            # the new owner continues) is offered again, under its id
                            for remote in offered.values():
                                remote.settled_by_owner("withdrawn")
                            offered.clear()
                            await offer_pending()
                    last = _tail.decode(page[-1]).payload
                    if last.type == "session.closed" and last.reason != "bridge_crashed":
                        break  # (a crashed owner's session goes on where it is taken over)
            finally:
                # the host's offers end with its following here (the session ended, the
                # host detached, or the session is open here now: offered again there)
                for remote in offered.values():
                    remote.settled_by_owner("withdrawn")
                offered.clear()
            tg.cancel_scope.cancel()  # offers still open end with the session
    except BridgeError as exc:
        log.warning("session %s: cannot follow it here (%s)", session_id, exc.error_code)


def _offer(
    body: bytes,
    session_id: str,
    offered: dict[str, RemoteInteraction],
    subscriber: Any,
    tg: anyio.abc.TaskGroup,
    sender: Callable[[str], Callable[[Answer], None]],
) -> None:
    """Offer an ``interaction.requested`` to the host; withdraw on ``interaction.settled``."""
    event = msgspec.json.decode(body)
    payload = event.get("payload", {})
    interaction_id = payload.get("interactionId")
    if payload.get("type") == "interaction.requested":
        request = msgspec.json.encode(payload.get("request"))
        _ask(
            interaction_id,
            event.get("runId", ""),
            request,
            session_id,
            offered,
            subscriber,
            tg,
            sender,
        )
    elif payload.get("type") == "interaction.settled":
        settled = offered.pop(interaction_id, None)
        if settled is not None:
            settled.settled_by_owner(payload.get("status", "responded"))


def _ask(
    interaction_id: str,
    run_id: str,
    request: bytes,
    session_id: str,
    offered: dict[str, RemoteInteraction],
    subscriber: Any,
    tg: anyio.abc.TaskGroup,
    sender: Callable[[str], Callable[[Answer], None]],
) -> None:
    """Offer the interaction to the host (once per id; ``request``: its JSON), when the
    host can answer that kind; a request that does not decode is not offered."""
    if interaction_id in offered:
        return
    try:
        decoded = msgspec.json.decode(request, type=InteractionRequest)
    except msgspec.DecodeError:
        return
    remote = RemoteInteraction(interaction_id, session_id, run_id, decoded, sender(interaction_id))
    offered[interaction_id] = remote
    if subscriber.can_answer(remote.kind):
        tg.start_soon(subscriber.ask, remote)


async def _answer(history: History, interaction_id: str, answer: Answer) -> None:
    """Route a host's answer to the member that owns the interaction."""
    try:
        await route(
            history,
            "interaction/respond",
            InteractionRespondParams(interaction_id, answer),
            BridgeError("interaction_not_found"),
        )
    except BridgeError as exc:
        log.info("interaction %s: answer not applied (%s)", interaction_id, exc.error_code)
