"""Limits in one shape: the pure helpers every adapter's mapping uses to turn what its
provider says about rate limits and quotas into ``limits.updated`` meters and the
``details`` of a ``run.failed`` that hit a limit.

No I/O and no clock of its own: ``now`` is passed in where a relative hint (seconds to
wait) must become an instant.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from typing import Final, Literal

from agent_bridge.wire.errors import ErrorCode, FailureCause
from agent_bridge.wire.events import LimitMeter

__all__ = [
    "MAX_METERS",
    "MeterStatus",
    "http_status_code",
    "instant",
    "limit_details",
    "merge_meters",
    "reset_of",
    "status_of",
]

MeterStatus = Literal["ok", "warning", "exhausted"]

#: Meters an adapter keeps for a session (as the runtime's ``LimitsBook`` keeps per
#: provider); the least recently reported are dropped first.
MAX_METERS: Final = 64

#: The upstream HTTP statuses that name one of the bridge's error codes.
_HTTP_STATUS_CODES: Final[dict[float, ErrorCode]] = {
    401: "provider_auth_required",
    403: "provider_auth_required",
    429: "provider_rate_limited",
}


def http_status_code(status: object) -> ErrorCode | None:
    """The error code an upstream HTTP ``status`` names (401 and 403: the login;
    429: a limit), or ``None`` for any other status (the adapter's default)."""
    if not isinstance(status, int | float):
        return None  # any other JSON value, and nothing unhashable reaches the table
    return _HTTP_STATUS_CODES.get(status)


#: A meter at or above this percent is reported ``warning`` (below 100).
WARNING_PERCENT: Final = 80.0
#: Instants before 2001 or after 2200 (as Unix seconds) are not believed.
_EARLIEST: Final = 978_307_200
_LATEST: Final = 7_258_118_400


def instant(epoch: object) -> str | None:
    """``epoch`` (Unix seconds; milliseconds when it is that large) as ISO 8601 UTC to the
    second (``2026-12-02T03:58:05Z``), or ``None`` when it is not a plausible instant."""
    if isinstance(epoch, bool) or not isinstance(epoch, (int, float)):
        return None
    if not math.isfinite(epoch):
        return None
    seconds = float(epoch)
    if seconds > _LATEST:
        seconds /= 1000.0
    if not _EARLIEST <= seconds <= _LATEST:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(seconds)))


def status_of(percent: float | None) -> MeterStatus | None:
    """``exhausted`` at 100 % or more, ``warning`` from :data:`WARNING_PERCENT`, else
    ``ok``; ``None`` when the percent is unknown."""
    if percent is None:
        return None
    if percent >= 100.0:
        return "exhausted"
    return "warning" if percent >= WARNING_PERCENT else "ok"


def merge_meters(
    known: dict[tuple[str, str], LimitMeter], meters: Iterable[LimitMeter]
) -> dict[tuple[str, str], LimitMeter]:
    """Merge ``meters`` into ``known`` (keyed by pool and meter; the newer wins) and
    return ``known``: at most :data:`MAX_METERS`, the least recently reported dropped
    first (a provider names its meters, so their number is its choice)."""
    for meter in meters:
        key = (meter.pool, meter.meter)
        known.pop(key, None)  # re-inserted last: the dict's order is the age order
        known[key] = meter
    while len(known) > MAX_METERS:
        del known[next(iter(known))]
    return known


def reset_of(meters: Iterable[LimitMeter], now: float | None = None) -> str | None:
    """When the limit that stops requests lifts: the latest ``resets_at`` of the
    ``exhausted`` meters (every one of them must have reset), else ``None``; with ``now``
    (Unix seconds), a meter whose reset has passed no longer counts."""
    after = instant(now) if now is not None else None
    resets = [
        m.resets_at
        for m in meters
        if m.status == "exhausted" and m.resets_at and (after is None or m.resets_at > after)
    ]
    return max(resets) if resets else None


def limit_details(
    cause: FailureCause,
    *,
    resets_at: str | None = None,
    retry_after: float | None = None,
    now: float | None = None,
) -> dict[str, str]:
    """The ``details`` of a run that hit a limit: ``cause`` (``rate_limited`` or
    ``quota_exhausted``), ``resetsAt`` when the provider said when it lifts, and
    ``retryAfterSeconds`` for a relative hint (with ``now``, that hint also gives
    ``resetsAt`` when nothing better did)."""
    out: dict[str, str] = {"cause": cause}
    if retry_after is not None and math.isfinite(retry_after) and 0 <= retry_after < 10**7:
        out["retryAfterSeconds"] = str(math.ceil(retry_after))
        if resets_at is None and now is not None:
            resets_at = instant(now + math.ceil(retry_after))
    if resets_at is not None:
        out["resetsAt"] = resets_at
    return out
