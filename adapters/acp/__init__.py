"""Agent Client Protocol agents as providers: the built-ins ``gemini`` (``gemini --acp``),
``opencode`` (``opencode acp``) and ``qwen`` (``qwen --acp``),
the generic ``acp`` (any agent named by the ``command`` option) and every agent of the
``[acp.agents.<id>]`` tables of the bridge's configuration file.

* :mod:`~agent_bridge.adapters.acp.provider` — descriptors (from the agent's own
  ``initialize`` and ``session/new``), options, create/resume;
* :mod:`~agent_bridge.adapters.acp.launch` — agent entries, executable, environment;
* :mod:`~agent_bridge.adapters.acp.profiles` — what is known about each agent, by its
  ``initialize`` answer (corrections, workarounds, quiet environment, maturity);
* :mod:`~agent_bridge.adapters.acp.probe` — the bounded, silent ``initialize`` probe;
* :mod:`~agent_bridge.adapters.acp.protocol` — ACP's wire shapes;
* :mod:`~agent_bridge.adapters.acp.mapping` — pure functions from ACP records to the
  bridge's payloads, interactions, replies and outcomes;
* :mod:`~agent_bridge.adapters.acp.callbacks` — ``fs/*`` and ``terminal/*`` served by the
  bridge (only when enabled);
* :mod:`~agent_bridge.adapters.acp.session` — the session and its runs on the kit.

See ``docs/providers/acp.md``.
"""

from __future__ import annotations

from agent_bridge.adapters.acp.provider import (
    AcpProvider,
    configured_providers,
    fast_agent_provider,
    gemini_provider,
    generic_provider,
    mistral_vibe_provider,
    opencode_provider,
    qwen_provider,
)

__all__ = [
    "AcpProvider",
    "configured_providers",
    "fast_agent_provider",
    "gemini_provider",
    "generic_provider",
    "mistral_vibe_provider",
    "opencode_provider",
    "qwen_provider",
]
