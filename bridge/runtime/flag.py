"""A one-shot flag that costs an :class:`anyio.Event` only once someone waits on it.

An ``anyio.Event`` is about 700 bytes (an asyncio event and its waiter deque).  A session
has two that are waited on only while it closes, so they are :class:`Flag` objects: a
slot or two until then.
"""

from __future__ import annotations

import anyio

__all__ = ["Flag"]


class Flag:
    """Set once; :meth:`wait` returns at once if set, else when :meth:`set` is called."""

    __slots__ = ("_event", "_set")

    def __init__(self) -> None:
        self._set = False
        self._event: anyio.Event | None = None

    def is_set(self) -> bool:
        """Whether :meth:`set` was called."""
        return self._set

    def set(self) -> None:
        """Set the flag and wake every waiter (idempotent)."""
        self._set = True
        if self._event is not None:
            self._event.set()

    async def wait(self) -> None:
        """Wait until the flag is set."""
        if self._set:
            return
        if self._event is None:
            self._event = anyio.Event()
        await self._event.wait()
