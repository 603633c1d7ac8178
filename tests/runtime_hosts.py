"""In-process hosts for tests that drive the :class:`~agent_bridge.runtime.Runtime`
directly (no front-end): they implement the runtime's subscriber port.

* :class:`FakeHost` -- collects every event the runtime publishes, decoded; never
  congested; answers no interaction.
* :class:`StuckHost` -- a :class:`FakeHost` that is congested (a host that stopped
  reading) until :meth:`StuckHost.reads` is called.
"""

from __future__ import annotations

from typing import Any

import anyio
import msgspec

from agent_bridge.runtime import Interaction, Released

__all__ = ["FakeHost", "StuckHost"]


class FakeHost:
    """Collects what the runtime publishes; answers nothing."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.congested = False

    def publish(self, events: Released) -> bool:
        self.events += [msgspec.json.decode(e) for e in events.bodies]
        return self.congested

    async def drained(self) -> None:
        return None

    def can_answer(self, kind: str) -> bool:
        return False

    async def ask(self, interaction: Interaction) -> None:
        return None


class StuckHost(FakeHost):
    """Congested from the start: :meth:`drained` waits until :meth:`reads`."""

    def __init__(self) -> None:
        super().__init__()
        self.congested = True
        self._reading = anyio.Event()

    def reads(self) -> None:
        """The host reads again: no longer congested, waiters wake."""
        self.congested = False
        self._reading.set()

    async def drained(self) -> None:
        await self._reading.wait()
