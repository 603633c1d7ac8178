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
        #: the cached stamp is for wall times in ``[_lo, _hi)`` (its millisecond)
        self._lo = 0.0
        self._hi = 0.0
        self._cached = ""
        self._cached_bytes = b""
        #: ``YYYY-MM-DDTHH:MM:SS`` of the second ``_second`` (``strftime`` once a second)
        self._second = -1
        self._second_text = ""

    def now_iso(self) -> str:
        """Return the current UTC time as RFC 3339 with milliseconds (cached per ms)."""
        t = self._wall()
        if not self._lo <= t < self._hi:
            self._stamp(t)
        return self._cached

    def now_iso_bytes(self) -> bytes:
        """As :meth:`now_iso`, ASCII-encoded (for stamping pre-encoded envelopes)."""
        t = self._wall()
        if not self._lo <= t < self._hi:
            self._stamp(t)
        return self._cached_bytes

    def _stamp(self, t: float) -> None:
        """Cache the stamp of the millisecond of wall time ``t``.  Later times never get
        an earlier stamp: a time is given the cached one only while it is inside the
        cached millisecond's bounds, and ``int(t * 1000)`` does not decrease with ``t``."""
        ms = int(t * 1000)
        seconds, millis = divmod(ms, 1000)
        if seconds != self._second:
            self._second = seconds
            self._second_text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
        self._cached = f"{self._second_text}.{millis:03d}Z"
        self._cached_bytes = self._cached.encode()
        self._lo = ms / 1000
        self._hi = (ms + 1) / 1000
