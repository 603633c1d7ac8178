"""The runtime: sessions, runs and interactions on top of the provider SPI.

One :class:`Runtime` owns every session of a bridge process; front-ends
(:mod:`agent_bridge.frontends`) translate a protocol onto it and attach their clients as
:class:`Subscriber` s.  The modules, one job each:

* :mod:`~agent_bridge.runtime.runtime` — the session directory and the command entry point;
* :mod:`~agent_bridge.runtime.sessions` — one open session: provider session, lifetime, close;
* :mod:`~agent_bridge.runtime.runs` — one run: its transitions, interactions, terminal event;
* :mod:`~agent_bridge.runtime.interactions` — exactly-once settlement;
* :mod:`~agent_bridge.runtime.stream` — a session's stamped, gapless events and its subscribers;
* :mod:`~agent_bridge.runtime.delivery` — release to subscribers once durable;
* :mod:`~agent_bridge.runtime.reading` — pages of history and replays;
* :mod:`~agent_bridge.runtime.receipts` — idempotent ``commandId`` s;
* :mod:`~agent_bridge.runtime.boundary` — the provider-call boundary;
* :mod:`~agent_bridge.runtime.services` — what sessions and runs of one runtime share.
"""

from __future__ import annotations

from agent_bridge.runtime.interactions import Interaction
from agent_bridge.runtime.runtime import HealthWatcher, Runtime
from agent_bridge.runtime.stream import Released, Subscriber

__all__ = ["HealthWatcher", "Interaction", "Released", "Runtime", "Subscriber"]
