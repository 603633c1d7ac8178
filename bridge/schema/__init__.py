"""Generate the published wire contract (``schemas/``) from the msgspec wire types.

``agent-bridge schema --out schemas`` writes five files, all derived from
:mod:`agent_bridge.wire` (the Structs, the named ``Literal``/union aliases and ``CATALOG``):

``agent-bridge.schema.json``
    One JSON Schema (draft 2020-12) document.  Its ``$defs`` hold every wire Struct (by
    class name), every named alias of the wire modules (``ErrorCode``, ``EventPayload``,
    ``Answer`` …), the JSON-RPC envelope of :mod:`agent_bridge.wire.jsonrpc`
    (``JsonRpcRequest`` … ``JsonRpcErrorResponse``, ``JsonRpcError``) and the errors the
    bridge sends (``BridgeJsonRpcError``, ``JsonRpcErrorCode``), one message type per
    method (``SessionCreateRequest``, ``SessionCreateResponse``, ``EventNotification`` …)
    and the unions ``HostToBridgeMessage`` / ``BridgeToHostMessage``.

``methods.json``
    The method map from ``CATALOG`` (direction, kind, ``since``, stability, summary and
    ``$ref`` s to the params, result, message and response definitions), the JSON-RPC error
    codes the bridge sends (with the shape of their ``data``) and the bridge's closed set of
    error codes (JSON-RPC code, message, ``retryable``).

``agent-bridge.d.ts``
    TypeScript declarations of the same definitions (interfaces for Structs, string-literal
    unions for ``Literal`` s, discriminated unions for tagged unions, ``?`` for members with
    defaults) and a ``Methods`` map type; no dependency.  The JSON-RPC envelopes are
    closed and an unknown event's ``type`` is branded, so a strict host narrows what it
    receives (:mod:`~agent_bridge.schema.typescript`).

``agent-bridge.mjs`` and ``agent-bridge.d.mts`` (and their CommonJS twins
``agent-bridge.cjs`` and ``agent-bridge.d.cts``)
    The runtime values a JavaScript host needs (``KNOWN_EVENT_TYPES``, the guard
    ``isKnownEvent``), an ES module with no dependency, and its declarations, which
    re-export every type of the ``.d.ts``.

Output is deterministic (sorted keys and declarations, ``\\n`` line ends, final newline), so
``--check`` can compare it byte for byte with what is checked in.  This package is only
imported by the ``schema`` subcommand (and the tests).

One module a job: :mod:`~agent_bridge.schema.sources` collects the methods, aliases and
message Structs from the wire; :mod:`~agent_bridge.schema.jsonschema` builds the
definitions (with :mod:`~agent_bridge.schema.rpc_errors`, the published JSON-RPC codes;
:mod:`~agent_bridge.schema.growth`, what keeps the contract open to additive change; and
:mod:`~agent_bridge.schema.walk`, the tree walks); :mod:`~agent_bridge.schema.methodmap`
the method map; :mod:`~agent_bridge.schema.typescript` the declarations (rendered by
:mod:`~agent_bridge.schema.ts_render`, with :mod:`~agent_bridge.schema.ts_extras`);
:mod:`~agent_bridge.schema.javascript` the runtime module; and
:mod:`~agent_bridge.schema.files` generates, writes and checks the files.
"""

from __future__ import annotations

from agent_bridge.schema.common import (
    CJS_FILE,
    DCTS_FILE,
    DMTS_FILE,
    DTS_FILE,
    METHODS_FILE,
    MJS_FILE,
    SCHEMA_FILE,
    SCHEMA_ID,
)
from agent_bridge.schema.files import generate, write_schemas

__all__ = [
    "CJS_FILE",
    "DCTS_FILE",
    "DMTS_FILE",
    "DTS_FILE",
    "METHODS_FILE",
    "MJS_FILE",
    "SCHEMA_FILE",
    "SCHEMA_ID",
    "generate",
    "write_schemas",
]
