"""Raw provider records: how they are taken from an adapter and given back to a host.

An adapter may attach to an emitted payload the record it projected it from
(``RunContext.emit(payload, raw=...)``): the bytes of a line of a CLI's stream, a decoded
message, a script step.  Bytes and strings are kept exactly as received; anything else is
encoded as JSON once.  Consecutive payloads attached to the *same object* share one raw
record.  A raw record is identified by the sequence of the first event projected from it,
and linked to its events by ``[first, last]`` spans of sequences.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from agent_bridge.wire.methods import RawRecord

__all__ = ["encode_raw", "raw_records"]


def encode_raw(raw: Any) -> bytes | None:
    """Return ``raw`` as the bytes to store, or ``None`` if it cannot be encoded."""
    if isinstance(raw, bytes):
        return raw
    if isinstance(raw, (bytearray, memoryview)):
        return bytes(raw)
    if isinstance(raw, str):
        return raw.encode("utf-8", "surrogatepass")
    try:
        return msgspec.json.encode(raw)
    except (TypeError, ValueError, OverflowError, RecursionError):
        return None


def _record(raw_id: int, spans: list[tuple[int, int]], stored: bytes) -> RawRecord:
    try:
        msgspec.json.decode(stored)
    except msgspec.DecodeError:
        return RawRecord(raw_id, tuple(spans), text=stored.decode("utf-8", "replace"))
    return RawRecord(raw_id, tuple(spans), record=msgspec.Raw(stored))


def raw_records(
    links: Iterable[tuple[int, int, int]], records: dict[int, bytes], lo: int, hi: int
) -> list[RawRecord]:
    """Return the raw records of events ``lo``..``hi``: ``links`` are ``(first, last,
    raw_id)`` spans in sequence order, ``records`` the stored records by id.  Records
    come in the order of their first linked event in the range; spans are clipped to it."""
    spans: dict[int, list[tuple[int, int]]] = {}
    for first, last, raw_id in links:
        a, b = max(first, lo), min(last, hi)
        if a > b:
            continue
        owned = spans.setdefault(raw_id, [])
        if owned and owned[-1][1] == a - 1:
            owned[-1] = (owned[-1][0], b)
        else:
            owned.append((a, b))
    return [
        _record(raw_id, owned, records[raw_id])
        for raw_id, owned in spans.items()
        if raw_id in records
    ]
