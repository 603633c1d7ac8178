"""The OpenAI Codex adapter: one resident ``codex app-server`` child per session.

See ``docs/providers/codex.md`` (the "Adapter" section) for the design: discovery and
environment (:mod:`adapters.codex.discovery`), the wire structs
(:mod:`adapters.codex.protocol`), sessions and runs (:mod:`adapters.codex.session`) and
the descriptor (:mod:`adapters.codex.provider`).
"""

from __future__ import annotations

from agent_bridge.adapters.codex.provider import CodexProvider

__all__ = ["CodexProvider"]
