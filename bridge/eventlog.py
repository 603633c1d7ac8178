"""A session's in-memory event log: encoded envelopes, gapless by sequence.

Envelopes are stored encoded, which is both the snapshot (later mutation of a payload
cannot rewrite history) and the fastest form to page out again.  The durable journal
replaces this later behind the same ``append``/``page`` shape.
"""

from __future__ import annotations

__all__ = ["EventLog"]


class EventLog:
    """Append-only list of encoded envelopes; sequence ``n`` is at index ``n - 1``."""

    __slots__ = ("_bodies",)

    def __init__(self) -> None:
        self._bodies: list[bytes] = []

    @property
    def last_sequence(self) -> int:
        """The sequence of the newest event (0 when empty)."""
        return len(self._bodies)

    def append(self, body: bytes) -> int:
        """Append the envelope for sequence ``last_sequence + 1``; return that sequence."""
        self._bodies.append(body)
        return len(self._bodies)

    def page(
        self, *, after: int | None = None, before: int | None = None, limit: int = 100
    ) -> tuple[list[bytes], bool]:
        """Return up to ``limit`` envelopes in ascending order, and whether more exist in
        the direction of travel.

        ``before`` pages backward: the ``limit`` events just below sequence ``before``.
        Otherwise pages forward from just above ``after`` (0 when omitted).
        """
        bodies = self._bodies
        if before is not None:
            end = max(0, min(before - 1, len(bodies)))
            start = max(0, end - limit)
            return bodies[start:end], start > 0
        start = max(0, after or 0)
        end = min(len(bodies), start + limit)
        return bodies[start:end], end < len(bodies)
