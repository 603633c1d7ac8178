"""A run handle whose outcome is set exactly once.

A run can end from several places at the same time — the provider's own end-of-turn
record, the child's EOF, ``dispose``, a failed background task — and the SPI wants one
answer from :meth:`~agent_bridge.spi.ProviderRun.wait`.  :class:`RunHandle` makes the
first ending win and every later one a no-op, so no adapter has to guard it again.
"""

from __future__ import annotations

import anyio

from agent_bridge.spi import ProviderRun, RunOutcome

__all__ = ["RunHandle"]


class RunHandle(ProviderRun):
    """A :class:`~agent_bridge.spi.ProviderRun` that finishes once.

    Subclasses implement ``interrupt`` (and ``steer`` where supported) and call
    :meth:`finish` (or :meth:`finish_with_error`) when the run ends.  Subclasses that
    need to act when the run ends override :meth:`finish` and call ``super().finish``.
    """

    def __init__(self) -> None:
        self._finished = anyio.Event()
        self._outcome: RunOutcome | None = None
        self._error: Exception | None = None

    @property
    def finished(self) -> bool:
        """Whether the run has ended (its outcome is fixed)."""
        return self._finished.is_set()

    @property
    def outcome(self) -> RunOutcome | None:
        """The outcome once finished (``None`` before, or when it ended with an error)."""
        return self._outcome

    def finish(self, outcome: RunOutcome) -> bool:
        """Record ``outcome`` if the run has not ended yet; return whether it did (the
        first call wins, later ones change nothing)."""
        if self._finished.is_set():
            return False
        self._outcome = outcome
        self._finished.set()
        return True

    def finish_with_error(self, error: Exception) -> bool:
        """End the run so that :meth:`wait` raises ``error`` (the runtime reports a
        :class:`~agent_bridge.errors.ProviderFailure` as classified and anything else as
        ``provider_contract``); return whether this call ended the run."""
        if self._finished.is_set():
            return False
        self._error = error
        self._finished.set()
        return True

    async def finished_event(self) -> None:
        """Wait until the run has ended, without reading the outcome."""
        await self._finished.wait()

    async def wait(self) -> RunOutcome:
        """Wait for the end; return the outcome, or raise the error it ended with."""
        await self._finished.wait()
        if self._error is not None:
            raise self._error
        assert self._outcome is not None
        return self._outcome
