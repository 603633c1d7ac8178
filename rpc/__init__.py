"""The JSON-RPC engine: sans-I/O framing, message layer and request-ID ledger, wrapped by
a thin anyio connection.  Used by the bridge toward hosts and by adapters toward
JSON-RPC providers (with or without the ``"jsonrpc"`` member)."""

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
