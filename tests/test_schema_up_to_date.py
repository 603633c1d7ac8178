"""The checked-in ``schemas/`` are exactly what the wire types generate, and complete.

Regenerate with ``.venv/bin/python -m agent_bridge schema --out schemas``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from jsonschema import Draft202012Validator
from provider_clis import require_cli

from agent_bridge.schema import (
    CJS_FILE,
    DCTS_FILE,
    DMTS_FILE,
    DTS_FILE,
    METHODS_FILE,
    MJS_FILE,
    SCHEMA_FILE,
    generate,
    write_schemas,
)
from agent_bridge.wire.catalog import CATALOG
from agent_bridge.wire.errors import ERROR_CODES

REPO = Path(__file__).resolve().parent.parent
SCHEMAS = REPO / "schemas"
FILES = (SCHEMA_FILE, METHODS_FILE, DTS_FILE, MJS_FILE, DMTS_FILE, CJS_FILE, DCTS_FILE)
HINT = "run `.venv/bin/python -m agent_bridge schema --out schemas` and commit the result"


def _load(name: str) -> Any:
    return json.loads((SCHEMAS / name).read_text("utf-8"))


def test_checked_in_schemas_are_current(capsys: pytest.CaptureFixture[str]) -> None:
    code = write_schemas(str(SCHEMAS), check=True)
    assert code == 0, capsys.readouterr().err + HINT


def test_generated_bytes_equal_checked_in(tmp_path: Path) -> None:
    assert write_schemas(str(tmp_path)) == 0
    for name in FILES:
        fresh = (tmp_path / name).read_bytes()
        assert fresh == (SCHEMAS / name).read_bytes(), f"schemas/{name} is stale; {HINT}"
        assert fresh.endswith(b"\n") and not fresh.endswith(b"\n\n"), name
        assert b"\r" not in fresh, name
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(FILES)


def test_generation_is_deterministic() -> None:
    assert generate() == generate()


def test_check_names_the_differing_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert write_schemas(str(tmp_path)) == 0
    capsys.readouterr()
    assert write_schemas(str(tmp_path), check=True) == 0
    (tmp_path / METHODS_FILE).write_text("{}\n", "utf-8")
    (tmp_path / DTS_FILE).unlink()
    assert write_schemas(str(tmp_path), check=True) == 1
    err = capsys.readouterr().err
    assert METHODS_FILE in err and DTS_FILE in err and SCHEMA_FILE not in err
    assert (tmp_path / METHODS_FILE).read_text("utf-8") == "{}\n", "check must not write"


def test_cli_schema_subcommand(tmp_path: Path) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agent_bridge", "schema", "--out", str(tmp_path), *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )

    assert cli("--check").returncode == 1
    assert cli().returncode == 0
    assert cli("--check").returncode == 0


def test_json_files_are_sorted_and_schema_is_valid() -> None:
    for name in (SCHEMA_FILE, METHODS_FILE):
        text = (SCHEMAS / name).read_text("utf-8")
        assert (
            text
            == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        )
    schema = _load(SCHEMA_FILE)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].startswith("urn:agent-bridge:")


def _resolve(schema: dict[str, Any], ref: str) -> Any:
    file, _, pointer = ref.partition("#")
    assert file == SCHEMA_FILE, ref
    node: Any = schema
    for part in pointer.strip("/").split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def _all_refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return own + [r for v in node.values() for r in _all_refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _all_refs(v)]
    return []


def test_every_ref_in_the_schema_resolves() -> None:
    schema = _load(SCHEMA_FILE)
    for ref in _all_refs(schema):
        assert ref.startswith("#/$defs/"), ref
        assert ref[len("#/$defs/") :] in schema["$defs"], ref


def _def_name(t: Any) -> str:
    if t is None:
        return "NullResult"
    if isinstance(t, type) and issubclass(t, msgspec.Struct):
        return t.__name__
    return ""  # an alias: checked by resolving only


@pytest.mark.parametrize("method", CATALOG, ids=[m.name for m in CATALOG])
def test_catalog_method_in_method_map(method: Any) -> None:
    schema = _load(SCHEMA_FILE)
    entry = _load(METHODS_FILE)["methods"].get(method.name)
    assert entry is not None, f"{method.name} missing from methods.json"
    assert entry["direction"] == method.direction
    assert entry["kind"] == method.kind
    assert entry["since"] == method.since
    assert entry["stability"] == method.stability
    assert entry["summary"] == method.summary
    roles = ["params", "message"] + (["result", "response"] if method.kind == "request" else [])
    assert sorted(k for k in entry if isinstance(entry[k], dict)) == sorted(roles)
    for role in roles:
        target = _resolve(schema, entry[role]["$ref"])
        assert isinstance(target, dict) and target, (method.name, role)
    for role, t in (("params", method.params), ("result", method.result)):
        if role in entry and _def_name(t):
            assert entry[role]["$ref"].endswith("/" + _def_name(t)), (method.name, role)
    message = _resolve(schema, entry["message"]["$ref"])
    assert message["properties"]["method"] == {"const": method.name}
    assert ("id" in message["properties"]) == (method.kind == "request")


def test_method_map_has_nothing_but_the_catalog_and_cancel() -> None:
    names = set(_load(METHODS_FILE)["methods"])
    assert names - {m.name for m in CATALOG} <= {"$/cancelRequest"}
    assert "$/cancelRequest" in names


def test_error_codes_published() -> None:
    methods = _load(METHODS_FILE)
    codes = {e["code"] for e in methods["jsonRpcErrors"]}
    assert {-32700, -32600, -32601, -32602, -32603, -32800, -32000, -32001, -32002} <= codes
    assert set(methods["errorCodes"]) == set(ERROR_CODES)
    for code, spec in ERROR_CODES.items():
        entry = methods["errorCodes"][code]
        assert (entry["message"], entry["retryable"]) == (spec.message, spec.retryable), code
    assert methods["errorCodes"]["not_initialized"]["jsonRpcCode"] == -32002
    assert methods["errorCodes"]["overloaded"]["jsonRpcCode"] == -32001
    assert methods["errorCodes"]["session_not_found"]["jsonRpcCode"] == -32000
    schema = _load(SCHEMA_FILE)
    assert set(schema["$defs"]["ErrorCode"]["enum"]) == set(ERROR_CODES)


def test_schema_has_the_promised_definitions() -> None:
    defs = _load(SCHEMA_FILE)["$defs"]
    for name in (
        "EventEnvelope",
        "EventPayload",
        "InteractionRequest",
        "Answer",
        "ErrorInfo",
        "ErrorCode",
        "JsonRpcError",
        "JsonRpcErrorCode",
        "BridgeJsonRpcError",
        "HostToBridgeMessage",
        "BridgeToHostMessage",
    ):
        assert name in defs, name
    payload_types = {
        defs[m["$ref"].rsplit("/", 1)[1]]["properties"]["type"]["const"]
        for m in defs["EventPayload"]["oneOf"]
    }
    assert {"text.delta", "run.started", "run.completed", "interaction.settled"} <= payload_types


def test_typescript_declares_every_definition_and_method() -> None:
    dts = (SCHEMAS / DTS_FILE).read_text("utf-8")
    declared = set(re.findall(r"^export (?:interface|type) (\w+)", dts, re.M))
    assert set(_load(SCHEMA_FILE)["$defs"]) <= declared
    methods_block = dts.split("export interface Methods {", 1)[1].split("\n}\n", 1)[0]
    for name in _load(METHODS_FILE)["methods"]:
        assert re.search(
            rf'^  (?:"{re.escape(name)}"|{re.escape(name)}): {{', methods_block, re.M
        ), name
    assert "import " not in dts and "require(" not in dts


def test_typescript_compiles(tmp_path: Path) -> None:
    """The declarations, and those of the runtime module, compile under ``tsc --strict``
    (installed by scripts/install-provider-clis.sh; a failure, not a skip, in CI)."""
    tsc = require_cli("tsc")
    for name in (DTS_FILE, DMTS_FILE):
        shutil.copy(SCHEMAS / name, tmp_path / name)
    result = subprocess.run(
        [tsc, "--noEmit", "--strict", "--module", "nodenext", DTS_FILE, DMTS_FILE],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_runtime_module_lists_the_known_event_types() -> None:
    """``agent-bridge.mjs`` holds exactly the event types of the schema, and the .d.mts
    declares every value it exports."""
    schema = _load(SCHEMA_FILE)
    defs = schema["$defs"]
    known = sorted(
        defs[m["$ref"].rsplit("/", 1)[1]]["properties"]["type"]["const"]
        for m in defs["EventPayload"]["oneOf"]
    )
    mjs = (SCHEMAS / MJS_FILE).read_text("utf-8")
    listed = mjs.split("KNOWN_EVENT_TYPES = Object.freeze([", 1)[1].split("]);", 1)[0]
    assert json.loads("[" + listed.rstrip().rstrip(",") + "]") == known
    exported = set(re.findall(r"^export (?:const|function) (\w+)", mjs, re.M))
    dmts = (SCHEMAS / DMTS_FILE).read_text("utf-8")
    declared = set(re.findall(r"^export declare (?:const|function) (\w+)", dmts, re.M))
    assert (
        exported
        == declared
        == {
            "KNOWN_EVENT_TYPES",
            "PROTOCOL_VERSION",
            "isKnownEvent",
            "isKnownEventType",
        }
    )


def test_the_commonjs_twin_and_the_vscode_extension_use_the_same_list() -> None:
    """``agent-bridge.cjs`` (loaded by Node as CommonJS) exports the same values as
    ``agent-bridge.mjs`` (loaded as an ES module), the same event types, declared the same
    way; the VS Code extension (compiled to CommonJS) imports them and keeps no list of
    its own (issue 32: it had a hand-copied one)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("LOUD SKIP: node is not installed (scripts/install-node.sh)")
    dump = "({KNOWN_EVENT_TYPES: k, PROTOCOL_VERSION: v, isKnownEvent: g}) => " + (
        "console.log(JSON.stringify([k, v, g({type: k[0]}), g({type: 'later.event'})]))"
    )
    cjs = f"({dump})(require({json.dumps(str(SCHEMAS / CJS_FILE))}))"
    mjs = f"import({json.dumps((SCHEMAS / MJS_FILE).as_uri())}).then({dump})"
    loaded = [
        json.loads(
            subprocess.run(
                [node, "-e", code], capture_output=True, text=True, check=True, timeout=30
            ).stdout
        )
        for code in (cjs, mjs)
    ]
    assert loaded[0] == loaded[1]
    known, version, known_ok, later_ok = loaded[0]
    assert known == sorted(known) and len(known) >= 14 and version >= 1
    assert (known_ok, later_ok) == (True, False)
    dcts = (SCHEMAS / DCTS_FILE).read_text("utf-8")
    dmts = (SCHEMAS / DMTS_FILE).read_text("utf-8")
    assert dcts.split("\n", 2)[2] == dmts.split("\n", 2)[2]  # the same declarations
    protocol = (REPO / "editors" / "vscode" / "src" / "protocol.ts").read_text("utf-8")
    assert 'from "./schema/agent-bridge.cjs"' in protocol
    copied = [t for t in known if f'"{t}"' in protocol]
    assert copied == [], f"protocol.ts copies event types: {copied}"
    build = (REPO / "editors" / "vscode" / "build.sh").read_text("utf-8")
    assert "schemas/agent-bridge.cjs" in build


_HOST_TS = """\
import type {
  BridgeToHostMessage, BuiltinProviderOptions, ClaudeCodeSessionOptions, ErrorInfo,
  ErrorInfoOf, EventEnvelope, EventPayload, KnownEventType, ScriptedScript,
  UnknownEventPayload, UnsupportedProtocolVersionError,
} from "./agent-bridge";

const KNOWN: readonly KnownEventType[] = ["text.delta", "run.completed"];
function isKnown(p: EventPayload | UnknownEventPayload): p is EventPayload {
  return (KNOWN as readonly string[]).indexOf(p.type) >= 0;
}
export function show(e: EventEnvelope): string {
  const p = e.payload;
  if (!isKnown(p)) return `skipped ${p.type}`;
  switch (p.type) {
    case "text.delta": return p.text;
    case "run.failed": return p.error.code;
    default: return p.type;
  }
}
// A later version's event and members still type-check as received messages.
export const later: BridgeToHostMessage = {
  jsonrpc: "2.0", method: "event",
  params: { eventId: "e", sessionId: "s", sequence: 1, occurredAt: "2026-01-01T00:00:00Z",
            payload: { type: "later.event", x: 1 }, laterMember: true },
};
export const failed: ErrorInfoOf<"provider_failed"> = {
  code: "provider_failed", message: "m", retryable: true,
  details: { cause: "connection_refused", httpStatusClass: "5xx" },
};
export const versions: UnsupportedProtocolVersionError = {
  code: "unsupported_protocol_version", message: "m", retryable: false,
  details: { supported: [1] },
};
export const info: ErrorInfo = versions;
export const claude: ClaudeCodeSessionOptions = { model: "sonnet", permissionMode: "plan" };
export const script: ScriptedScript = {
  steps: [{ type: "text", text: "hi" }, { type: "approval", onAllow: [{ type: "echo" }] }],
};
export const scripted: BuiltinProviderOptions["scripted"]["session"] = { script };
"""

_HOST_TS_ERRORS = """\
import type { ClaudeCodeSessionOptions, ScriptedScript } from "./agent-bridge";
export const badMode: ClaudeCodeSessionOptions = { permissionMode: "yolo" };
export const badStep: ScriptedScript = { steps: [{ type: "nope" }] };
"""


def test_a_typescript_host_can_use_the_contract(tmp_path: Path) -> None:
    """A strict host narrows known events past the unknown-event fallback, accepts a
    later version's additions, and gets option and script typos as type errors."""
    tsc = require_cli("tsc")
    shutil.copy(SCHEMAS / DTS_FILE, tmp_path / DTS_FILE)
    (tmp_path / "host.ts").write_text(_HOST_TS, "utf-8")
    (tmp_path / "bad.ts").write_text(_HOST_TS_ERRORS, "utf-8")
    ok = subprocess.run(
        [tsc, "--noEmit", "--strict", "host.ts"], cwd=tmp_path, capture_output=True, text=True
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = subprocess.run(
        [tsc, "--noEmit", "--strict", "bad.ts"], cwd=tmp_path, capture_output=True, text=True
    )
    assert bad.returncode != 0
    assert "yolo" in bad.stdout and "nope" in bad.stdout, bad.stdout
