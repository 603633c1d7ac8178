"""What keeps the contract open to additive change and says more than msgspec can.

* ``…At`` string members get ``format: date-time``; ``ErrorInfo.details`` is typed
  (:func:`error_details`);
* an event payload of a type this version does not know is valid
  (``UnknownEventPayload``, :func:`add_unknown_event`);
* every definition that only the bridge sends is open to members of later versions
  (:func:`open_bridge_to_host`): a host validating what it receives must not break on an
  additive change, while what a host sends stays closed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from agent_bridge.schema.common import DEFS, Json, JsonObject
from agent_bridge.schema.walk import walk
from agent_bridge.wire.errors import DETAIL_TYPES

__all__ = [
    "add_unknown_event",
    "date_time",
    "error_details",
    "known_event_types",
    "open_bridge_to_host",
    "type_details",
    "unknown_event",
]

#: Members whose name ends like this and whose value is a string are RFC 3339 times.
_TIME_SUFFIX: Final = "At"


def date_time(node: JsonObject) -> JsonObject:
    """Give ``format: date-time`` to the string (or nullable string) members named ``…At``."""
    props = node.get("properties")
    if not isinstance(props, dict):
        return node
    out = {}
    for name, prop in props.items():
        if name.endswith(_TIME_SUFFIX) and isinstance(prop, dict):
            if prop.get("type") == "string":
                prop = dict(prop, format="date-time")
            elif isinstance(prop.get("anyOf"), list):
                prop = dict(
                    prop,
                    anyOf=[
                        dict(m, format="date-time")
                        if isinstance(m, dict) and m.get("type") == "string"
                        else m
                        for m in prop["anyOf"]
                    ],
                )
        out[name] = prop
    return dict(node, properties=out)


def error_details() -> JsonObject:
    """``ErrorInfo.details`` typed: every allowlisted key with the type of its value."""
    props: JsonObject = {}
    for key, kind in sorted(DETAIL_TYPES.items()):
        if key == "cause":
            props[key] = {"$ref": DEFS + "FailureCause"}
        elif kind == "integers":
            props[key] = {"type": "array", "items": {"type": "integer"}}
        else:
            props[key] = {"type": "string"}
    return {
        "title": "ErrorDetails",
        "description": "What classifies an error (`ErrorInfo.details`): only these allowlisted "
        "keys, never upstream text.  `cause` says why a provider failed; `supported` (of "
        "`unsupported_protocol_version`) lists the protocol versions the bridge speaks; "
        "`option`/`scope` name what an `invalid_option` refers to.  Later versions may add "
        "keys.",
        "type": "object",
        "properties": props,
    }


def type_details(defs: JsonObject) -> None:
    """Point ``ErrorInfo.details`` at ``ErrorDetails`` (in place)."""
    info = defs["ErrorInfo"]
    props = dict(info["properties"])
    props["details"] = {"anyOf": [{"$ref": DEFS + "ErrorDetails"}, {"type": "null"}]}
    defs["ErrorInfo"] = dict(info, properties=props)


def known_event_types(defs: JsonObject) -> list[str]:
    """The ``type`` tags of the members of ``EventPayload``, sorted."""
    known = []
    payload = defs["EventPayload"]
    for member in payload.get("anyOf") or payload.get("oneOf") or []:
        target = defs[str(member["$ref"])[len(DEFS) :]]
        tag = target["properties"]["type"]
        known.append(tag["enum"][0] if "enum" in tag else tag["const"])
    return sorted(known)


def unknown_event(defs: JsonObject) -> JsonObject:
    """``UnknownEventPayload``: any object whose ``type`` is none of the known ones."""
    return {
        "title": "UnknownEventPayload",
        "description": "An event payload of a type this version does not know (a later "
        "version's addition): a host ignores it or shows it generically, and does not fail.",
        "type": "object",
        "properties": {"type": {"type": "string", "not": {"enum": known_event_types(defs)}}},
        "required": ["type"],
    }


def add_unknown_event(defs: JsonObject) -> None:
    """An envelope's payload is a known one or an ``UnknownEventPayload`` (in place)."""
    envelope = defs["EventEnvelope"]
    props = dict(envelope["properties"])
    props["payload"] = {
        "anyOf": [{"$ref": DEFS + "EventPayload"}, {"$ref": DEFS + "UnknownEventPayload"}]
    }
    defs["EventEnvelope"] = dict(envelope, properties=props)


def _refs_of(node: Json) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str) and value.startswith(DEFS):
                yield value[len(DEFS) :]
            else:
                yield from _refs_of(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs_of(value)


def _reachable(defs: JsonObject, root: str) -> set[str]:
    seen: set[str] = set()
    todo = [root]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(_refs_of(defs[name]))
    return seen


def _open(node: JsonObject) -> JsonObject:
    if node.get("additionalProperties") is False:
        return {k: v for k, v in node.items() if k != "additionalProperties"}
    return node


def open_bridge_to_host(defs: JsonObject) -> None:
    """Open every definition only the bridge sends to members of later versions (a host
    validating what it receives must not break on an additive change); what a host
    sends, and what both send, stays closed.  In place."""
    from_host = _reachable(defs, "HostToBridgeMessage")
    for name in sorted(_reachable(defs, "BridgeToHostMessage") - from_host):
        defs[name] = walk(defs[name], _open)
