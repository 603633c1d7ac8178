"""The ``pytest11`` entry point of agent-bridge: opt-in, so being installed changes nothing.

pytest loads this module in every test session of an environment where agent-bridge is
installed.  It only declares the ini setting ``agent_bridge = true``; the fixtures
(:mod:`agent_bridge.testing`) are registered when that setting is on, or when a suite
asks for them with ``-p agent_bridge.testing`` (or ``pytest_plugins``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["pytest_addoption", "pytest_configure"]


def pytest_addoption(parser: Any) -> None:
    parser.addini(
        "agent_bridge",
        type="bool",
        default=False,
        help="enable the agent-bridge fixtures (agent_bridge.testing)",
    )


def pytest_configure(config: Any) -> None:
    if not config.getini("agent_bridge"):
        return
    import agent_bridge.testing as plugin

    if not config.pluginmanager.is_registered(plugin):
        config.pluginmanager.register(plugin, "agent_bridge.testing")
