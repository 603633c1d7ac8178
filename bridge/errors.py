"""The bridge's exception tree: one root, translated to the wire at the edge.

:class:`BridgeError` carries a code from the closed set in :mod:`bridge.wire.errors`;
its wire form is a JSON-RPC error (``-32002`` for "not initialized", ``-32001`` for
"overloaded", ``-32000`` otherwise) whose ``data`` is the :class:`ErrorInfo`.  Adapters
raise :class:`ProviderFailure` with a code; upstream text goes to the log (redacted), never
into the message.
"""

from __future__ import annotations

from typing import Final

import msgspec

from agent_bridge.rpc.errors import RpcError
from agent_bridge.wire.errors import ErrorCode, ErrorInfo

__all__ = ["BridgeError", "ProviderFailure"]

_RPC_CODES: Final[dict[str, int]] = {"not_initialized": -32002, "overloaded": -32001}


class BridgeError(RpcError):
    """An error with a code from the closed set; safe to send to a host as it is."""

    def __init__(
        self,
        code: ErrorCode,
        correlation_id: str | None = None,
        details: dict[str, str] | None = None,
    ) -> None:
        self.info = ErrorInfo.of(code, correlation_id, details)
        super().__init__(
            _RPC_CODES.get(code, -32000), self.info.message, msgspec.to_builtins(self.info)
        )

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
        self, code: ErrorCode, detail: str = "", *, details: dict[str, str] | None = None
    ) -> None:
        super().__init__(code, details=details)
        self.detail = detail
