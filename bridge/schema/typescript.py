"""The TypeScript declarations (``agent-bridge.d.ts``): one declaration per definition
of the JSON Schema, a ``Methods`` map type with helpers to name and type methods, and the
extras a host needs beside them (:mod:`~agent_bridge.schema.ts_extras`).  No dependency,
no runtime code (that is :mod:`~agent_bridge.schema.javascript`'s).

The declarations follow the JSON Schema but for one thing (:func:`typescript_view`): the
JSON-RPC envelopes (every member of ``HostToBridgeMessage`` and ``BridgeToHostMessage``)
are closed.  JSON-RPC fixes their members, and an index signature there stops
``"method" in msg`` and ``msg.method === "event"`` from narrowing (``msg.params`` stays
``unknown`` under ``--strict``).  What they carry (params, results, events) stays open
to later versions' members, as in the schema.  An event payload is an ``EventPayload``
(a union discriminated by ``type``) or an ``UnknownEventPayload`` (any other ``type``):
TypeScript cannot say "a string but none of these", so a host narrows with the generated
guard ``isKnownEvent`` (:mod:`~agent_bridge.schema.javascript`) and then switches on
``type``.
"""

from __future__ import annotations

from agent_bridge.schema.common import (
    DEFS,
    GENERATED,
    METHODS_FILE,
    SCHEMA_FILE,
    SCHEMA_ID,
    JsonObject,
)
from agent_bridge.schema.jsonschema import Definitions
from agent_bridge.schema.methodmap import type_name
from agent_bridge.schema.ts_extras import extras
from agent_bridge.schema.ts_render import declaration, ts_doc, ts_key, ts_literal, ts_union
from agent_bridge.wire.common import PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS

__all__ = ["ENVELOPE_UNIONS", "declarations", "typescript_view"]

#: The unions of whole messages, by sender: their members are the JSON-RPC envelopes.
ENVELOPE_UNIONS = ("HostToBridgeMessage", "BridgeToHostMessage")

#: Generic helpers over ``Methods`` (fixed text).
_METHOD_HELPERS = [
    "/** The name of a method sent in `direction` as a `kind`. */",
    "export type MethodName<",
    '  D extends "host->bridge" | "bridge->host",',
    '  K extends "request" | "notification",',
    "> = {",
    '  [M in keyof Methods]: Methods[M] extends { direction: D | "both"; kind: K }',
    "    ? M",
    "    : never;",
    "}[keyof Methods];",
    "",
    "/** Requests a host sends. */",
    'export type HostRequestMethod = MethodName<"host->bridge", "request">;',
    "/** Notifications a host sends. */",
    'export type HostNotificationMethod = MethodName<"host->bridge", "notification">;',
    "/** Requests the bridge sends (answer them with a response). */",
    'export type BridgeRequestMethod = MethodName<"bridge->host", "request">;',
    "/** Notifications the bridge sends. */",
    'export type BridgeNotificationMethod = MethodName<"bridge->host", "notification">;',
    "/** The params type of method `M`. */",
    'export type ParamsOf<M extends keyof Methods> = Methods[M]["params"];',
    "/** The result type of request method `M`. */",
    "export type ResultOf<M extends keyof Methods> = Methods[M] extends { result: infer R } "
    "? R : never;",
    "",
]


def _header() -> list[str]:
    return [
        f"// {GENERATED}",
        f"// JSON Schema: {SCHEMA_FILE} ({SCHEMA_ID}); method map: {METHODS_FILE}.",
        "",
        "/** The protocol version this bridge speaks by default. */",
        f"export type ProtocolVersion = {PROTOCOL_VERSION};",
        "/** Every protocol version a host may ask for at `initialize`. */",
        "export type SupportedProtocolVersion = "
        + ts_union([str(v) for v in SUPPORTED_PROTOCOL_VERSIONS])
        + ";",
        "",
    ]


def _methods(model: Definitions, method_map: JsonObject) -> list[str]:
    out = [
        "/** Every method: direction, kind, params and result types, version and stability. */",
        "export interface Methods {",
    ]
    for m in sorted(model.methods, key=lambda m: m.name):
        entry = method_map[m.name]
        out += ts_doc(m.summary, "  ")
        out.append(f"  {ts_key(m.name)}: {{")
        out.append(f"    direction: {ts_literal(m.direction)};")
        out.append(f"    kind: {ts_literal(m.kind)};")
        out.append(f"    params: {type_name(entry['params'])};")
        if "result" in entry:
            out.append(f"    result: {type_name(entry['result'])};")
        out.append(f"    since: {m.since};")
        out.append(f"    stability: {ts_literal(m.stability)};")
        if "cancellable" in entry:
            out.append(f"    cancellable: {'true' if m.cancellable else 'false'};")
        out.append("  };")
    out += ["}", ""]
    return out


def typescript_view(defs: JsonObject) -> JsonObject:
    """The definitions as the declarations show them (see the module): a copy of
    ``defs`` with the JSON-RPC envelopes closed."""
    view = dict(defs)
    for union in ENVELOPE_UNIONS:
        for member in view[union]["anyOf"]:
            name = str(member["$ref"])[len(DEFS) :]
            node = view[name]
            if node.get("type") == "object" and "additionalProperties" not in node:
                view[name] = dict(node, additionalProperties=False)
    return view


def declarations(model: Definitions, method_map: JsonObject) -> str:
    """The text of ``agent-bridge.d.ts``."""
    out = _header()
    view = typescript_view(model.defs)
    for name in sorted(view):
        out += declaration(name, view[name])
    out += _methods(model, method_map)
    out += _METHOD_HELPERS
    return "\n".join(out) + extras(model.defs)
