"""Shared pieces of the ``agent-bridge acp`` tests: the scripted scenario, the agent's
command line behind the ACP tap, and the schema check of what was exchanged.

The scenario (one script, a run each):

1. streams text and thinking, a tool call with kind, location and a diff, a plan and
   usage, then asks an approval; the client **allows** it (a tool runs, "allowed.");
2. the same approval; the client **denies** it ("denied.");
3. asks an approval the client leaves unanswered and cancels mid-turn: the prompt ends
   ``cancelled`` and the approval is settled ``cancelled``;
4. (and later) echoes the prompt.

Every message each client and the bridge exchanged goes through the tap
(tests/standins/acp_tap.py) and is validated against ACP's schema.json.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Final

import pytest
from acp_schema import AcpSchema, read_transcript

ROOT = Path(__file__).resolve().parent.parent
TAP = ROOT / "tests" / "standins" / "acp_tap.py"
BRIDGE = str(Path(sys.executable).with_name("agent-bridge"))
ACP_CLIENTS = Path(os.environ.get("AGENT_BRIDGE_ACP_CLIENTS") or ROOT / ".tools" / "acp-clients")

FIRST_TEXT = "I will edit hello.txt. "
ALLOWED = "allowed."
DENIED = "denied."

_APPROVAL = {
    "type": "approval",
    "title": "Write hello.txt",
    "toolName": "Write",
    "input": {"path": "hello.txt"},
    "modes": ["once", "session"],
    "onAllow": [
        {"type": "tool", "id": "write_1", "name": "Write", "input": {"path": "hello.txt"}},
        {"type": "text", "text": ALLOWED},
    ],
    "onDeny": [{"type": "text", "text": DENIED}],
}

SCRIPT: dict[str, Any] = {
    "runs": [
        {
            "steps": [
                {"type": "text", "text": FIRST_TEXT, "chunks": 3},
                {"type": "thinking", "text": "The user wants a greeting."},
                {
                    "type": "emit",
                    "payloads": [
                        {
                            "type": "tool.activity",
                            "toolCallId": "edit_1",
                            "name": "Edit",
                            "status": "started",
                            "kind": "edit",
                            "title": "Edit hello.txt",
                            "locations": [{"path": "/tmp/hello.txt", "line": 1}],
                            "content": [
                                {
                                    "type": "edit",
                                    "path": "/tmp/hello.txt",
                                    "oldText": "hi",
                                    "newText": "hello",
                                }
                            ],
                        },
                        {
                            "type": "tool.activity",
                            "toolCallId": "edit_1",
                            "name": "Edit",
                            "status": "output",
                            "output": "1 line changed",
                        },
                        {
                            "type": "tool.activity",
                            "toolCallId": "edit_1",
                            "name": "Edit",
                            "status": "completed",
                        },
                    ],
                },
                {
                    "type": "plan",
                    "steps": [{"text": "Edit", "status": "completed"}, {"text": "Write"}],
                },
                {"type": "usage", "contextTokens": 1200, "maxTokens": 200000, "costUsd": 0.01},
                _APPROVAL,
            ]
        },
        {"steps": [_APPROVAL]},
        {"steps": [_APPROVAL]},
        {"steps": [{"type": "echo", "prefix": "Echo: "}]},
    ]
}


WORKING = "working..."


def write_script(base: Path, *, cancel_while: str = "approval") -> Path:
    """The scenario's script file; ``cancel_while="wait"``: run 3 streams a chunk and
    waits for the cancel instead of asking an approval (for clients whose permission
    policy answers every request at once)."""
    script = json.loads(json.dumps(SCRIPT))
    if cancel_while == "wait":
        script["runs"][2] = {
            "steps": [{"type": "text", "text": WORKING}, {"type": "waitForInterrupt"}]
        }
    path = base / "script.json"
    path.write_text(json.dumps(script))
    return path


def agent_argv(log: Path, state: Path, script: Path, *extra: str) -> list[str]:
    """``agent-bridge acp`` with the scripted scenario, behind the tap logging to ``log``."""
    return [
        sys.executable,
        str(TAP),
        "--log",
        str(log),
        "--",
        BRIDGE,
        "acp",
        "--provider",
        "scripted",
        "--state-dir",
        str(state),
        "--option",
        f"script={script}",
        *extra,
    ]


#: The errors with which the bridge refuses a malformed request (it never accepted it).
_REFUSED: Final = (-32700, -32600, -32601, -32602)


def accepted(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``records`` without the requests the bridge refused as malformed (and their
    error replies, which are checked on their own): what it sent and accepted."""
    refused = {
        json.dumps(r["msg"].get("id"))
        for r in records
        if r["dir"] == "<-"
        and "method" not in r["msg"]
        and isinstance(r["msg"].get("error"), dict)
        and r["msg"]["error"].get("code") in _REFUSED
    }
    kept: list[dict[str, Any]] = []
    for r in records:
        if r["dir"] == "->" and "unparsed" in r["msg"]:
            continue  # not JSON at all: refused with a parse error (id null)
        if r["dir"] == "<-" and r["msg"].get("id", 0) is None and "error" in r["msg"]:
            continue
        key = json.dumps(r["msg"].get("id")) if isinstance(r["msg"], dict) else None
        is_request = r["dir"] == "->" and "method" in r["msg"]
        is_refusal = r["dir"] == "<-" and "method" not in r["msg"] and "error" in r["msg"]
        if key in refused and (is_request or is_refusal):
            continue
        kept.append(r)
    return kept


def check_schema(log: Path) -> list[dict[str, Any]]:
    """Every message the bridge sent and accepted fits ACP's schema.json, and every
    error it sent fits ACP's ``Error``; returns the records."""
    records = read_transcript(log)
    assert records, "the tap logged nothing"
    schema = AcpSchema()
    problems = schema.check_transcript(accepted(records))
    for r in records:
        if r["dir"] == "<-" and isinstance(r["msg"].get("error"), dict):
            problems += schema.errors("Error", r["msg"]["error"])
        if r["dir"] == "<-" and "unparsed" in r["msg"]:
            problems.append(f"not JSON: {r['msg']['unparsed']!r}")
    assert problems == [], problems
    return records


def updates_of(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``update`` objects the bridge sent, in order."""
    return [
        r["msg"]["params"]["update"]
        for r in records
        if r["dir"] == "<-" and r["msg"].get("method") == "session/update"
    ]


def require(path: Path, what: str) -> Path:
    """``path`` when it exists; else a loud skip (a failure in CI)."""
    if path.exists():
        return path
    reason = f"{what} is not installed ({path}): run scripts/install-acp-clients.sh"
    if os.environ.get("AGENT_BRIDGE_REQUIRE_CLIS") == "1" or os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip("LOUD SKIP: " + reason)


def node_for_acpx() -> Path:
    """The Node (>= 22.13) acpx runs on."""
    return require(ACP_CLIENTS / "node", "Node for acpx")


def system_node() -> str:
    """The machine's node (for the TypeScript SDK client)."""
    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI") == "true":
            pytest.fail("node is not installed")
        pytest.skip("LOUD SKIP: node is not installed")
    return node
