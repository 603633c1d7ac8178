"""The method map (``methods.json``): every method from ``CATALOG`` with its direction,
kind, ``since``, stability, summary and ``$ref`` s into the JSON Schema; the JSON-RPC error
codes the bridge sends (with the shape of their ``data``); and the closed set of error
codes (JSON-RPC code, message, ``retryable``)."""

from __future__ import annotations

from agent_bridge.errors import rpc_code
from agent_bridge.schema.common import DEFS, GENERATED, SCHEMA_FILE, SCHEMA_ID, JsonObject
from agent_bridge.schema.jsonschema import Definitions
from agent_bridge.schema.rpc_errors import RPC_ERRORS
from agent_bridge.wire.common import PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS
from agent_bridge.wire.errors import ERROR_CODES

__all__ = ["method_document", "method_entries", "type_name"]


def _ref(name: str) -> JsonObject:
    return {"$ref": SCHEMA_FILE + DEFS + name}


def type_name(ref: JsonObject) -> str:
    """The definition name a method-map ``$ref`` points at."""
    return str(ref["$ref"]).rsplit("/", 1)[-1]


def method_entries(model: Definitions) -> JsonObject:
    """Method name → its entry (``direction``, ``kind``, ``since``, ``stability``,
    ``summary``, ``cancellable`` for a host's request, and ``params``/``message``/
    ``result``/``response`` references)."""
    method_map: JsonObject = {}
    for m in model.methods:
        entry: JsonObject = {
            "direction": m.direction,
            "kind": m.kind,
            "since": m.since,
            "stability": m.stability,
            "summary": m.summary,
            "params": _ref(model.name_of(m.params)),
        }
        if m.kind == "request" and m.direction == "host->bridge":
            entry["cancellable"] = m.cancellable
        for role, struct in model.messages[m.name]:
            entry[role] = _ref(model.name_of(struct))
        if m.kind == "request":
            entry["result"] = _ref(model.name_of(m.result))
        method_map[m.name] = entry
    return method_map


def _rpc_errors(model: Definitions) -> list[JsonObject]:
    out = []
    for code in sorted(RPC_ERRORS):
        spec = RPC_ERRORS[code]
        rpc_error: JsonObject = {
            "code": code,
            "name": spec.name,
            "message": spec.message,
            "description": spec.description,
            "data": None if spec.data is None else _ref(model.name_of(spec.data)),
        }
        if code in model.bridge_codes:
            rpc_error["errorCodes"] = model.bridge_codes[code]
        out.append(rpc_error)
    return out


def method_document(model: Definitions, method_map: JsonObject) -> JsonObject:
    """The ``methods.json`` document around ``method_map`` (:func:`method_entries`)."""
    error_codes = {
        code: {
            "jsonRpcCode": rpc_code(code),
            "message": spec.message,
            "retryable": spec.retryable,
        }
        for code, spec in ERROR_CODES.items()
    }
    return {
        "description": GENERATED,
        "protocolVersion": PROTOCOL_VERSION,
        "supportedProtocolVersions": list(SUPPORTED_PROTOCOL_VERSIONS),
        "schema": {"file": SCHEMA_FILE, "$id": SCHEMA_ID},
        "methods": method_map,
        "jsonRpcErrors": _rpc_errors(model),
        "errorCodes": error_codes,
    }
