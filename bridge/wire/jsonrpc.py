"""The JSON-RPC 2.0 envelope, as msgspec types: requests, notifications, responses and
error objects, and the ``data`` shapes of the bridge's protocol-level errors.

Why this module exists: the envelope is part of the published contract like every other
wire type, so it is declared here, in :mod:`agent_bridge.wire`, where the schema generator
(:mod:`agent_bridge.schema`) finds it.  The rpc layer (:mod:`agent_bridge.rpc.messages`)
does not decode through these types: it parses and encodes the envelope by hand on its hot path, and
these Structs describe exactly what it accepts and sends.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = [
    "CancelParams",
    "InternalErrorData",
    "InvalidParamsData",
    "JsonRpcError",
    "JsonRpcErrorResponse",
    "JsonRpcId",
    "JsonRpcNotification",
    "JsonRpcRequest",
    "JsonRpcResponse",
]

JsonRpcId = int | str


class JsonRpcRequest(msgspec.Struct, forbid_unknown_fields=True):
    """A JSON-RPC 2.0 request: answered exactly once by a response with the same `id`."""

    jsonrpc: Literal["2.0"]
    id: JsonRpcId
    method: str
    params: dict[str, Any] | list[Any] | msgspec.UnsetType = msgspec.UNSET


class JsonRpcNotification(msgspec.Struct, forbid_unknown_fields=True):
    """A JSON-RPC 2.0 notification: no `id`, never answered."""

    jsonrpc: Literal["2.0"]
    method: str
    params: dict[str, Any] | list[Any] | msgspec.UnsetType = msgspec.UNSET


class JsonRpcResponse(msgspec.Struct, forbid_unknown_fields=True):
    """A successful JSON-RPC 2.0 response; `result` has the requested method's result type."""

    jsonrpc: Literal["2.0"]
    id: JsonRpcId
    result: Any


class JsonRpcError(msgspec.Struct, forbid_unknown_fields=True):
    """A JSON-RPC 2.0 error object, as either peer may send it."""

    code: int
    message: str
    data: Any = msgspec.UNSET


class JsonRpcErrorResponse(msgspec.Struct, forbid_unknown_fields=True):
    """A JSON-RPC 2.0 error response; `id` is null when the request's id could not be read."""

    jsonrpc: Literal["2.0"]
    id: JsonRpcId | None
    error: JsonRpcError


class InvalidParamsData(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    """`data` of a -32602 error: where in `params` the first problem is."""

    path: str


class InternalErrorData(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    """`data` of a -32603 error: the id of the bridge's log entry for this failure."""

    correlation_id: str


class CancelParams(msgspec.Struct, forbid_unknown_fields=True):
    """`$/cancelRequest`: the id of a pending request the sender no longer wants answered."""

    id: JsonRpcId
