"""The settled projection of a page of events (sans-I/O).

In a settled page every maximal run of *consecutive* events (adjacent sequences) that are
``text.delta`` of one run (and one ``messageId``, when the provider names its messages)
becomes one ``text.delta`` event carrying their concatenated text and that ``messageId``;
likewise ``thinking.delta``.  The folded event keeps the ``eventId``,
``sequence`` and ``occurredAt`` of the *last* delta it stands for, and says where the
group began in ``foldedFrom``; a group of one delta is left as it is.  Any other event
in between (tool activity, an interaction, usage…) ends a group.

Folding happens within the page: a group cut by a page boundary appears as one folded
event at the end of one page and another at the start of the next (both of the same run
and kind, with adjacent sequences); a host that wants one piece concatenates them.  So a
settled page never holds more events than the exact page of the same range, and paging
with ``after = lastSequenceOfPage`` works unchanged.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Final

import msgspec

from agent_bridge.wire.events import EventEnvelope, TextDelta, ThinkingDelta

__all__ = ["settle"]


class _Payload(msgspec.Struct, rename="camel"):
    type: str
    text: str | None = None
    message_id: str | None = None


class _Peek(msgspec.Struct, rename="camel"):
    sequence: int
    payload: _Payload
    run_id: str | None = None


_peek: Final = msgspec.json.Decoder(_Peek)


@functools.cache
def _envelope() -> msgspec.json.Decoder[EventEnvelope]:
    """The envelope decoder, built when first folding: a decoder of every event type
    takes milliseconds, and the journal is imported before ``serve`` answers
    ``initialize``."""
    return msgspec.json.Decoder(EventEnvelope)


_FOLDED: Final = {"text.delta": TextDelta, "thinking.delta": ThinkingDelta}


def settle(bodies: Sequence[bytes]) -> list[bytes]:
    """Return the settled projection of consecutive envelopes ``bodies`` (see the module
    docstring)."""
    out: list[bytes] = []
    group: list[tuple[_Peek, bytes]] = []

    def flush() -> None:
        if len(group) == 1:
            out.append(group[0][1])
        elif group:
            first, last = group[0][0], group[-1]
            text = "".join(peek.payload.text or "" for peek, _ in group)
            envelope = _envelope().decode(last[1])
            folded = msgspec.structs.replace(
                envelope,
                payload=_FOLDED[first.payload.type](text=text, message_id=first.payload.message_id),
                folded_from=first.sequence,
            )
            out.append(msgspec.json.encode(folded))
        group.clear()

    for body in bodies:
        peek = _peek.decode(body)
        kind = peek.payload.type
        if kind in _FOLDED:
            if group:
                head = group[-1][0]
                if (
                    head.payload.type != kind
                    or head.payload.message_id != peek.payload.message_id
                    or head.run_id != peek.run_id
                    or head.sequence + 1 != peek.sequence
                ):
                    flush()
            group.append((peek, body))
        else:
            flush()
            out.append(body)
    flush()
    return out
