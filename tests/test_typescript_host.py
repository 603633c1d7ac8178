"""An idiomatic TypeScript host, compiled with ``tsc --strict`` against the published
``schemas/`` and run with node on the messages of a real bridge.

The host does what a host does with what it receives, with no cast and no hand-copied
list: it tells requests and notifications from responses with ``"method" in msg``,
switches on ``msg.method`` (so ``msg.params`` is typed), sets a later version's event
aside with the generated guard ``isKnownEvent`` (``agent-bridge.mjs``), and switches on
the payload's ``type`` (so each case sees its own members).  Against the declarations as
they were (every envelope the bridge sends with an index signature) it does not compile.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any, get_args

import pytest
from bridge_client import script_session
from conftest import running_bridge
from provider_clis import require_cli
from wire_validation import load_contract

from agent_bridge.schema import DMTS_FILE, DTS_FILE, MJS_FILE, generate, typescript
from agent_bridge.wire.events import EventPayload

REPO = Path(__file__).resolve().parent.parent
SCHEMAS = REPO / "schemas"

HOST_TS = """\
import { KNOWN_EVENT_TYPES, isKnownEvent } from "./agent-bridge.mjs";
import type { BridgeToHostMessage, EventPayload, UnknownEventPayload } from "./agent-bridge.mjs";

/** One line per event payload: each case reads its own members. */
function describeEvent(payload: EventPayload | UnknownEventPayload): string {
  if (!isKnownEvent(payload)) {
    return `unknown ${payload.type}`; // a later version's event
  }
  switch (payload.type) {
    case "text.delta":
      return `text ${payload.text}`;
    case "tool.activity":
      return `tool ${payload.name} ${payload.status}`;
    case "interaction.requested":
      return `asked ${payload.request.kind}`;
    case "interaction.settled":
      return `settled ${payload.status}`;
    case "run.completed":
      return `completed ${payload.stopReason}`;
    case "run.failed":
      return `failed ${payload.error.code}`;
    case "run.started":
    case "run.interrupted":
    case "session.closed":
      return payload.type;
    default:
      return `unshown ${payload.type}`;
  }
}

/** One line per message from the bridge. */
export function describe(msg: BridgeToHostMessage): string {
  if ("method" in msg) {
    switch (msg.method) {
      case "event":
        return `${msg.params.sequence} ${describeEvent(msg.params.payload)}`;
      case "interaction/request":
        return `request ${msg.id} ${msg.params.request.kind}`;
      case "journal/status":
        return `journal ${msg.params.state}`;
      case "$/cancelRequest":
        return `cancel ${msg.params.id}`;
    }
  }
  if ("error" in msg) {
    return `error ${msg.error.code} ${msg.error.message}`;
  }
  return `response ${msg.id}`;
}

export const known: number = KNOWN_EVENT_TYPES.length;
"""

MAIN_MJS = """\
import { readFileSync } from "node:fs";
import { describe, known } from "./host.mjs";

const messages = JSON.parse(readFileSync(process.argv[2], "utf-8"));
console.log(JSON.stringify({ known, lines: messages.map(describe) }));
"""


def _compile(tmp: Path) -> subprocess.CompletedProcess[str]:
    tsc = require_cli("tsc")
    return subprocess.run(
        [tsc, "--strict", "--module", "nodenext", "--target", "es2022", "host.mts"],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _host_dir(tmp: Path, dts: str) -> Path:
    host = tmp / "host"
    host.mkdir()
    (host / DTS_FILE).write_text(dts, "utf-8")
    for name in (MJS_FILE, DMTS_FILE):
        shutil.copy(SCHEMAS / name, host / name)
    (host / "host.mts").write_text(HOST_TS, "utf-8")
    (host / "main.mjs").write_text(MAIN_MJS, "utf-8")
    return host


async def _bridge_messages() -> list[dict[str, Any]]:
    """What a real bridge sends in one scripted run: responses, events, an approval
    request, an error response."""
    steps: list[dict[str, Any]] = [
        {"type": "text", "text": "Hi"},
        {"type": "tool", "id": "call_1", "name": "Bash", "input": {"command": "ls"}},
        {
            "type": "approval",
            "title": "Run it",
            "toolName": "Bash",
            "onAllow": [{"type": "text", "text": "ran"}],
        },
    ]
    async with running_bridge("newline") as bridge:
        session = (await bridge.result("session/create", script_session(steps)))["session"]
        sid = session["sessionId"]
        await bridge.result("run/start", {"sessionId": sid, "input": {"text": "go"}})
        request = await bridge.wait_for(lambda m: m.get("method") == "interaction/request")
        await bridge.send(
            {
                "jsonrpc": "2.0",
                "id": request["id"],
                "result": {"kind": "approval", "decision": "allow"},
            }
        )
        await bridge.terminal()
        reply = await bridge.call("session/close", {"sessionId": "no-such-session"})
        assert "error" in reply
        await bridge.result("session/close", {"sessionId": sid})
        await bridge.event("session.closed")
        return list(bridge.received)


def _later_event(after: dict[str, Any]) -> dict[str, Any]:
    """An event of a type a later version adds, valid under the published schema."""
    params = dict(after["params"], sequence=after["params"]["sequence"] + 1)
    params["eventId"] = params["eventId"] + "-later"
    params["payload"] = {"type": "later.event", "detail": 1}
    later = dict(after, params=params)
    assert load_contract().errors("#/$defs/BridgeToHostMessage", later) == []
    return later


async def test_an_idiomatic_host_narrows_what_it_receives(tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    host = _host_dir(tmp_path, (SCHEMAS / DTS_FILE).read_text("utf-8"))
    compiled = _compile(host)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    messages = await _bridge_messages()
    events = [m for m in messages if m.get("method") == "event"]
    messages.append(_later_event(events[-1]))
    (host / "messages.json").write_text(json.dumps(messages), "utf-8")
    ran = subprocess.run(
        [node, "main.mjs", "messages.json"], cwd=host, capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    out = json.loads(ran.stdout)
    lines: list[str] = out["lines"]
    assert out["known"] == len(get_args(EventPayload))  # every payload type
    assert len(lines) == len(messages)
    described = [line.split(" ", 1)[1] for line in lines if line[:1].isdigit()]
    assert described[0] == "run.started"
    for expected in (
        "text Hi",
        "tool Bash started",
        "tool Bash completed",
        "asked approval",
        "settled responded",
        "text ran",
        "completed end_turn",
        "session.closed",
        "unknown later.event",
    ):
        assert expected in described, (expected, lines)
    assert any(line.startswith("request ") and line.endswith(" approval") for line in lines)
    assert any(line.startswith("error -32000 ") for line in lines), lines
    assert any(line.startswith("response ") for line in lines), lines


def test_the_host_does_not_compile_against_declarations_that_do_not_narrow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same host against the declarations as they were before they narrowed: the
    schema's definitions as they are (every envelope the bridge sends open, with an index
    signature)."""
    monkeypatch.setattr(typescript, "typescript_view", dict)
    loose = generate()[DTS_FILE]
    assert loose != (SCHEMAS / DTS_FILE).read_text("utf-8")
    assert 'method: "event";\n  params: EventEnvelope;\n  [key: string]: unknown;' in loose
    host = _host_dir(tmp_path, loose)
    compiled = _compile(host)
    assert compiled.returncode != 0
    errors = [line for line in compiled.stdout.splitlines() if line.startswith("host.mts")]
    # msg.params is unknown after the method checks.
    assert any("'msg.params' is of type 'unknown'" in e for e in errors), compiled.stdout
