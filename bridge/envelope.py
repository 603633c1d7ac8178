"""Stamping: a payload becomes an encoded :class:`~agent_bridge.wire.events.EventEnvelope`.

One bytes template per session, so stamping an event is a single ``%`` operation.  The
``eventId`` is ``evt_<session token>_<sequence in hex>``: unique, and the same whether the
event is read live, from history, or after the session was resumed by another bridge
process.
"""

from __future__ import annotations

import msgspec

from agent_bridge.wire.events import EventPayload

__all__ = ["EnvelopeFormat", "stamp"]

_encode = msgspec.json.encode


class EnvelopeFormat:
    """The templates of one session's envelopes: :attr:`run` takes ``(sequence, run id,
    sequence, occurredAt, payload)``, :attr:`sessionwide` ``(sequence, sequence,
    occurredAt, payload)``, all bytes except the sequences.

    They are built at the session's first event, not when it is made: an idle session
    (most of a host's) then holds none of their ~460 bytes.  Until then the slots are
    unset, so the first read of one goes to :meth:`__getattr__`, which fills all three;
    every later read is a plain slot read."""

    __slots__ = ("_head", "_session_id", "run", "sessionwide")

    _head: bytes
    run: bytes
    sessionwide: bytes

    def __init__(self, session_id: str) -> None:
        self._session_id = session_id

    def __getattr__(self, name: str) -> bytes:
        """Build the templates (called only while a slot is unset) and return ``name``'s;
        raises :class:`AttributeError` for any other name."""
        if name not in ("_head", "run", "sessionwide"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        session_id = self._session_id
        token = session_id.split("_", 1)[-1].encode()
        head = b'{"eventId":"evt_%s_%%x","sessionId":"%s",' % (token, session_id.encode())
        tail = b'"sequence":%d,"occurredAt":"%s","payload":%s}'
        self._head = head
        self.run = head + b'"runId":"%s",' + tail
        self.sessionwide = head + tail
        value: bytes = object.__getattribute__(self, name)
        return value

    def run_batch(self, run_id: bytes, occurred_at: bytes) -> bytes:
        """Return the template of a run's envelopes that share ``occurred_at``: it takes
        ``(sequence, sequence, payload)`` (the two constants are filled in once, not once
        per envelope)."""
        run_id = run_id.replace(b"%", b"%%")
        occurred_at = occurred_at.replace(b"%", b"%%")
        tail = b'"runId":"%s","sequence":%%d,"occurredAt":"%s","payload":%%s}'
        return self._head + tail % (run_id, occurred_at)


def stamp(
    fmt: EnvelopeFormat,
    sequence: int,
    run_id: str | None,
    occurred_at: bytes,
    payload: EventPayload,
) -> bytes:
    """Return the encoded envelope of ``payload`` at ``sequence``."""
    if run_id is None:
        return fmt.sessionwide % (sequence, sequence, occurred_at, _encode(payload))
    return fmt.run % (sequence, run_id.encode(), sequence, occurred_at, _encode(payload))
