"""The request-ID ledger: every request we send, recorded until it settles exactly once.

Used for every request the bridge sends, to the host and to JSON-RPC providers alike.

* Ids are monotonic integers, never reused (some clients, Vim 9 among them, cannot
  answer string ids).
* Each entry records its kind when it is opened: the method, the type its result must
  decode into, and its deadline.  A response is decoded through that record, never by
  guessing from the payload's shape.
* Each entry settles exactly once, by the first of: its response, the peer's EOF or
  exit (:meth:`Ledger.fail_all` fails every pending entry at once), its deadline
  (:meth:`Ledger.expire`), or a local cancellation.  Anything arriving for an id that
  is no longer pending (a duplicate or late response, an id never sent) is reported as
  unknown and dropped by the caller.

This module is sans-I/O: it knows nothing of streams or tasks.  Waiters are plain
callbacks invoked synchronously at settlement.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Any, Final, Generic, Literal, TypeVar

import msgspec

from agent_bridge.rpc.errors import INTERNAL_ERROR, ConnectionClosed, RequestTimedOut, RpcError

__all__ = ["Ledger", "LedgerEntry", "Settlement"]

T = TypeVar("T")

Settlement = Literal["pending", "result", "error", "closed", "timeout", "cancelled"]

_decoders: dict[Any, msgspec.json.Decoder[Any]] = {}


def _decoder_for(result_type: Any) -> msgspec.json.Decoder[Any]:
    decoder = _decoders.get(result_type)
    if decoder is None:
        decoder = _decoders[result_type] = msgspec.json.Decoder(result_type)
    return decoder


class LedgerEntry(Generic[T]):
    """One outgoing request: its id, kind, deadline and, once settled, its outcome."""

    __slots__ = (
        "_on_settle",
        "deadline",
        "error",
        "id",
        "method",
        "result",
        "result_type",
        "state",
    )

    def __init__(
        self,
        id: int,
        method: str,
        result_type: type[T] | Any,
        deadline: float | None,
        on_settle: Callable[[LedgerEntry[T]], None] | None,
    ) -> None:
        self.id = id
        self.method = method
        self.result_type = result_type
        self.deadline = deadline
        self.state: Settlement = "pending"
        self.result: T | None = None
        self.error: RpcError | None = None
        self._on_settle = on_settle

    @property
    def settled(self) -> bool:
        """Whether the entry has reached its one and only settlement."""
        return self.state != "pending"

    def outcome(self) -> T:
        """Return the decoded result; raises the settlement's :class:`RpcError` otherwise."""
        if self.state == "result":
            return self.result  # type: ignore[return-value]
        if self.error is not None:
            raise self.error
        raise RuntimeError(f"request {self.id} is still pending")

    def _settle(self, state: Settlement, result: Any = None, error: RpcError | None = None) -> None:
        self.state = state
        self.result = result
        self.error = error
        callback, self._on_settle = self._on_settle, None
        if callback is not None:
            callback(self)


class Ledger:
    """Allocates request ids and settles each request exactly once (see module doc)."""

    def __init__(self, first_id: int = 1) -> None:
        self._ids: Final = itertools.count(first_id)
        self._pending: dict[int, LedgerEntry[Any]] = {}
        self._deadlines: list[tuple[float, int]] = []
        self.unknown_responses = 0

    def __len__(self) -> int:
        return len(self._pending)

    def open(
        self,
        method: str,
        result_type: type[T] | Any,
        *,
        deadline: float | None = None,
        on_settle: Callable[[LedgerEntry[T]], None] | None = None,
    ) -> LedgerEntry[T]:
        """Record a request about to be sent; return its entry (with a fresh id)."""
        entry: LedgerEntry[T] = LedgerEntry(
            next(self._ids), method, result_type, deadline, on_settle
        )
        self._pending[entry.id] = entry
        if deadline is not None:
            heapq.heappush(self._deadlines, (deadline, entry.id))
        return entry

    def get(self, id: int) -> LedgerEntry[Any] | None:
        """Return the pending entry for ``id``, or ``None``."""
        return self._pending.get(id)

    def _pop(self, raw_id: bytes | int) -> LedgerEntry[Any] | None:
        if isinstance(raw_id, bytes):
            if not raw_id.isdigit():
                self.unknown_responses += 1
                return None
            raw_id = int(raw_id)
        entry = self._pending.pop(raw_id, None)
        if entry is None:
            self.unknown_responses += 1
        return entry

    def settle_result(self, raw_id: bytes | int, result: bytes) -> LedgerEntry[Any] | None:
        """Settle by a ``result`` (raw JSON), decoded by the entry's recorded type.

        Returns the settled entry, or ``None`` when ``raw_id`` is not pending (unknown,
        duplicate or late).  A result that does not fit the recorded type settles the
        entry as an error rather than leaving it hanging.
        """
        entry = self._pop(raw_id)
        if entry is None:
            return None
        try:
            value = _decoder_for(entry.result_type).decode(result)
        except (msgspec.DecodeError, RecursionError) as exc:  # RecursionError: too deep
            entry._settle(
                "error",
                error=RpcError(
                    INTERNAL_ERROR,
                    f"invalid result for {entry.method}",
                    {"reason": "invalid_result", "detail": str(exc)},
                ),
            )
        else:
            entry._settle("result", value)
        return entry

    def settle_error(self, raw_id: bytes | int, error: RpcError) -> LedgerEntry[Any] | None:
        """Settle by an error response (or a malformed one); ``None`` when not pending."""
        entry = self._pop(raw_id)
        if entry is not None:
            entry._settle("error", error=error)
        return entry

    def cancel(self, id: int, reason: str = "cancelled") -> LedgerEntry[Any] | None:
        """Settle ``id`` locally (we no longer want the answer); ``None`` when not pending."""
        entry = self._pending.pop(id, None)
        if entry is not None:
            entry._settle(
                "cancelled", error=RpcError(INTERNAL_ERROR, reason, {"reason": "cancelled"})
            )
        return entry

    def fail_all(self, message: str = "connection closed") -> list[LedgerEntry[Any]]:
        """Fail every pending entry at once (peer EOF or exit); return them."""
        entries = list(self._pending.values())
        self._pending.clear()
        self._deadlines.clear()
        for entry in entries:
            entry._settle("closed", error=ConnectionClosed(message))
        return entries

    def expire(self, now: float) -> list[LedgerEntry[Any]]:
        """Settle every entry whose deadline is at or before ``now`` as timed out."""
        expired: list[LedgerEntry[Any]] = []
        heap = self._deadlines
        while heap and heap[0][0] <= now:
            _, id = heapq.heappop(heap)
            entry = self._pending.pop(id, None)
            if entry is not None:
                entry._settle("timeout", error=RequestTimedOut(entry.method))
                expired.append(entry)
        return expired

    def next_deadline(self) -> float | None:
        """Return the earliest deadline still pending, or ``None``."""
        heap = self._deadlines
        while heap and heap[0][1] not in self._pending:
            heapq.heappop(heap)
        return heap[0][0] if heap else None
