"""Where providers come from: the built-in adapters (named here, imported on first use)
and the entry-point group ``agent_bridge.providers``, through which third parties add
theirs.

Nothing is imported at start-up: a built-in adapter module is imported the first time its
provider is asked for, and entry points are read the first time an unknown id is asked for
or the whole list is wanted.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from agent_bridge.errors import BridgeError
from agent_bridge.spi import AgentProvider

__all__ = ["ENTRY_POINT_GROUP", "ProviderRegistry"]

log = logging.getLogger("agent_bridge.registry")

ENTRY_POINT_GROUP = "agent_bridge.providers"

#: Built-in providers: id -> "module:attribute" of a zero-argument factory.
BUILTIN_PROVIDERS: dict[str, str] = {
    "scripted": "agent_bridge.adapters.scripted:ScriptedProvider",
    "claude-code": "agent_bridge.adapters.claude:ClaudeCodeProvider",
    "codex": "agent_bridge.adapters.codex:CodexProvider",
    "gemini": "agent_bridge.adapters.acp:gemini_provider",
    "acp": "agent_bridge.adapters.acp:generic_provider",
}

#: Providers configured in the bridge's configuration file (``[acp.agents.<id>]``):
#: a zero-argument callable returning a list of providers.
CONFIGURED_PROVIDERS = "agent_bridge.adapters.acp:configured_providers"


def _load(target: str) -> AgentProvider | None:
    module_name, _, attribute = target.partition(":")
    try:
        from importlib import import_module

        factory = getattr(import_module(module_name), attribute)
        provider = factory()
    except Exception:
        log.exception("provider %s failed to load", target)
        return None
    return provider if isinstance(provider, AgentProvider) else None


class ProviderRegistry:
    """Maps provider ids to provider instances."""

    def __init__(
        self,
        providers: Iterable[AgentProvider] = (),
        *,
        builtins: dict[str, str] | None = None,
        load_entry_points: bool = True,
        configured: str | None = None,
    ) -> None:
        self._providers: dict[str, AgentProvider] = {p.id: p for p in providers}
        self._lazy: dict[str, str] = {
            k: v for k, v in (builtins or {}).items() if k not in self._providers
        }
        self._loaded = not load_entry_points
        self._configured = configured

    @classmethod
    def default(cls) -> ProviderRegistry:
        """The registry ``agent-bridge serve`` uses: built-ins, the agents of the
        configuration file, then entry points."""
        return cls(builtins=BUILTIN_PROVIDERS, configured=CONFIGURED_PROVIDERS)

    def _load_configured(self) -> None:
        """Add the providers of the configuration file (once); a configured id replaces
        a built-in of the same id."""
        target, self._configured = self._configured, None
        if target is None:
            return
        module_name, _, attribute = target.partition(":")
        try:
            from importlib import import_module

            providers = getattr(import_module(module_name), attribute)()
        except Exception:
            log.exception("configured providers (%s) failed to load", target)
            return
        for provider in providers:
            if isinstance(provider, AgentProvider):
                self._lazy.pop(provider.id, None)
                self._providers[provider.id] = provider

    def _resolve_lazy(self, provider_id: str) -> None:
        target = self._lazy.pop(provider_id, None)
        if target is not None:
            provider = _load(target)
            if provider is not None:
                self._providers[provider.id] = provider

    def register(self, provider: AgentProvider) -> None:
        """Add (or replace) a provider."""
        self._providers[provider.id] = provider

    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        from importlib.metadata import entry_points

        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if ep.name in self._providers or ep.name in self._lazy:
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
        self._load_configured()
        provider = self._providers.get(provider_id)
        if provider is None:
            self._resolve_lazy(provider_id)
            provider = self._providers.get(provider_id)
        if provider is None:
            self._ensure_loaded()
            provider = self._providers.get(provider_id)
        if provider is None:
            raise BridgeError("provider_not_found", details={"provider": provider_id[:100]})
        return provider

    def all(self) -> list[AgentProvider]:
        """Return every provider, built-in first."""
        self._load_configured()
        for provider_id in list(self._lazy):
            self._resolve_lazy(provider_id)
        self._ensure_loaded()
        return list(self._providers.values())
