"""Where providers come from: the built-in scripted provider and the entry-point group
``agent_bridge.providers``, through which third parties add theirs.

Entry points are read on first use, not at start-up, to keep start-up fast.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from bridge.errors import BridgeError
from bridge.spi import AgentProvider

__all__ = ["ENTRY_POINT_GROUP", "ProviderRegistry"]

log = logging.getLogger("agent_bridge.registry")

ENTRY_POINT_GROUP = "agent_bridge.providers"


class ProviderRegistry:
    """Maps provider ids to provider instances."""

    def __init__(
        self, providers: Iterable[AgentProvider] = (), *, load_entry_points: bool = True
    ) -> None:
        self._providers: dict[str, AgentProvider] = {p.id: p for p in providers}
        self._load_entry_points = load_entry_points
        self._loaded = not load_entry_points

    def register(self, provider: AgentProvider) -> None:
        """Add (or replace) a provider."""
        self._providers[provider.id] = provider

    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        from importlib.metadata import entry_points

        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if ep.name in self._providers:
                continue
            try:
                factory = ep.load()
                provider = factory()
            except Exception:
                log.exception("provider entry point %s failed to load", ep.name)
                continue
            if isinstance(provider, AgentProvider):
                self._providers.setdefault(provider.id, provider)

    def get(self, provider_id: str) -> AgentProvider:
        """Return the provider; raise ``BridgeError("provider_not_found")``."""
        provider = self._providers.get(provider_id)
        if provider is None:
            self._ensure_loaded()
            provider = self._providers.get(provider_id)
        if provider is None:
            raise BridgeError("provider_not_found", details={"provider": provider_id[:100]})
        return provider

    def all(self) -> list[AgentProvider]:
        """Return every provider, built-in first."""
        self._ensure_loaded()
        return list(self._providers.values())
