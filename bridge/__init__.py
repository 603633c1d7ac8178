"""agent-bridge: drive AI coding agents over one stdio JSON-RPC protocol of sessions, runs
and interactions."""

# This folder is importable only as agent_bridge (the installed package); from the checkout's
# root it would load as 'bridge', a second copy of every module.
if __name__ != "agent_bridge":
    raise ImportError(
        f"{__name__!r} is a folder of the agent-bridge checkout, not a package: import "
        "agent_bridge instead (bash scripts/setup.sh installs it)"
    )

__version__ = "0.1.0"
