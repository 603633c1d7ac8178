"""Where providers come from: the built-in adapters (named here, imported on first use)
and the entry-point group ``agent_bridge.providers``, through which third parties add
theirs.

Nothing is imported at start-up: a built-in adapter module is imported the first time its
provider is asked for, and entry points are read the first time an unknown id is asked for
or the whole list is wanted.  Importing them all takes a while (~125 ms for the built-ins),
so a caller on an event loop runs :meth:`ProviderRegistry.warm` in a worker thread first:
it does the imports and the entry-point scan there, and the :meth:`~ProviderRegistry.all`
that follows only instantiates.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from importlib import import_module
from typing import Any

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
    "opencode": "agent_bridge.adapters.acp:opencode_provider",
    "qwen": "agent_bridge.adapters.acp:qwen_provider",
    "fast-agent": "agent_bridge.adapters.acp:fast_agent_provider",
    "mistral-vibe": "agent_bridge.adapters.acp:mistral_vibe_provider",
    "acp": "agent_bridge.adapters.acp:generic_provider",
}

#: Providers configured in the bridge's configuration file (``[acp.agents.<id>]``): a
#: callable taking the loaded :class:`~agent_bridge.config.Config` and returning a list of
#: providers.  Its module (the whole ACP adapter) is imported only when the file has that
#: table (:data:`CONFIGURED_TABLE`): a bridge whose sessions are all of one built-in
#: provider never loads the others.
CONFIGURED_PROVIDERS = "agent_bridge.adapters.acp:configured_providers"
#: The table of the configuration file whose entries are providers (section, key).
CONFIGURED_TABLE = ("acp", "agents")


def _load(target: str) -> AgentProvider | None:
    module_name, _, attribute = target.partition(":")
    try:
        factory = getattr(import_module(module_name), attribute)
        provider = factory()
    except Exception:
        log.exception("provider %s failed to load", target)
        return None
    return provider if isinstance(provider, AgentProvider) else None


def _import_modules(
    targets: list[str], entry_points_too: bool, skip: frozenset[str]
) -> tuple[Any, ...] | None:
    """Import the module of each ``module:attribute`` target and, when
    ``entry_points_too``, read the provider entry points and import the module of each
    whose name is not in ``skip``; return the entry points read (``None``: not read).
    Blocking (a worker thread's job); never raises."""
    for target in targets:
        with contextlib.suppress(Exception):  # loaded (and logged) again by all()
            import_module(target.partition(":")[0])
    if not entry_points_too:
        return None
    from importlib.metadata import entry_points

    try:
        found = tuple(entry_points(group=ENTRY_POINT_GROUP))
    except Exception:
        log.exception("reading the provider entry points failed")
        return None
    for ep in found:
        if ep.name not in skip:
            with contextlib.suppress(Exception):
                import_module(ep.module)
    return found


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
        #: the entry points of :data:`ENTRY_POINT_GROUP`, once :meth:`warm` has read them
        self._entry_points: tuple[Any, ...] | None = None

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
        from agent_bridge.config import load_config

        config = load_config()
        section, key = CONFIGURED_TABLE
        if not isinstance(config.section(section).get(key), dict):
            return  # nothing configured: nothing to import
        module_name, _, attribute = target.partition(":")
        try:
            providers = getattr(import_module(module_name), attribute)(config)
        except Exception:
            log.exception("configured providers (%s) failed to load", target)
            return
        for provider in providers:
            if isinstance(provider, AgentProvider):
                self._lazy.pop(provider.id, None)
                self._providers[provider.id] = provider

    @property
    def cold(self) -> bool:
        """Whether :meth:`all` would still import modules or read entry points."""
        return bool(self._lazy) or self._configured is not None or not self._loaded

    def warm_now(self) -> None:
        """:meth:`warm` in this thread (blocking: before an event loop runs)."""
        targets = [*self._lazy.values(), *filter(None, [self._configured])]
        skip = frozenset(self._providers) | frozenset(self._lazy)
        found = _import_modules(targets, not self._loaded, skip)
        if found is not None and self._entry_points is None:
            self._entry_points = found

    async def warm(self) -> None:
        """Import the modules :meth:`all` needs and read the entry points in a worker
        thread, so that the :meth:`all` that follows (on the loop) only instantiates.
        The registry itself is changed on the loop only.  A module that fails to import
        is left for :meth:`all` to load and log; never raises."""
        from agent_bridge.workers import run_sync

        targets = [*self._lazy.values(), *filter(None, [self._configured])]
        skip = frozenset(self._providers) | frozenset(self._lazy)
        found = await run_sync(_import_modules, targets, not self._loaded, skip)
        if found is not None and self._entry_points is None:
            self._entry_points = found

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
        found = self._entry_points
        if found is None:
            from importlib.metadata import entry_points

            found = tuple(entry_points(group=ENTRY_POINT_GROUP))
        for ep in found:
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
        """Return the provider; raise ``BridgeError("provider_not_found")``, whose
        ``nextStep`` names the ids this registry has."""
        self._load_configured()
        provider = self._providers.get(provider_id)
        if provider is None:
            self._resolve_lazy(provider_id)
            provider = self._providers.get(provider_id)
        if provider is None:
            self._ensure_loaded()
            provider = self._providers.get(provider_id)
        if provider is None:
            raise BridgeError(
                "provider_not_found",
                details={"provider": provider_id[:100], "nextStep": self._choose_from()},
            )
        return provider

    def _choose_from(self) -> str:
        """The next step for an unknown id: the ids there are (as many as fit in a
        detail), else where to find them."""
        step = "use one of: " + ", ".join(sorted({*self._providers, *self._lazy}))
        return step if len(step) <= 300 else "providers/list names the providers"

    def all(self) -> list[AgentProvider]:
        """Return every provider, built-in first."""
        self._load_configured()
        for provider_id in list(self._lazy):
            self._resolve_lazy(provider_id)
        self._ensure_loaded()
        return list(self._providers.values())
