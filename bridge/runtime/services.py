"""What every session and run of one runtime shares: identity, time, history, limits.

One :class:`Services` per :class:`~agent_bridge.runtime.Runtime`, handed to each
:class:`~agent_bridge.runtime.sessions.Session` so that sessions and runs own their
transitions without reaching back into the runtime.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import anyio

from agent_bridge.errors import BridgeError
from agent_bridge.ids import Clock, IdFactory
from agent_bridge.journal import History, JournalBroken, JournalCorrupt
from agent_bridge.runtime.delivery import Delivery
from agent_bridge.runtime.interactions import Interaction, SettledInteraction
from agent_bridge.runtime.limits import LimitsBook

if TYPE_CHECKING:
    from agent_bridge.runtime.sessions import Session

__all__ = ["FAILING_REPLY_WAIT", "Services"]

#: Seconds a command's reply waits for its commit once the journal is failing, before
#: it is answered ``journal_failing`` (retryable).
FAILING_REPLY_WAIT: Final = 2.0
#: While the journal is healthy, how often a waiting reply looks whether it began to fail.
_HEALTH_LOOK: Final = 0.5


class Services:
    """See the module docstring."""

    __slots__ = (
        "clock",
        "delivery",
        "dispose_timeout",
        "history",
        "hold_unanswerable",
        "ids",
        "interactions",
        "interrupt_grace",
        "limits",
        "running",
    )

    def __init__(
        self,
        history: History,
        *,
        ids: IdFactory,
        clock: Clock,
        interrupt_grace: float,
        dispose_timeout: float,
        hold_unanswerable: bool = False,
    ) -> None:
        self.history = history
        self.ids = ids
        self.clock = clock
        self.interrupt_grace = interrupt_grace
        self.dispose_timeout = dispose_timeout
        #: an interaction raised while no client at all is attached waits for the next
        #: attach (the daemon) instead of being denied or cancelled at once; attached
        #: clients that cannot answer its kind still get it denied, visibly
        self.hold_unanswerable = hold_unanswerable
        self.delivery = Delivery(history)
        #: every interaction by id: open ones, and the settled records of ended runs'
        self.interactions: dict[str, Interaction | SettledInteraction] = {}
        #: sessions with an active run (their recovery record is refreshed after commits)
        self.running: dict[Session, None] = {}
        #: the latest limit figures each provider reported (``provider/limits``)
        self.limits = LimitsBook()

    async def flush(self) -> None:
        """Wait until everything recorded so far is durable (while the journal is failing,
        until it commits again); raises ``history_corrupt`` once it is damaged."""
        history = self.history
        try:
            await history.committed_through(history.mark())
        except JournalCorrupt:
            raise BridgeError("history_corrupt") from None
        except JournalBroken:
            raise BridgeError("internal") from None

    async def durable(self) -> None:
        """Wait, as :meth:`flush`, until everything recorded so far is durable, but for at
        most :data:`FAILING_REPLY_WAIT` seconds of the journal failing: then raise
        ``journal_failing`` (retryable; what was recorded stays queued and is committed
        once the journal recovers, so a retry of an idempotent command answers then).
        Raises ``history_corrupt`` once the journal is damaged.  For command replies."""
        history = self.history
        ticket = history.mark()
        failing_until: float | None = None
        while True:
            if history.health == "failing":
                if failing_until is None:
                    failing_until = anyio.current_time() + FAILING_REPLY_WAIT
                wait = failing_until - anyio.current_time()
                if wait <= 0:
                    raise BridgeError("journal_failing")
            else:
                wait = _HEALTH_LOOK
            with anyio.move_on_after(wait):
                try:
                    await history.committed_through(ticket)
                except JournalCorrupt:
                    raise BridgeError("history_corrupt") from None
                except JournalBroken:
                    raise BridgeError("internal") from None
                return

    def check_writable(self) -> None:
        """Raise ``journal_failing`` (retryable) while the journal cannot commit, and
        ``history_corrupt`` once it is damaged, ``internal`` once a bug stopped its writer:
        new sessions and runs are refused then."""
        health = self.history.health
        if health == "failing":
            raise BridgeError("journal_failing")
        if health == "corrupt":
            raise BridgeError("history_corrupt")
        if health == "broken":
            raise BridgeError("internal")
