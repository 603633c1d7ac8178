"""JSON-RPC error codes and the one exception type the message layer raises.

This module exists so that every JSON-RPC error code has one name, defined once: the
rpc layer, the bridge's error tree (:mod:`agent_bridge.errors`), the schema generator and the
adapters use these constants, never bare numbers.

Handlers raise :class:`RpcError` (or a subclass) to answer a request with an error.
Anything else that escapes a handler is a bug: the connection answers it with
:data:`INTERNAL_ERROR` and a correlation id, and logs the details on its own side only.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "REQUEST_CANCELLED",
    "SERVER_ERROR",
    "SERVER_NOT_INITIALIZED",
    "SERVER_OVERLOADED",
    "ConnectionClosed",
    "RequestTimedOut",
    "RpcError",
]

# Every JSON-RPC error code the project sends or tests for is named here, once.

# Defined by JSON-RPC 2.0.
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
#: Defined by the Language Server Protocol: a request cancelled by ``$/cancelRequest``.
REQUEST_CANCELLED: Final = -32800

# The server-defined range (-32000..-32099).
#: A classified server error; the bridge's :class:`~agent_bridge.errors.BridgeError` default.
SERVER_ERROR: Final = -32000
#: Too many requests in flight; retry later.
SERVER_OVERLOADED: Final = -32001
#: A request before ``initialize`` (the LSP's ``ServerNotInitialized``).
SERVER_NOT_INITIALIZED: Final = -32002


class RpcError(Exception):
    """An error to send (or received) as a JSON-RPC error object.

    ``data`` must be JSON-encodable and must never carry tracebacks, paths, environment
    text or upstream prose: it is sent to the peer as it is.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_wire(self) -> dict[str, Any]:
        """Return the JSON-RPC ``error`` object for this error."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code}, {self.message!r})"


class ConnectionClosed(RpcError):
    """The peer went away (EOF, exit or a failed write) before a request was answered."""

    def __init__(self, message: str = "connection closed") -> None:
        super().__init__(INTERNAL_ERROR, message, {"reason": "connection_closed"})


class RequestTimedOut(RpcError):
    """An outgoing request reached its deadline without a response."""

    def __init__(self, method: str) -> None:
        super().__init__(INTERNAL_ERROR, f"request {method} timed out", {"reason": "timeout"})
