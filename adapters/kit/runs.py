"""A run handle whose outcome is set exactly once.

A run can end from several places at the same time — the provider's own end-of-turn
record, the child's EOF, ``dispose``, a failed background task — and the SPI wants one
answer from :meth:`~agent_bridge.spi.ProviderRun.wait`.  :class:`RunHandle` makes the
first ending win and every later one a no-op, so no adapter has to guard it again.
:func:`check_can_start` and :func:`end_quietly` are the two guards a session with one run
at a time repeats around it (``start_run``'s refusals, ``dispose``'s silent end).
"""

from __future__ import annotations

from typing import Protocol

import anyio

from agent_bridge.errors import BridgeError
from agent_bridge.spi import ProviderRun, RunOutcome

__all__ = ["QuietlyFinishable", "RunHandle", "check_can_start", "end_quietly"]


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


class QuietlyFinishable(Protocol):
    """A run whose ``finish`` can skip the closing payloads (``emit=False``)."""

    def finish(self, outcome: RunOutcome, *, emit: bool = ...) -> bool: ...


def check_can_start(disposed: bool, active: ProviderRun | None) -> None:
    """Refuse a new run the SPI's way; return ``None`` when it may start.

    Raises :class:`~agent_bridge.errors.BridgeError` ``session_closed`` once the session
    is disposed, and ``run_active`` while ``active`` (the session's current run) is set.
    """
    if disposed:
        raise BridgeError("session_closed")
    if active is not None:
        raise BridgeError("run_active")


def end_quietly(run: QuietlyFinishable | None) -> None:
    """End ``run`` (if any) as ``interrupted`` without emitting: what ``dispose`` does,
    since nobody listens to a disposed session's run any more."""
    if run is not None:
        run.finish(RunOutcome.interrupted(), emit=False)
