"""The JSON-RPC engine: sans-I/O framing, message layer and request-ID ledger, wrapped by
a thin anyio connection.  Used by the bridge toward hosts and by adapters toward
JSON-RPC providers (with or without the ``"jsonrpc"`` member).

The names below are loaded on first use: importing the sans-I/O modules
(:mod:`~agent_bridge.rpc.framing`, :mod:`~agent_bridge.rpc.messages`) does not load anyio,
so ``agent-bridge serve`` can answer ``initialize`` before it has (see
:mod:`agent_bridge.frontends.first_reply`)."""

from __future__ import annotations

# This folder is importable only as agent_bridge.rpc (the installed package); from the checkout's
# root it would load as 'rpc', a second copy of every module.
if __name__ != "agent_bridge.rpc":
    raise ImportError(
        f"{__name__!r} is a folder of the agent-bridge checkout, not a package: import "
        "agent_bridge.rpc instead (bash scripts/setup.sh installs it)"
    )

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_bridge.rpc.connection import Connection, Limits, Method
    from agent_bridge.rpc.errors import ConnectionClosed, RequestTimedOut, RpcError
    from agent_bridge.rpc.ledger import Ledger, LedgerEntry

__all__ = [
    "Connection",
    "ConnectionClosed",
    "Ledger",
    "LedgerEntry",
    "Limits",
    "Method",
    "RequestTimedOut",
    "RpcError",
]

_HOMES = {
    "Connection": "connection",
    "Limits": "connection",
    "Method": "connection",
    "ConnectionClosed": "errors",
    "RequestTimedOut": "errors",
    "RpcError": "errors",
    "Ledger": "ledger",
    "LedgerEntry": "ledger",
}


def __getattr__(name: str) -> Any:
    """Return one of :data:`__all__`, importing its module; raises ``AttributeError``."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
