"""Front-ends: each translates one protocol onto the runtime for the clients it serves.

* :mod:`~agent_bridge.frontends.bridge_protocol` — the agent-bridge protocol (JSON-RPC 2.0,
  either framing) for one host connection;
* :mod:`~agent_bridge.frontends.acp` — the Agent Client Protocol, as an agent, for one ACP
  client (``agent-bridge acp``);
* :mod:`~agent_bridge.frontends.exec_host` — one run's events on stdout and its
  interactions answered by policy (``agent-bridge exec``).

A front-end attaches each of its clients to the runtime as a
:class:`~agent_bridge.runtime.Subscriber` and detaches it when the connection ends; the
transport (stdio today) is chosen by whoever starts it (a command of
:mod:`agent_bridge.commands`); a front-end never imports a command.
"""
