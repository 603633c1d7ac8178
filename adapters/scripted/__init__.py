"""The built-in scripted provider: deterministic runs driven by a script.

It is the embedded default for ``agent-bridge demo`` and the test double for everything
else: it streams text, tool activity and usage, asks approvals and questions and branches
on the answers, fails with a classified error, waits until interrupted, and can break the
provider contract on purpose for the runtime's tests.

* :mod:`~agent_bridge.adapters.scripted.provider` — descriptor, options, create/resume;
* :mod:`~agent_bridge.adapters.scripted.script` — reading the ``script`` option; the
  script language itself, a published contract shared with ``agent-bridge record``, is
  :mod:`agent_bridge.wire.script`;
* :mod:`~agent_bridge.adapters.scripted.mapping` — pure functions from steps to payloads
  and interactions;
* :mod:`~agent_bridge.adapters.scripted.session` — the session and its runs.
"""

from __future__ import annotations

from agent_bridge.adapters.scripted.provider import ScriptedProvider

__all__ = ["ScriptedProvider"]
