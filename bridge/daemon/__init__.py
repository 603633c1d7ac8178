"""The per-user daemon: one runtime shared by every host of a user and state directory.

* :mod:`~agent_bridge.daemon.paths` — where its socket, lock and log live;
* :mod:`~agent_bridge.daemon.server` — ``agent-bridge daemon``: the runtime served on a
  Unix domain socket, one bridge-protocol front-end per connection (same-uid peers only);
* :mod:`~agent_bridge.daemon.relay` — ``agent-bridge connect``: a stdio ↔ socket byte
  relay that starts the daemon when none runs, so any host that spawns a stdio server
  (and ``ssh HOST agent-bridge connect``) attaches to the shared runtime unchanged.

The commands that run them are in :mod:`agent_bridge.commands.daemon`.  See
``docs/daemon.md``.
"""
