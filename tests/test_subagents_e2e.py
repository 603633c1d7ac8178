"""Subagents as a tree, end to end: the stand-in model makes the real, pinned Claude
Code start a subagent through its Task tool; the subagent runs a Bash command (asking
the host's approval) and answers; the main agent then finishes.  Every event produced
inside the subagent carries the id of the Task tool call that started it
(``parentToolCallId``), the Task call itself carries ``subagent`` (its type, description,
status and usage as they grow), and the approval says the subagent asks.

Without the CLI this test is skipped loudly; in CI a missing CLI fails it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bridge_client import drive, start
from conftest import running_bridge
from provider_clis import require_cli
from standins.anthropic_server import AnthropicStandIn, Text, ToolUse

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

Msg = dict[str, Any]


async def test_claude_code_subagent_events_are_tagged_with_their_parent(tmp_path: Path) -> None:
    cli = require_cli("claude")
    for name in ("home", "config", "tmp", "work"):
        (tmp_path / name).mkdir()
    task_input = {
        "description": "look around",
        "prompt": "make a file",
        "subagent_type": "general-purpose",
    }
    with AnthropicStandIn() as server:
        server.push(
            ToolUse(name="Task", input=task_input, tool_use_id="toolu_task"),  # main agent
            ToolUse("touch by-subagent.txt", tool_use_id="toolu_sub_bash"),  # the subagent's turn
            Text("sub done"),  # the subagent answers
            Text("all done"),  # the main agent, after the Task result
        )
        env = {
            "AGENT_BRIDGE_CLAUDE_PATH": cli,
            "HOME": str(tmp_path / "home"),
            "CLAUDE_CONFIG_DIR": str(tmp_path / "config"),
            "TMPDIR": str(tmp_path / "tmp"),
            "ANTHROPIC_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": "dummy",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CODE_MAX_RETRIES": "0",
        }
        asked: list[Msg] = []

        def approve(params: Msg) -> Msg:
            asked.append(params["request"])
            return {"kind": "approval", "decision": "allow", "mode": "once"}

        async with running_bridge("newline", env=env) as bridge:
            params = {"provider": "claude-code", "workspace": str(tmp_path / "work")}
            created = await bridge.result("session/create", params, timeout=30)
            session = created["session"]["sessionId"]
            run = await start(bridge, session, "delegate please")
            events = await drive(bridge, run, approve, timeout=90)
            await bridge.result("session/close", {"sessionId": session}, timeout=20)

    assert events[-1]["type"] == "run.completed", events[-1]
    tools = [e for e in events if e["type"] == "tool.activity"]
    task = [t for t in tools if t["toolCallId"] == "toolu_task"]
    inner = [t for t in tools if t["toolCallId"] == "toolu_sub_bash"]
    # The subagent's start: the Task call, with the subagent's type and description.
    assert task[0]["status"] == "started" and "parentToolCallId" not in task[0]
    assert task[0]["subagent"] == {
        "agentType": "general-purpose",
        "description": "look around",
        "status": "running",
    }
    # Its progress and end, with its usage; then the Task call completes (the end).
    progress = [t["subagent"] for t in task if t["status"] == "output"]
    assert progress and progress[-1]["status"] == "completed", task
    assert progress[-1]["usage"]["toolUses"] == 1 and progress[-1]["usage"]["totalTokens"] > 0
    assert task[-1]["status"] == "completed" and task[-1]["subagent"]["status"] == "completed"
    assert "sub done" in task[-1]["output"]
    # Everything the subagent did is tagged with the Task call's id.
    assert [t["status"] for t in inner] == ["started", "completed"]
    assert {t["parentToolCallId"] for t in inner} == {"toolu_task"}
    assert (tmp_path / "work" / "by-subagent.txt").exists()  # approved, then run
    # The approval raised inside the subagent says so, in the event and the request.
    assert [a.get("parentToolCallId") for a in asked] == ["toolu_task"]
    requested = [e for e in events if e["type"] == "interaction.requested"]
    assert requested[0]["request"]["parentToolCallId"] == "toolu_task"
    # The subagent's reply is not the main agent's text.
    text = "".join(e["text"] for e in events if e["type"] == "text.delta")
    assert text == "all done"


async def test_claude_agent_acp_subagent_tool_calls_carry_their_parent(tmp_path: Path) -> None:
    """Over ACP: claude-agent-acp (Claude Code underneath) marks a subagent's updates with
    ``_meta.claudeCode.parentToolUseId``; the ACP adapter tags the tool calls with it,
    the approval says the subagent asks, and the subagent's words stay out of the reply."""
    from test_acp_e2e import ClaudeAcp, check_schema

    cli = require_cli("claude-agent-acp")
    task_input = {
        "description": "look around",
        "prompt": "make a file",
        "subagent_type": "general-purpose",
    }
    with AnthropicStandIn() as server:
        server.push(
            ToolUse(name="Task", input=task_input, tool_use_id="toolu_task"),
            ToolUse("touch by-acp-subagent.txt", tool_use_id="toolu_sub_bash"),
            Text("sub done"),
            Text("all done"),
        )
        c = ClaudeAcp(tmp_path, server, cli)
        asked: list[Msg] = []

        def approve(params: Msg) -> Msg:
            asked.append(params["request"])
            return {"kind": "approval", "decision": "allow", "mode": "once"}

        async with running_bridge("newline", env=c.env) as bridge:
            created = await bridge.result("session/create", c.params(), timeout=60)
            session = created["session"]["sessionId"]
            run = await start(bridge, session, "delegate please")
            events = await drive(bridge, run, approve, timeout=90)
            await bridge.result("session/close", {"sessionId": session}, timeout=30)
        check_schema(c.log)

    assert events[-1]["type"] == "run.completed", events[-1]
    tools = [e for e in events if e["type"] == "tool.activity"]
    inner = [t for t in tools if t["toolCallId"] == "toolu_sub_bash"]
    assert inner and {t.get("parentToolCallId") for t in inner} == {"toolu_task"}, tools
    outer = [t for t in tools if t["toolCallId"] == "toolu_task"]
    assert outer and all("parentToolCallId" not in t for t in outer)
    assert [a.get("parentToolCallId") for a in asked] == ["toolu_task"]
    assert (tmp_path / "work" / "by-acp-subagent.txt").exists()
    text = "".join(e["text"] for e in events if e["type"] == "text.delta")
    assert "sub done" not in text and "all done" in text
