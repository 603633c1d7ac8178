"""The JSON Schema document (``agent-bridge.schema.json``) and the definitions the
other published files are made from.

:func:`build` turns the wire types into one set of ``$defs``, in steps:

1. msgspec's schema components of every root (each method's params and result, the
   envelope, the errors, every wire alias, every message Struct), with a name for each
   root type (:meth:`Definitions.name_of`);
2. the errors the bridge sends (``BridgeJsonRpcError``, ``JsonRpcErrorCode``) and the
   message unions by sender (``HostToBridgeMessage``, ``BridgeToHostMessage``);
3. what keeps the contract open to growth (:mod:`~agent_bridge.schema.growth`);
4. the published form (:mod:`~agent_bridge.schema.walk`): normalised, inline alias
   copies replaced by references, times formatted, the bridge's messages opened.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from agent_bridge.schema import growth
from agent_bridge.schema.common import DEFS, DRAFT, GENERATED, SCHEMA_ID, JsonObject
from agent_bridge.schema.rpc_errors import RPC_ERRORS, RpcCode, bridge_rpc_codes
from agent_bridge.schema.sources import (
    Messages,
    message_structs,
    published_methods,
    wire_aliases,
)
from agent_bridge.schema.walk import normalise, substitute, walk
from agent_bridge.wire.catalog import MethodInfo
from agent_bridge.wire.common import PROTOCOL_VERSION
from agent_bridge.wire.errors import ErrorInfo
from agent_bridge.wire.events import EventEnvelope
from agent_bridge.wire.jsonrpc import (
    JsonRpcError,
    JsonRpcErrorResponse,
    JsonRpcNotification,
    JsonRpcRequest,
    JsonRpcResponse,
)

__all__ = ["Definitions", "build", "schema_document"]


@dataclass
class Definitions:
    """The contract's ``$defs`` and what they were made from."""

    defs: JsonObject
    methods: list[MethodInfo]
    messages: Messages
    aliases: dict[str, Any]
    #: JSON-RPC code → the closed-set error codes sent with it.
    bridge_codes: dict[int, list[str]]
    #: ``id(root type)`` → its definition's name.
    names: dict[int, str]

    def name_of(self, t: Any) -> str:
        """The definition name of the root type ``t`` (``None`` is ``NullResult``).
        Raises :class:`ValueError` for a type that has none."""
        if t is None:
            return "NullResult"
        found = self.names.get(id(t))
        if found is None:
            for alias, value in self.aliases.items():
                if value == t:
                    return alias
            raise ValueError(f"no definition name for {t!r}")
        return found


def build() -> Definitions:
    """Every definition of the contract, in its published form (see the module)."""
    methods = published_methods()
    model = Definitions(
        defs={},
        methods=methods,
        messages=message_structs(methods),
        aliases=wire_aliases(),
        bridge_codes=bridge_rpc_codes(),
        names={},
    )
    _components(model)
    _describe_unions(model)
    _bridge_errors(model)
    _message_unions(model)
    defs = model.defs
    defs["ErrorDetails"] = growth.error_details()
    growth.type_details(defs)
    defs["UnknownEventPayload"] = growth.unknown_event(defs)
    growth.add_unknown_event(defs)

    defs = {k: walk(v, normalise) for k, v in defs.items()}
    substitute(defs, sorted(model.aliases))
    defs = {k: walk(v, growth.date_time) for k, v in defs.items()}
    growth.open_bridge_to_host(defs)
    model.defs = defs
    return model


def schema_document(model: Definitions) -> JsonObject:
    """The ``agent-bridge.schema.json`` document."""
    return {
        "$schema": DRAFT,
        "$id": SCHEMA_ID,
        "title": f"agent-bridge wire protocol, version {PROTOCOL_VERSION}",
        "description": GENERATED,
        "$defs": model.defs,
    }


def _roots(model: Definitions) -> list[Any]:
    roots: list[Any] = []
    for m in model.methods:
        roots.append(m.params)
        if m.kind == "request":
            roots.append(m.result)
    roots += [EventEnvelope, ErrorInfo, JsonRpcRequest, JsonRpcNotification, JsonRpcResponse]
    roots += [JsonRpcErrorResponse, JsonRpcError]
    roots += [spec.data for spec in RPC_ERRORS.values() if spec.data is not None]
    aliases, messages = model.aliases, model.messages
    roots += [aliases[name] for name in sorted(aliases)]
    roots += [struct for name in sorted(messages) for _role, struct in messages[name]]
    return roots


def _components(model: Definitions) -> None:
    """msgspec's definitions of every root; a name for each root type; every wire alias
    as a definition of its own; ``NullResult``.  Raises :class:`ValueError` when an
    alias collides with a Struct's name or a method's params or result has no name."""
    roots = _roots(model)
    schemas, components = msgspec.json.schema_components(roots, ref_template=DEFS + "{name}")
    defs: JsonObject = dict(components)
    names, aliases = model.names, model.aliases
    for t, root_schema in zip(roots, schemas, strict=True):
        target = root_schema.get("$ref")
        if isinstance(target, str) and target.startswith(DEFS) and len(root_schema) == 1:
            names[id(t)] = target[len(DEFS) :]
    for alias in sorted(aliases):
        value = aliases[alias]
        if alias in defs and names.get(id(value)) != alias:
            raise ValueError(f"alias {alias} collides with a definition of the same name")
        defs[alias] = {"title": alias, **schemas[roots.index(value)]}
        names[id(value)] = alias
    for m in model.methods:
        for t in (m.params, m.result if m.kind == "request" else None):
            if t is not None and id(t) not in names and all(v != t for v in aliases.values()):
                raise ValueError(f"{m.name}: give {t!r} a name (a Struct or a wire alias)")
    defs["NullResult"] = {
        "title": "NullResult",
        "description": "The result of a request that returns nothing: `null`.",
        "type": "null",
    }
    model.defs = defs


def _describe_unions(model: Definitions) -> None:
    """Descriptions of the alias unions that have none: ``One of A, B.``"""
    defs = model.defs
    for alias in sorted(model.aliases):
        members = defs[alias].get("anyOf")
        if "description" not in defs[alias] and isinstance(members, list):
            refs = [m.get("$ref", "")[len(DEFS) :] for m in members if isinstance(m, dict)]
            if all(refs):
                defs[alias]["description"] = "One of " + ", ".join(refs) + "."


def _error_branch(
    code: int, spec: RpcCode, bridge_codes: list[str], data_ref: str | None
) -> JsonObject:
    props: JsonObject = {"code": {"const": code}, "message": {"type": "string"}}
    required = ["code", "message"]
    if data_ref is not None:
        data: JsonObject = {"$ref": DEFS + data_ref}
        if bridge_codes:
            data = {
                "allOf": [
                    data,
                    {"properties": {"code": {"enum": bridge_codes}}, "required": ["code"]},
                ]
            }
            required.append("data")
        props["data"] = data
    return {
        "title": spec.name,
        "description": spec.description,
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": False,
    }


def _bridge_errors(model: Definitions) -> None:
    """The errors the bridge sends: one branch per JSON-RPC code, and the codes."""
    branches = []
    for code in sorted(RPC_ERRORS):
        spec = RPC_ERRORS[code]
        data_ref = None if spec.data is None else model.name_of(spec.data)
        branches.append(_error_branch(code, spec, model.bridge_codes.get(code, []), data_ref))
    model.defs["BridgeJsonRpcError"] = {
        "title": "BridgeJsonRpcError",
        "description": "An error object the bridge sends: a code from JsonRpcErrorCode with "
        "the `data` that code carries.",
        "oneOf": branches,
    }
    model.defs["JsonRpcErrorCode"] = {
        "title": "JsonRpcErrorCode",
        "description": "The JSON-RPC error codes the bridge sends.",
        "oneOf": [
            {"const": c, "title": RPC_ERRORS[c].name, "description": RPC_ERRORS[c].description}
            for c in sorted(RPC_ERRORS)
        ],
    }


def _sends(m: MethodInfo, side: str) -> bool:
    return m.direction in ("both", side)


def _message_refs(model: Definitions, pred: Callable[[MethodInfo, str], bool]) -> list[JsonObject]:
    out = []
    for m in model.methods:
        for role, struct in model.messages[m.name]:
            if pred(m, role):
                out.append({"$ref": DEFS + model.name_of(struct)})
    return out


def _message_unions(model: Definitions) -> None:
    """``HostToBridgeMessage`` and ``BridgeToHostMessage``: each side's requests and
    notifications, its responses to the other side's requests, and its error responses."""
    model.defs["BridgeJsonRpcErrorResponse"] = {
        "title": "BridgeJsonRpcErrorResponse",
        "description": "An error response the bridge sends: a JSON-RPC error response whose "
        "`error` is a BridgeJsonRpcError.",
        "type": "object",
        "properties": {
            "jsonrpc": {"const": "2.0"},
            "id": {"anyOf": [{"$ref": DEFS + "JsonRpcId"}, {"type": "null"}]},
            "error": {"$ref": DEFS + "BridgeJsonRpcError"},
        },
        "required": ["jsonrpc", "id", "error"],
        "additionalProperties": False,
    }
    error_responses = {
        "HostToBridgeMessage": "JsonRpcErrorResponse",
        "BridgeToHostMessage": "BridgeJsonRpcErrorResponse",
    }
    for side, other, title, what in (
        ("host->bridge", "bridge->host", "HostToBridgeMessage", "a host"),
        ("bridge->host", "host->bridge", "BridgeToHostMessage", "the bridge"),
    ):

        def sent(m: MethodInfo, role: str, side: str = side, other: str = other) -> bool:
            return _sends(m, side) if role == "message" else _sends(m, other)

        model.defs[title] = {
            "title": title,
            "description": f"Any message {what} sends: a request or notification of a "
            f"{side} method, a response to a {other} request, or an error response.",
            "anyOf": [
                *_message_refs(model, sent),
                {"$ref": DEFS + error_responses[title]},
            ],
        }
