"""agent-bridge: drive AI coding agents over one stdio JSON-RPC protocol of sessions, runs
and interactions."""

__version__ = "0.1.0"
