"""The JSON-RPC error codes the bridge sends, as they are published.

Which closed-set codes use which JSON-RPC code is not repeated here: it comes from
:func:`agent_bridge.errors.rpc_code`, and every code it produces is checked against this table
at generation time (:func:`bridge_rpc_codes`), so a new mapping cannot go unpublished.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from agent_bridge.errors import rpc_code
from agent_bridge.rpc.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    SERVER_ERROR,
    SERVER_NOT_INITIALIZED,
    SERVER_OVERLOADED,
)
from agent_bridge.wire.errors import ERROR_CODES, ErrorInfo
from agent_bridge.wire.jsonrpc import InternalErrorData, InvalidParamsData

__all__ = ["RPC_ERRORS", "RpcCode", "bridge_rpc_codes"]


@dataclass(frozen=True)
class RpcCode:
    """How one JSON-RPC error code is published: a name, the message it carries, what it
    means, and the type of its ``data`` (``None``: none)."""

    name: str
    message: str
    description: str
    data: Any


RPC_ERRORS: Final[dict[int, RpcCode]] = {
    PARSE_ERROR: RpcCode(
        "ParseError",
        "parse error",
        "The frame's body is not valid JSON (the reply's id is null).",
        None,
    ),
    INVALID_REQUEST: RpcCode(
        "InvalidRequest",
        "invalid request",
        "Not a JSON-RPC 2.0 request, notification or response; or a request whose id is still "
        "pending.",
        None,
    ),
    METHOD_NOT_FOUND: RpcCode(
        "MethodNotFound",
        "Method Not Found: <method>",
        "No such method, or an experimental method the host did not opt in to.",
        None,
    ),
    INVALID_PARAMS: RpcCode(
        "InvalidParams",
        "Invalid params: <what> - at `<path>`",
        "The params do not decode into the method's params type; `data.path` names the member.",
        InvalidParamsData,
    ),
    INTERNAL_ERROR: RpcCode(
        "InternalError",
        "Internal error",
        "A bug in the bridge; `data.correlationId` names the bridge's log entry.",
        InternalErrorData,
    ),
    REQUEST_CANCELLED: RpcCode(
        "RequestCancelled",
        "Request Cancelled",
        "The request was cancelled by `$/cancelRequest` before it completed.",
        None,
    ),
    SERVER_ERROR: RpcCode(
        "BridgeError",
        "<the error code's message>",
        "A classified bridge error; `data` is an ErrorInfo whose `code` is from the closed set.",
        ErrorInfo,
    ),
    SERVER_OVERLOADED: RpcCode(
        "Overloaded",
        "too many requests in flight",
        "Too many requests in flight; retry later (`data` is an ErrorInfo, code `overloaded`).",
        ErrorInfo,
    ),
    SERVER_NOT_INITIALIZED: RpcCode(
        "NotInitialized",
        "the connection is not initialized",
        "A request before `initialize` (`data` is an ErrorInfo, code `not_initialized`).",
        ErrorInfo,
    ),
}


def bridge_rpc_codes() -> dict[int, list[str]]:
    """JSON-RPC code → the closed-set error codes sent with it (sorted).  Raises
    :class:`ValueError` when a closed-set code maps to a JSON-RPC code not in
    :data:`RPC_ERRORS`."""
    by_rpc: dict[int, list[str]] = {}
    for code in ERROR_CODES:
        by_rpc.setdefault(rpc_code(code), []).append(code)
    unknown = set(by_rpc) - set(RPC_ERRORS)
    if unknown:
        raise ValueError(f"bridge errors use unpublished JSON-RPC codes {sorted(unknown)}")
    return {k: sorted(v) for k, v in by_rpc.items()}
