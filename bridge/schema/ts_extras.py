"""What the TypeScript declarations add beside the wire definitions: the known event
types, helpers for typed errors, the scripted provider's script types (``Scripted…``)
and every built-in provider's options, from its descriptor."""

from __future__ import annotations

import importlib
from typing import Any, Final

import msgspec

from agent_bridge.schema.common import DEFS, SCRIPT_MODULE, JsonObject, pascal
from agent_bridge.schema.growth import known_event_types
from agent_bridge.schema.ts_render import declaration, ts_doc, ts_key, ts_literal, ts_union
from agent_bridge.schema.walk import normalise, walk

__all__ = ["extras"]

_OPTION_TS: Final = {
    "boolean": "boolean",
    "integer": "number",
    "json": "unknown",
    "string": "string",
    "stringList": "string[]",
}


def _script_defs(wire: JsonObject) -> tuple[str, dict[str, JsonObject]]:
    """The scripted provider's script types (``bridge/wire/script.py``) as schema
    definitions named ``Scripted…``, and the name of the script's own; the wire types
    they use keep their wire names.  Raises :class:`ValueError` when a script type uses
    a type that is neither the script's nor a wire definition."""
    script_module = importlib.import_module(SCRIPT_MODULE)
    own = {
        name
        for name, value in vars(script_module).items()
        if isinstance(value, type)
        and issubclass(value, msgspec.Struct)
        and value.__module__ == SCRIPT_MODULE
    }
    (root,), components = msgspec.json.schema_components(
        [script_module.Script], ref_template=DEFS + "{name}"
    )

    def rename(name: str) -> str:
        short = name.rsplit(".", 1)[-1]
        if name.startswith(SCRIPT_MODULE + ".") or (short == name and short in own):
            return "Scripted" + short
        if short not in wire:
            raise ValueError(f"the script uses {name}, which is not a wire definition")
        return short

    def fix(node: JsonObject) -> JsonObject:
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(DEFS):
            node = dict(node, **{"$ref": DEFS + rename(ref[len(DEFS) :])})
        return normalise(node)

    out = {
        rename(name): walk(body, fix)
        for name, body in components.items()
        if rename(name) not in wire
    }
    # The step union, named once rather than spelt out in every branch.
    (step,), _ = msgspec.json.schema_components([script_module.Step], ref_template=DEFS + "{name}")
    step = walk(step, fix)
    out = {
        name: walk(body, lambda n: {"$ref": DEFS + "ScriptedStep"} if n == step else n)
        for name, body in out.items()
    }
    out["ScriptedStep"] = dict(step, description="One step of a scripted run (`type` names it).")
    return rename(str(root["$ref"])[len(DEFS) :]), out


def _provider_options() -> list[tuple[str, str, list[Any]]]:
    """``(provider id, scope, options)`` of every built-in provider, from its descriptor."""
    from agent_bridge.registry import BUILTIN_PROVIDERS

    out: list[tuple[str, str, list[Any]]] = []
    for provider_id, target in BUILTIN_PROVIDERS.items():
        module_name, _, attribute = target.partition(":")
        descriptor = getattr(importlib.import_module(module_name), attribute)().describe()
        for scope in ("session", "run"):
            options = [o for o in descriptor.options if o.scope == scope]
            if options:
                out.append((provider_id, scope, options))
    return out


def _events_and_errors(defs: JsonObject) -> list[str]:
    known = known_event_types(defs)
    return [
        "/** The event types this version knows (as a value: `KNOWN_EVENT_TYPES` in",
        " * agent-bridge.mjs).  Narrow a received payload with its guard `isKnownEvent`",
        " * (`p is EventPayload`), then switch on `p.type`; any other payload is an",
        " * UnknownEventPayload (a later version's event) to skip or show generically. */",
        "export type KnownEventType = " + ts_union([ts_literal(t) for t in known]) + ";",
        "",
        '/** An ErrorInfo of one code: `ErrorInfoOf<"provider_failed">`. */',
        "export type ErrorInfoOf<C extends ErrorCode> = ErrorInfo & { code: C };",
        "/** `unsupported_protocol_version` names the versions the bridge speaks. */",
        "export type UnsupportedProtocolVersionError = "
        'ErrorInfoOf<"unsupported_protocol_version"> & {',
        "  details: ErrorDetails & { supported: SupportedProtocolVersion[] };",
        "};",
        "",
    ]


def _options(script_root: str) -> list[str]:
    out: list[str] = []
    provider_map: dict[str, list[str]] = {}
    for provider_id, scope, options in _provider_options():
        name = pascal(provider_id) + pascal(scope) + "Options"
        provider_map.setdefault(provider_id, []).append(f"{scope}: {name};")
        out.append(f"/** The `{provider_id}` provider's {scope} options (`providers/list`). */")
        out.append(f"export interface {name} {{")
        for option in options:
            out += ts_doc(option.description, "  ")
            if provider_id == "scripted" and option.name == "script":
                kind = f"{script_root} | string"
            elif option.type == "enum":
                kind = ts_union([ts_literal(v) for v in option.values])
            else:
                kind = _OPTION_TS[option.type]
            out.append(f"  {ts_key(option.name)}?: {kind};")
        out += ["}", ""]
    out.append("/** The options of every built-in provider, by provider id and scope. */")
    out.append("export interface BuiltinProviderOptions {")
    for provider_id in sorted(provider_map):
        out.append(f"  {ts_key(provider_id)}: {{ " + " ".join(provider_map[provider_id]) + " };")
    out += ["}", ""]
    return out


def extras(defs: JsonObject) -> str:
    """The declarations that follow the wire definitions and ``Methods``."""
    out = _events_and_errors(defs)
    script_root, script = _script_defs(defs)
    for name in sorted(script):
        out += declaration(name, script[name])
    out += _options(script_root)
    return "\n".join(out)
