"""The latest rate-limit and quota figures each provider reported, for ``provider/limits``.

Providers report their limits as ``limits.updated`` events inside runs; an update names
only the meters it knows about (Codex's notifications are sparse), so the book merges
them: each ``(pool, meter)`` keeps the figures of its last report.  Held in memory for the
runtime's lifetime (a new bridge learns them again from the next report); bounded by the
number of distinct meters a provider names, which :data:`MAX_METERS` caps.
"""

from __future__ import annotations

from typing import Final

from agent_bridge.wire.events import LimitMeter, LimitsUpdated
from agent_bridge.wire.methods import ProviderLimitsResult

__all__ = ["MAX_METERS", "LimitsBook"]

#: Meters kept per provider; a provider naming more has its oldest dropped.
MAX_METERS: Final = 64


class LimitsBook:
    """See the module docstring."""

    __slots__ = ("_meters", "_updated")

    def __init__(self) -> None:
        self._meters: dict[str, dict[tuple[str, str], LimitMeter]] = {}
        self._updated: dict[str, str] = {}

    def note(self, provider: str, update: LimitsUpdated, at: str) -> None:
        """Merge ``update`` (reported by ``provider`` at ``at``, RFC 3339) into the book."""
        meters = self._meters.setdefault(provider, {})
        for meter in update.meters:
            key = (meter.pool, meter.meter)
            meters.pop(key, None)  # re-inserted last: the dict's order is the age order
            meters[key] = meter
        while len(meters) > MAX_METERS:
            del meters[next(iter(meters))]
        self._updated[provider] = at

    def read(self, provider: str) -> ProviderLimitsResult:
        """The latest figures of ``provider`` (empty when it reported none), meters sorted
        by pool and meter."""
        meters = self._meters.get(provider, {})
        ordered = tuple(meters[key] for key in sorted(meters))
        return ProviderLimitsResult(provider, ordered, self._updated.get(provider))
