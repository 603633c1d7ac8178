"""The scripted provider's "own sessions": self-contained references, for tests and examples.

The scripted provider keeps no store, so it cannot list sessions.  Instead a reference
carries its history inline: ``sessionRef`` is a JSON array of records, each an event
payload object (``{"type": "run.started", "input": "…"}``, ``{"type": "text.delta", …}``).
``provider/sessions/read`` returns them as records (``raw``: each element's JSON as
written in the reference) and ``provider/sessions/continue`` continues a scripted
session whose earlier inputs are the records' ``run.started`` inputs.  This lets the
binding, the import and every front-end door be exercised deterministically, without a
provider CLI.
"""

from __future__ import annotations

import re
from typing import Final, Literal

import msgspec

from agent_bridge.errors import BridgeError
from agent_bridge.wire.events import Diagnostic, EventPayload, RunStarted
from agent_bridge.wire.native import NativeRecord, NativeSessionsReadResult

__all__ = ["MAX_REF_CHARS", "inputs", "read_page"]

#: The longest reference taken (the whole history is in it).
MAX_REF_CHARS: Final = 1024 * 1024
_CURSOR_RE: Final = re.compile(r"r([0-9]{1,9})")
_payload_decoder: Final = msgspec.json.Decoder(EventPayload)


def _records(session_ref: str) -> list[msgspec.Raw]:
    """The reference's records; raises ``invalid_params`` when it is not a JSON array."""
    if len(session_ref) > MAX_REF_CHARS:
        raise BridgeError("invalid_params", details={"field": "sessionRef"})
    try:
        records = msgspec.json.decode(session_ref, type=list[msgspec.Raw])
    except msgspec.DecodeError:
        raise BridgeError("invalid_params", details={"field": "sessionRef"}) from None
    return records


def _project(raw: msgspec.Raw) -> tuple[EventPayload, ...]:
    try:
        return (_payload_decoder.decode(raw),)
    except msgspec.DecodeError:
        return (
            Diagnostic(
                level="info",
                code="unknown_record",
                message="a record of a type the adapter does not know",
            ),
        )


def read_page(
    session_ref: str, cursor: str | None, limit: int, start: Literal["start", "end"]
) -> NativeSessionsReadResult:
    """A page of the reference's records (cursors ``r<index>``).  Raises
    ``invalid_params`` for a reference that is not a JSON array or a cursor past it."""
    records = _records(session_ref)
    if cursor is not None:
        match = _CURSOR_RE.fullmatch(cursor)
        if match is None or int(match.group(1)) > len(records):
            raise BridgeError("invalid_params", details={"field": "cursor"})
        first = int(match.group(1))
    else:
        first = 0 if start == "start" else max(0, len(records) - limit)
    page = records[first : first + limit]
    return NativeSessionsReadResult(
        tuple(
            NativeRecord(f"r{first + i}", raw=bytes(raw).decode("utf-8"), events=_project(raw))
            for i, raw in enumerate(page)
        ),
        coverage="exact",
        next_cursor=f"r{first + len(page)}",
        previous_cursor=f"r{max(0, first - limit)}" if first > 0 else None,
    )


def inputs(session_ref: str) -> list[str]:
    """The inputs of the reference's earlier runs (its ``run.started`` records), what a
    scripted session continuing it has seen."""
    out: list[str] = []
    for raw in _records(session_ref):
        for payload in _project(raw):
            if isinstance(payload, RunStarted):
                out.append(payload.input)
    return out
