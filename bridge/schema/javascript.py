"""The runtime values a JavaScript or TypeScript host needs beside the declarations:
``agent-bridge.mjs`` (an ES module with no dependency) and its declarations
``agent-bridge.d.mts``, which also re-export every type of ``agent-bridge.d.ts``, so a
host imports types and values from one place::

    import { isKnownEvent, type BridgeToHostMessage } from "./agent-bridge.mjs";

What it holds: ``KNOWN_EVENT_TYPES`` (the event types this version knows, so no host
copies the list by hand), ``isKnownEventType`` and ``isKnownEvent`` (the guard that
narrows a payload to ``EventPayload``; anything else is a later version's event, which a
host skips or shows generically), and ``PROTOCOL_VERSION``.
"""

from __future__ import annotations

from agent_bridge.schema.common import DTS_FILE, GENERATED, MJS_FILE, JsonObject
from agent_bridge.schema.growth import known_event_types
from agent_bridge.schema.ts_render import ts_literal
from agent_bridge.wire.common import PROTOCOL_VERSION

__all__ = ["runtime_declarations", "runtime_module"]


def runtime_module(defs: JsonObject) -> str:
    """The text of ``agent-bridge.mjs``."""
    known = known_event_types(defs)
    return "\n".join(
        [
            f"// {GENERATED}",
            f"// Declarations: agent-bridge.d.mts (the types: {DTS_FILE}).",
            "",
            "/** The protocol version this bridge speaks by default. */",
            f"export const PROTOCOL_VERSION = {PROTOCOL_VERSION};",
            "",
            "/** The event types this version knows. */",
            "export const KNOWN_EVENT_TYPES = Object.freeze([",
            *(f"  {ts_literal(t)}," for t in known),
            "]);",
            "",
            "const KNOWN = new Set(KNOWN_EVENT_TYPES);",
            "",
            "/** Whether `type` is an event type this version knows. */",
            "export function isKnownEventType(type) {",
            "  return KNOWN.has(type);",
            "}",
            "",
            "/** Whether an event payload is of a type this version knows; anything else is",
            " * a later version's event, to skip or show generically. */",
            "export function isKnownEvent(payload) {",
            "  return KNOWN.has(payload.type);",
            "}",
            "",
        ]
    )


def runtime_declarations() -> str:
    """The text of ``agent-bridge.d.mts``."""
    types = "./" + DTS_FILE.removesuffix(".d.ts") + ".js"
    return "\n".join(
        [
            f"// {GENERATED}",
            f"// The declarations of {MJS_FILE}, and every type of {DTS_FILE}.",
            "",
            f'export * from "{types}";',
            "import type {",
            "  EventPayload,",
            "  KnownEventType,",
            "  ProtocolVersion,",
            "  UnknownEventPayload,",
            f'}} from "{types}";',
            "",
            "/** The protocol version this bridge speaks by default. */",
            "export declare const PROTOCOL_VERSION: ProtocolVersion;",
            "/** The event types this version knows. */",
            "export declare const KNOWN_EVENT_TYPES: readonly KnownEventType[];",
            "/** Whether `type` is an event type this version knows. */",
            "export declare function isKnownEventType(type: string): type is KnownEventType;",
            "/** Whether an event payload is of a type this version knows (narrowing it to",
            " * EventPayload); anything else is a later version's event, to skip or show",
            " * generically. */",
            "export declare function isKnownEvent(",
            "  payload: EventPayload | UnknownEventPayload,",
            "): payload is EventPayload;",
            "",
        ]
    )
