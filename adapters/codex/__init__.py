"""The OpenAI Codex provider (id ``codex``): one resident ``codex app-server`` child per
session.

* :mod:`~agent_bridge.adapters.codex.provider` — descriptor, options, create/resume;
* :mod:`~agent_bridge.adapters.codex.launch` — executable discovery, environment, argv;
* :mod:`~agent_bridge.adapters.codex.probe` — ``providers/list`` discovery;
* :mod:`~agent_bridge.adapters.codex.protocol` — the app-server's wire structs;
* :mod:`~agent_bridge.adapters.codex.mapping` — pure functions from its notifications and
  requests to the bridge's payloads, interactions, replies and outcomes;
* :mod:`~agent_bridge.adapters.codex.session` — the session (the adapter kit, the
  JSON-RPC connection, one dispatch table) and its runs.

See ``docs/providers/codex.md`` (the "Adapter" section) for the design.
"""

from __future__ import annotations

from agent_bridge.adapters.codex.provider import CodexProvider

__all__ = ["CodexProvider"]
