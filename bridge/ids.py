"""Identity and time, both injectable: prefixed ids and RFC 3339 timestamps.

Ids are ``<prefix>_<process token><counter>``: unique within and across bridge processes
(the token is random per factory), cheap enough to mint per streamed event.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable
from typing import Final, Literal

__all__ = ["Clock", "IdFactory"]

IdKind = Literal["ses", "run", "int", "evt"]


class IdFactory:
    """Mints distinct, prefixed ids: ``ses_…``, ``run_…``, ``int_…``, ``evt_…``."""

    def __init__(self, token: str | None = None) -> None:
        self._token: Final = token if token is not None else os.urandom(4).hex()
        self._counter = itertools.count(1)

    def new(self, kind: IdKind) -> str:
        """Return a fresh id of ``kind``."""
        return f"{kind}_{self._token}{next(self._counter):06x}"


class Clock:
    """Wall-clock timestamps for events and a monotonic clock for deadlines."""

    def __init__(
        self,
        wall: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._wall = wall
        self.monotonic = monotonic
        self._cached_ms = -1
        self._cached = ""
        self._cached_bytes = b""

    def now_iso(self) -> str:
        """Return the current UTC time as RFC 3339 with milliseconds (cached per ms)."""
        ms = int(self._wall() * 1000)
        if ms != self._cached_ms:
            seconds, millis = divmod(ms, 1000)
            self._cached = (
                time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"
            )
            self._cached_bytes = self._cached.encode()
            self._cached_ms = ms
        return self._cached

    def now_iso_bytes(self) -> bytes:
        """As :meth:`now_iso`, ASCII-encoded (for stamping pre-encoded envelopes)."""
        ms = int(self._wall() * 1000)
        if ms != self._cached_ms:
            self.now_iso()
        return self._cached_bytes
