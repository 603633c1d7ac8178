"""What every session and run of one runtime shares: identity, time, history, limits.

One :class:`Services` per :class:`~agent_bridge.runtime.Runtime`, handed to each
:class:`~agent_bridge.runtime.sessions.Session` so that sessions and runs own their
transitions without reaching back into the runtime.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_bridge.errors import BridgeError
from agent_bridge.ids import Clock, IdFactory
from agent_bridge.journal import History, JournalCorrupt
from agent_bridge.runtime.delivery import Delivery
from agent_bridge.runtime.interactions import Interaction, SettledInteraction

if TYPE_CHECKING:
    from agent_bridge.runtime.sessions import Session

__all__ = ["Services"]


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

    async def flush(self) -> None:
        """Wait until everything recorded so far is durable (while the journal is failing,
        until it commits again); raises ``history_corrupt`` once it is damaged."""
        history = self.history
        try:
            await history.committed_through(history.mark())
        except JournalCorrupt:
            raise BridgeError("history_corrupt") from None

    def check_writable(self) -> None:
        """Raise ``journal_failing`` (retryable) while the journal cannot commit, and
        ``history_corrupt`` once it is damaged: new sessions and runs are refused then."""
        health = self.history.health
        if health != "ok":
            raise BridgeError("journal_failing" if health == "failing" else "history_corrupt")
