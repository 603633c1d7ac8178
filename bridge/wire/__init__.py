"""The wire contract, defined once as msgspec Structs.

Everything a host sends or receives is one of these types; ``schemas/`` is generated from
them (``agent-bridge schema``).  Our own wire is closed to unknown fields, except where a
later protocol version may add members a host must be free to send (client capabilities:
unknown capabilities are treated as unsupported).
"""

from agent_bridge.wire.common import PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS, WireStruct
from agent_bridge.wire.errors import ERROR_CODES, ErrorCode, ErrorInfo
from agent_bridge.wire.events import EventEnvelope, EventPayload
from agent_bridge.wire.interactions import Answer, InteractionRequest

__all__ = [
    "ERROR_CODES",
    "PROTOCOL_VERSION",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "Answer",
    "ErrorCode",
    "ErrorInfo",
    "EventEnvelope",
    "EventPayload",
    "InteractionRequest",
    "WireStruct",
]
