"""Contract: an event streamed live and the same record read later from the provider's
history carry the same identity, so a host merging both keeps one copy.

A turn runs through a real ``agent-bridge serve`` on the real CLI (Claude Code, Codex)
against its stand-in; the provider's history of that session is then read with
``provider/sessions/read``.  The text's ``messageId`` (Claude Code: the model's message id;
Codex: the item id) is the same on both sides, as is every tool's ``callId``.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from bridge_client import drive, read_native, start
from conftest import running_bridge
from provider_clis import require_cli

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]

Msg = dict[str, Any]


def texts_by_message(payloads: list[Msg]) -> dict[str | None, str]:
    """The reply text of each ``messageId`` (the deltas of one message joined)."""
    out: dict[str | None, str] = defaultdict(str)
    for payload in payloads:
        if payload["type"] == "text.delta":
            out[payload.get("messageId")] += payload["text"]
    return {k: v.strip() for k, v in out.items() if v.strip()}


def call_ids(payloads: list[Msg]) -> set[str]:
    return {p["callId"] for p in payloads if p["type"] == "tool.activity"}


async def history(bridge: Any, provider: str, workspace: str, session_id: str) -> list[Msg]:
    """The payloads of every record of the provider session bound to ``session_id``."""
    listed = await bridge.result(
        "provider/sessions/list", {"provider": provider, "workspace": workspace}
    )
    (entry,) = [e for e in listed["sessions"] if e.get("bridgeSessionId") == session_id]
    records = await read_native(bridge, provider, entry["sessionRef"], 100)
    return [e for r in records for e in r.get("events", ())]


async def test_claude_code_live_and_history_share_message_ids(tmp_path: Path) -> None:
    from standins.anthropic_server import AnthropicStandIn, Text
    from test_claude_native_e2e import private_env

    cli = require_cli("claude")
    work = tmp_path / "work"
    with AnthropicStandIn([Text("Hello from the live run."), Text("And a second turn.")]) as s:
        env = {**private_env(tmp_path, s.base_url), "AGENT_BRIDGE_CLAUDE_PATH": cli}
        async with running_bridge("newline", env=env) as bridge:
            created = await bridge.result(
                "session/create", {"provider": "claude-code", "workspace": str(work)}, timeout=60
            )
            session_id = created["session"]["sessionId"]
            live: list[Msg] = []
            for prompt in ("first", "second"):
                live += await drive(bridge, await start(bridge, session_id, prompt), timeout=60)
                assert live[-1]["type"] == "run.completed"
            await bridge.result("session/close", {"sessionId": session_id}, timeout=30)
            read = await history(bridge, "claude-code", str(work), session_id)
    seen = texts_by_message(live)
    assert None not in seen and len(seen) == 2, seen
    assert texts_by_message(read) == seen
    assert call_ids(read) == call_ids(live)


async def test_codex_live_and_history_share_item_ids(tmp_path: Path) -> None:
    from standins.responses_server import ResponsesStandIn, reply, text
    from test_codex_native_e2e import private_env

    cli = require_cli("codex")
    env = {**private_env(tmp_path), "AGENT_BRIDGE_CODEX_PATH": cli}
    work = tmp_path / "work"
    with ResponsesStandIn() as server:
        server.script(reply(text("Hello from the live run.")), reply(text("And a second turn.")))
        override = f'model_providers.stub.base_url="{server.base_url}"'
        async with running_bridge("newline", env=env) as bridge:
            created = await bridge.result(
                "session/create",
                {"provider": "codex", "workspace": str(work), "options": {"config": [override]}},
                timeout=60,
            )
            session_id = created["session"]["sessionId"]
            live: list[Msg] = []
            for prompt in ("first", "second"):
                live += await drive(bridge, await start(bridge, session_id, prompt), timeout=60)
                assert live[-1]["type"] == "run.completed"
            await bridge.result("session/close", {"sessionId": session_id}, timeout=30)
            read = await history(bridge, "codex", str(work), session_id)
    seen = texts_by_message(live)
    assert None not in seen and len(seen) == 2, seen
    assert texts_by_message(read) == seen
    assert call_ids(read) == call_ids(live)
