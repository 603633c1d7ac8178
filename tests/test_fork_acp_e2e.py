"""End to end: ``session/fork`` on an ACP agent that advertises ACP's unstable
``sessionCapabilities.fork`` — the real claude-agent-acp (Claude Code underneath) against
the Anthropic stand-in, behind the ``claude-acp`` entry of tests/test_acp_e2e.py.

The bridge's fork at the end of the history is the agent's own ``session/fork`` in a new
agent process: the fork's next prompt carries the original's turn, the original's next
prompt does not carry the fork's.  ACP names no fork point, so a fork at an earlier event
is refused ``unsupported``.  Every message fits ACP's unstable schema.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp_schema import AcpSchema, read_transcript, schema_path
from bridge_client import drive, start
from conftest import running_bridge
from provider_clis import require_cli
from standins.anthropic_server import AnthropicStandIn, Text, last_user_text
from test_acp_e2e import ClaudeAcp

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]


def texts(body: dict[str, Any]) -> str:
    out: list[str] = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.extend(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return "\n".join(out)


async def test_claude_agent_acp_forks_natively(tmp_path: Path) -> None:
    cli = require_cli("claude-agent-acp")
    with AnthropicStandIn() as server:
        c = ClaudeAcp(tmp_path, server, cli)
        server.push(Text("Alpha noted."), Text("Beta noted."), Text("Forked."), Text("Original."))
        args = ("--state-dir", str(tmp_path / "bridge-state"))
        async with running_bridge("newline", *args, env=c.env) as bridge:
            created = await bridge.result("session/create", c.params(), timeout=60)
            original = created["session"]["sessionId"]
            for prompt in ("alpha", "beta"):
                events = await drive(bridge, await start(bridge, original, prompt), timeout=60)
                assert events[-1]["type"] == "run.completed"
            listed = await bridge.result("providers/list", {"probe": False})
            descriptor = next(p for p in listed["providers"] if p["id"] == "claude-acp")
            assert descriptor["capabilities"]["fork"] == {"atEnd": True}

            reply = await bridge.call("session/fork", {"sessionId": original, "atEvent": 3}, 30)
            assert reply["error"]["data"]["code"] == "unsupported"

            forked = await bridge.result("session/fork", {"sessionId": original}, timeout=60)
            fork = forked["session"]["sessionId"]
            events = await drive(bridge, await start(bridge, fork, "fork?"), timeout=60)
            assert events[-1]["type"] == "run.completed"
            events = await drive(bridge, await start(bridge, original, "orig?"), timeout=60)
            assert events[-1]["type"] == "run.completed"
        requests = [r.body for r in server.model_requests()]
        by_prompt = {last_user_text(body): body for body in requests}
        assert "Beta noted." in texts(by_prompt["fork?"])
        assert "Alpha noted." in texts(by_prompt["fork?"])
        assert "fork?" not in texts(by_prompt["orig?"])
        assert "Beta noted." in texts(by_prompt["orig?"])
        unstable = AcpSchema(schema_path().with_name("schema.unstable.json"))
        assert unstable.check_transcript(read_transcript(c.log)) == []
