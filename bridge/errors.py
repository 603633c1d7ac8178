"""The bridge's exception tree: one root, translated to the wire at the edge.

:class:`BridgeError` carries a code from the closed set in :mod:`agent_bridge.wire.errors`;
its wire form is a JSON-RPC error whose code comes from :data:`RPC_CODES`
(``SERVER_NOT_INITIALIZED`` for "not initialized", ``SERVER_OVERLOADED`` for
"overloaded", ``SERVER_ERROR`` otherwise) and whose ``data`` is the :class:`ErrorInfo`.
That table is the one mapping from the bridge's codes to JSON-RPC codes; the schema
generator publishes it from :func:`rpc_code`.  Adapters raise :class:`ProviderFailure`
with a code; upstream text goes to the log (redacted), never into the message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import msgspec

from agent_bridge.rpc.errors import (
    SERVER_ERROR,
    SERVER_NOT_INITIALIZED,
    SERVER_OVERLOADED,
    RpcError,
)
from agent_bridge.wire.errors import ErrorCode, ErrorDetailValue, ErrorInfo

__all__ = ["RPC_CODES", "BridgeError", "ProviderFailure", "rpc_code"]

#: The JSON-RPC code of each closed-set code that is not sent as ``SERVER_ERROR``.
RPC_CODES: Final[Mapping[ErrorCode, int]] = {
    "not_initialized": SERVER_NOT_INITIALIZED,
    "overloaded": SERVER_OVERLOADED,
}


def rpc_code(code: ErrorCode) -> int:
    """Return the JSON-RPC error code a :class:`BridgeError` with ``code`` is sent with
    (from :data:`RPC_CODES`, else ``SERVER_ERROR``); never raises."""
    return RPC_CODES.get(code, SERVER_ERROR)


class BridgeError(RpcError):
    """An error with a code from the closed set; safe to send to a host as it is."""

    def __init__(
        self,
        code: ErrorCode,
        correlation_id: str | None = None,
        details: Mapping[str, ErrorDetailValue] | None = None,
    ) -> None:
        self.info = ErrorInfo.of(code, correlation_id, details)
        super().__init__(rpc_code(code), self.info.message, msgspec.to_builtins(self.info))

    @property
    def error_code(self) -> ErrorCode:
        """The closed-set code."""
        return self.info.code


class ProviderFailure(BridgeError):
    """A provider-side failure classified by the adapter.

    ``detail`` is for the bridge's log only (already redacted by the adapter); it never
    reaches a host.  ``details`` may name what is missing (an executable, a variable) and
    is sent to the host, so it must never carry upstream text.
    """

    def __init__(
        self,
        code: ErrorCode,
        detail: str = "",
        *,
        details: Mapping[str, ErrorDetailValue] | None = None,
    ) -> None:
        super().__init__(code, details=details)
        self.detail = detail
