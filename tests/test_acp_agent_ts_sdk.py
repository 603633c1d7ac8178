"""``agent-bridge acp`` driven by the ACP TypeScript SDK's client
(``@agentclientprotocol/sdk``, pinned in scripts/install-provider-clis.sh) on the
machine's Node: tests/acp_clients/ts_client.mjs plays the scenario of
tests/acp_agent_support.py in two bridge processes on one journal, every message through
the tap and validated against ACP's schema.json.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from acp_agent_support import (
    ALLOWED,
    DENIED,
    FIRST_TEXT,
    ROOT,
    agent_argv,
    check_schema,
    require,
    system_node,
    write_script,
)
from acp_schema import TOOLS_DIR

pytestmark = pytest.mark.timeout(120)

CLIENT = ROOT / "tests" / "acp_clients" / "ts_client.mjs"


def run_client(phase: str, session_id: str, cwd: Path, argv: list[str]) -> dict[str, Any]:
    sdk = require(TOOLS_DIR / "node_modules" / "@agentclientprotocol" / "sdk", "the ACP TS SDK")
    done = subprocess.run(
        [system_node(), str(CLIENT), str(sdk), phase, session_id, str(cwd), "--", *argv],
        capture_output=True,
        timeout=90,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return result


def test_typescript_sdk_client_drives_the_scenario(tmp_path: Path) -> None:
    script = write_script(tmp_path)
    state = tmp_path / "state"
    work = tmp_path / "work"
    work.mkdir()
    log = tmp_path / "acp.log"
    first = run_client("first", "-", work, agent_argv(log, state, script))
    assert first["replies"]["initialize"]["agentCapabilities"]["loadSession"] is True
    assert first["replies"]["allowed"] == {"stopReason": "end_turn"}
    assert first["allowedText"].startswith(FIRST_TEXT)
    assert first["allowedText"].endswith(ALLOWED)
    assert first["replies"]["denied"] == {"stopReason": "end_turn"}
    assert first["deniedText"] == DENIED
    assert first["replies"]["cancelled"] == {"stopReason": "cancelled"}
    assert [p["toolCall"]["title"] for p in first["permissions"]] == ["Write hello.txt"] * 3
    assert first["errors"]["unknownSession"]["code"] == -32002
    assert first["errors"]["unknownSession"]["data"]["code"] == "session_not_found"
    assert first["errors"]["badParams"]["code"] == -32602
    sid = first["sessionId"]
    assert [s["sessionId"] for s in first["replies"]["list"]["sessions"]] == [sid]
    assert first["agentExit"] == 0
    kinds = {u["sessionUpdate"] for u in first["updates"]}
    assert {"tool_call", "tool_call_update", "plan", "usage_update"} <= kinds

    log2 = tmp_path / "acp2.log"
    second = run_client("second", sid, work, agent_argv(log2, state, script))
    assert [s["sessionId"] for s in second["replies"]["list"]["sessions"]] == [sid]
    replayed = second["updates"][: second["loadUpdates"]]
    users = [u["content"]["text"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
    assert users == ["Greet", "Again", "Stop"]
    provider = second["replies"]["config"]["configOptions"][0]
    assert provider["id"] == "provider" and provider["currentValue"] == "scripted"
    assert second["replies"]["after"] == {"stopReason": "end_turn"}
    assert second["afterText"] == "Echo: after restart"
    assert second["replies"]["deleteOpen"] == {} and second["replies"]["delete"] == {}
    assert second["replies"]["listAfterDelete"]["sessions"] == []
    assert second["errors"]["loadDeleted"]["code"] == -32002
    assert second["errors"]["loadDeleted"]["data"]["code"] == "session_not_found"
    caps = second["replies"]["initialize"]["agentCapabilities"]["sessionCapabilities"]
    assert caps["delete"] == {}
    # an unknown session: the bridge answers -32002, which the SDK takes as deleted
    assert second["replies"]["deleteUnknown"] == {}
    check_schema(log)
    records = check_schema(log2)
    (ask,) = [
        r["msg"]
        for r in records
        if r["dir"] == "->"
        and r["msg"].get("method") == "session/delete"
        and r["msg"]["params"]["sessionId"] == "ses_nope"
    ]
    (answer,) = [r["msg"] for r in records if r["dir"] == "<-" and r["msg"].get("id") == ask["id"]]
    assert answer["error"]["code"] == -32002
    assert answer["error"]["data"]["code"] == "session_not_found"


#: a real 1x1 PNG, base64
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def test_typescript_sdk_client_sends_an_image_a_resource_link_and_an_embedded_resource(
    tmp_path: Path,
) -> None:
    """The TS SDK client's image, resource link and embedded resource reach the scripted
    provider through ``agent-bridge acp`` whole (its ``received`` step answers with what
    arrived); every message validates against ACP's schema."""
    import base64
    import hashlib
    import os

    script = tmp_path / "received.json"
    script.write_text(json.dumps({"steps": [{"type": "received"}]}))
    work = tmp_path / "work"
    work.mkdir()
    (work / "main.py").write_text("print()\n")
    log = tmp_path / "acp.log"
    seen = run_client("rich", PNG, work, agent_argv(log, tmp_path / "state", script))
    assert seen["replies"]["rich"] == {"stopReason": "end_turn"}
    data = base64.b64decode(PNG)
    assert json.loads(seen["richText"]) == [
        {"type": "text", "text": "What is wrong?"},
        {
            "type": "image",
            "mimeType": "image/png",
            "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        },
        {"type": "file", "path": f"{os.path.realpath(work)}/main.py"},
        {"type": "resource", "text": "x = 1", "uri": "untitled:1", "mimeType": "text/x-python"},
    ]
    check_schema(log)
