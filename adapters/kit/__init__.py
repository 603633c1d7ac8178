"""The adapter kit: what every provider adapter needs beside the SPI (:mod:`agent_bridge.spi`).

Each adapter used to hand-roll the same machinery; it lives here once, one job a module:

* :mod:`~agent_bridge.adapters.kit.tasks` — supervised background tasks: started in the
  session's task group, cancellable together, an exception logged (redacted) and turned
  into a classified failure instead of escaping into the runtime;
* :mod:`~agent_bridge.adapters.kit.runs` — a run handle whose outcome is set exactly once;
* :mod:`~agent_bridge.adapters.kit.resident` — a resident child process per session, its
  exit watcher and a bounded, shielded stop;
* :mod:`~agent_bridge.adapters.kit.rpc_child` — a resident child that speaks JSON-RPC
  (Codex's app-server, ACP agents): spawn, connection, bounded calls, failures
  classified, and the short-lived probe variant;
* :mod:`~agent_bridge.adapters.kit.ndjson` — a bounded NDJSON line reader over a child's
  stdout (the project's :class:`~agent_bridge.rpc.framing.NewlineFramer`);
* :mod:`~agent_bridge.adapters.kit.probe` — a bounded probe runner for ``providers/list``;
* :mod:`~agent_bridge.adapters.kit.approvals` — the bridge's approval answer as a verdict
  an adapter maps onto its provider's decision;
* :mod:`~agent_bridge.adapters.kit.tools` — a run's tool calls as the mappings track them
  (started once, ended once, the open ones failed when the run ends);
* :mod:`~agent_bridge.adapters.kit.native_files` — a provider's own session files listed
  and read (``provider/sessions/*``) in a worker thread.

The package face imports nothing: adapters import the modules they use.
"""
