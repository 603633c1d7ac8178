"""The Claude Code provider (id ``claude-code``): the ``claude`` CLI as a resident child per
session, driven in bidirectional stream-json mode.

* :mod:`~agent_bridge.adapters.claude.provider` — descriptor, options, create/resume;
* :mod:`~agent_bridge.adapters.claude.launch` — executable discovery, argv, environment;
* :mod:`~agent_bridge.adapters.claude.probe` — ``providers/list`` discovery;
* :mod:`~agent_bridge.adapters.claude.protocol` — the stream-json frames the adapter
  writes and reads;
* :mod:`~agent_bridge.adapters.claude.mapping` — pure functions from the CLI's records
  to the bridge's payloads, interactions and outcomes;
* :mod:`~agent_bridge.adapters.claude.session` — the session (the adapter kit, the
  control-request ledger, permission interactions) and its runs.

See ``docs/providers/claude-code.md`` ("Adapter") for the options, the mapping and the
limits.
"""

from __future__ import annotations

from agent_bridge.adapters.claude.provider import ClaudeCodeProvider

__all__ = ["ClaudeCodeProvider"]
