"""The runtime values a JavaScript or TypeScript host needs beside the declarations:
``agent-bridge.mjs`` (an ES module with no dependency) and its declarations
``agent-bridge.d.mts``, which also re-export every type of ``agent-bridge.d.ts``, so a
host imports types and values from one place::

    import { isKnownEvent, type BridgeToHostMessage } from "./agent-bridge.mjs";

What it holds: ``KNOWN_EVENT_TYPES`` (the event types this version knows, so no host
copies the list by hand), ``isKnownEventType`` and ``isKnownEvent`` (the guard that
narrows a payload to ``EventPayload``; anything else is a later version's event, which a
host skips or shows generically), and ``PROTOCOL_VERSION``.

``agent-bridge.cjs`` and ``agent-bridge.d.cts`` are their CommonJS twins, the same
values from the same list, for a host compiled to CommonJS (the VS Code extension
imports them, so it keeps no copy of the list)::

    import { KNOWN_EVENT_TYPES, isKnownEvent } from "./agent-bridge.cjs";
"""

from __future__ import annotations

from agent_bridge.schema.common import (
    CJS_FILE,
    DCTS_FILE,
    DMTS_FILE,
    DTS_FILE,
    GENERATED,
    MJS_FILE,
    JsonObject,
)
from agent_bridge.schema.growth import known_event_types
from agent_bridge.schema.ts_render import ts_literal
from agent_bridge.wire.common import PROTOCOL_VERSION

__all__ = [
    "commonjs_declarations",
    "commonjs_module",
    "runtime_declarations",
    "runtime_module",
]

_NAMES = ("PROTOCOL_VERSION", "KNOWN_EVENT_TYPES", "isKnownEventType", "isKnownEvent")


def _values(defs: JsonObject, export: str) -> list[str]:
    """The values' definitions, each preceded by ``export`` (``"export "`` or nothing)."""
    known = known_event_types(defs)
    return [
        "/** The protocol version this bridge speaks by default. */",
        f"{export}const PROTOCOL_VERSION = {PROTOCOL_VERSION};",
        "",
        "/** The event types this version knows. */",
        f"{export}const KNOWN_EVENT_TYPES = Object.freeze([",
        *(f"  {ts_literal(t)}," for t in known),
        "]);",
        "",
        "const KNOWN = new Set(KNOWN_EVENT_TYPES);",
        "",
        "/** Whether `type` is an event type this version knows. */",
        f"{export}function isKnownEventType(type) {{",
        "  return KNOWN.has(type);",
        "}",
        "",
        "/** Whether an event payload is of a type this version knows; anything else is",
        " * a later version's event, to skip or show generically. */",
        f"{export}function isKnownEvent(payload) {{",
        "  return KNOWN.has(payload.type);",
        "}",
        "",
    ]


def runtime_module(defs: JsonObject) -> str:
    """The text of ``agent-bridge.mjs``."""
    return "\n".join(
        [
            f"// {GENERATED}",
            f"// Declarations: {DMTS_FILE} (the types: {DTS_FILE}).",
            "",
            *_values(defs, "export "),
        ]
    )


def commonjs_module(defs: JsonObject) -> str:
    """The text of ``agent-bridge.cjs``: :func:`runtime_module`'s values as CommonJS."""
    return "\n".join(
        [
            f"// {GENERATED}",
            f"// The CommonJS twin of {MJS_FILE}.",
            f"// Declarations: {DCTS_FILE} (the types: {DTS_FILE}).",
            '"use strict";',
            "",
            *_values(defs, ""),
            f"module.exports = {{ {', '.join(_NAMES)} }};",
            "",
        ]
    )


def runtime_declarations(of: str = MJS_FILE) -> str:
    """The text of ``agent-bridge.d.mts`` (``of`` :data:`MJS_FILE`) or of
    ``agent-bridge.d.cts`` (``of`` :data:`CJS_FILE`): the same declarations."""
    types = "./" + DTS_FILE.removesuffix(".d.ts") + ".js"
    return "\n".join(
        [
            f"// {GENERATED}",
            f"// The declarations of {of}, and every type of {DTS_FILE}.",
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


def commonjs_declarations() -> str:
    """The text of ``agent-bridge.d.cts``."""
    return runtime_declarations(CJS_FILE)
