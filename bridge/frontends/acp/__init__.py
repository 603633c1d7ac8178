"""The ACP agent front-end: the bridge as an Agent Client Protocol agent.

* :mod:`~agent_bridge.frontends.acp.server` — one ACP client over stdio: lifecycle,
  sessions, prompt turns, cancel, configuration; the client's runtime subscriber;
* :mod:`~agent_bridge.frontends.acp.updates` — bridge events -> ``session/update``;
* :mod:`~agent_bridge.frontends.acp.asking` — interactions -> permission / elicitation
  requests, and the replies -> answers;
* :mod:`~agent_bridge.frontends.acp.options` — config options and modes from a provider's
  options, MCP servers passed through.

``agent-bridge acp`` (:mod:`agent_bridge.commands.acp`) serves it on stdio; see docs/acp-agent.md.
"""

from __future__ import annotations

from agent_bridge.frontends.acp.server import AcpFrontend

__all__ = ["AcpFrontend"]
