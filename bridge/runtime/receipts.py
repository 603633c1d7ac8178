"""Command receipts: a ``commandId`` makes a retried ``run/start`` idempotent.

The same id with the same payload returns the first receipt (``duplicate``), also after a
restart of the bridge (receipts are journaled); the same id with another payload is
``command_conflict``.  A receipt is reserved in memory the moment a start is accepted, so
a retry racing the first attempt is answered as a duplicate too.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from agent_bridge.errors import BridgeError
from agent_bridge.journal import History
from agent_bridge.runtime.reading import guard
from agent_bridge.wire.methods import RunInput, RunStartResult

__all__ = ["Receipts"]

_encode = msgspec.json.encode
_receipt_decoder: Final = msgspec.json.Decoder(RunStartResult)


class Receipts:
    """See the module docstring."""

    __slots__ = ("_history", "_known")

    def __init__(self, history: History) -> None:
        self._history = history
        #: command id -> (payload key, first result), for this process
        self._known: dict[str, tuple[bytes, RunStartResult]] = {}

    @staticmethod
    def key(session_id: str, input: RunInput, options: Any) -> bytes:
        """The payload a command id is bound to."""
        return _encode((session_id, input, options))

    async def find(self, command_id: str, key: bytes) -> RunStartResult | None:
        """The first result for ``command_id``, or ``None`` when it is new.  Raises
        ``command_conflict`` when it was used with another payload, and
        ``history_unavailable``."""
        known = self._known.get(command_id)
        if known is None:
            stored = await guard(self._history.find_receipt(command_id))
            known = self._known.get(command_id)  # made while we waited?
            if known is None and stored is not None:
                known = (stored[0], _receipt_decoder.decode(stored[1]))
        if known is None:
            return None
        if known[0] != key:
            raise BridgeError("command_conflict")
        return known[1]

    def reserved(self, command_id: str, key: bytes) -> RunStartResult | None:
        """:meth:`find` in this process's memory only (no wait): the result reserved for
        ``command_id`` since, or ``None``; raises ``command_conflict`` as it does."""
        known = self._known.get(command_id)
        if known is None:
            return None
        if known[0] != key:
            raise BridgeError("command_conflict")
        return known[1]

    def reserve(self, command_id: str, key: bytes, result: RunStartResult) -> None:
        """Answer retries of ``command_id`` with ``result`` from now on."""
        self._known[command_id] = (key, result)

    def release(self, command_id: str) -> None:
        """Forget a reservation whose command failed."""
        self._known.pop(command_id, None)

    def save(
        self, command_id: str, session_id: str, key: bytes, result: RunStartResult, now: str
    ) -> None:
        """Journal the receipt (durable with the run's start)."""
        self._history.save_receipt(command_id, session_id, key, _encode(result), now)

    def forget_session(self, session_id: str) -> None:
        """Drop the receipts of a deleted session."""
        self._known = {k: v for k, v in self._known.items() if v[1].session_id != session_id}
