"""End to end: the native sessions of a generic ACP agent that advertises ACP's
``session/list`` and can continue a session (``loadSession``/``session/resume``): the
real claude-agent-acp and codex-acp, each behind a configured ``[acp.agents.<id>]`` entry
(tests/test_acp_e2e.py), against their loopback stand-ins.

A session is made through the agent (bridge A); a fresh bridge B with its own journal,
through a fresh agent process, discovers it with ``provider/sessions/list`` and
continues it: the stand-in's next request carries the earlier conversation.  ACP reads
no history in pages, so the descriptor says ``read: unsupported`` and ``provider/sessions/
read`` answers ``unsupported``; the import is what the agent's ``session/load``
replays.  Every message the bridge and the agent exchanged fits ACP's schema.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from bridge_client import drive, start
from conftest import running_bridge
from provider_clis import require_cli
from test_acp_e2e import ClaudeAcp, CodexAcp, check_schema

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]


class Case:
    """One agent: its config helper and how to script one reply on its stand-in."""

    def __init__(self, agent: Any, provider: str, say: Callable[[str], None]) -> None:
        self.agent = agent
        self.provider = provider
        self.say = say

    def requests(self) -> list[str]:
        """The stand-in's model requests, as JSON text, oldest first."""
        return [json.dumps(r.body) for r in self.agent.server.model_requests()]


@pytest.fixture(params=["claude-acp", "codex-acp"])
def case(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Case]:
    if request.param == "claude-acp":
        from standins.anthropic_server import AnthropicStandIn, Text

        cli = require_cli("claude-agent-acp")
        with AnthropicStandIn() as anthropic:
            claude = ClaudeAcp(tmp_path, anthropic, cli)
            yield Case(claude, "claude-acp", lambda words: anthropic.push(Text(words)))
            check_schema(claude.log)
    else:
        from standins.responses_server import ResponsesStandIn, reply, text

        cli = require_cli("codex-acp")
        with ResponsesStandIn() as responses:
            codex = CodexAcp(tmp_path, responses, cli, asking=False)
            yield Case(codex, "codex-acp", lambda words: responses.script(reply(text(words))))
            check_schema(codex.log)


async def test_acp_agent_session_discovered_and_continued(case: Case, tmp_path: Path) -> None:
    c = case.agent
    work = str(c.work)
    listing = {"provider": case.provider, "workspace": work}
    case.say("Alpha noted.")
    async with running_bridge("newline", "--state-dir", str(tmp_path / "a"), env=c.env) as a:
        created = await a.result("session/create", c.params(), timeout=90)
        original = created["session"]["sessionId"]
        events = await drive(a, await start(a, original, "remember alpha"), timeout=90)
        assert events[-1]["type"] == "run.completed"
        listed = await a.result("provider/sessions/list", listing, timeout=90)
        (entry,) = listed["sessions"]
        assert entry["bridgeSessionId"] == original  # the bridge's own session, bound
        assert entry["workspace"] == work
        ref = entry["sessionRef"]
        providers = await a.result("providers/list", {"probe": False})
        descriptor = next(p for p in providers["providers"] if p["id"] == case.provider)
        assert descriptor["capabilities"]["nativeSessions"] == {
            "list": "supported",
            "read": "unsupported",
            "continue": "supported",
        }
        read = {"provider": case.provider, "sessionRef": ref}
        reply = await a.call("provider/sessions/read", read, 30)
        assert reply["error"]["data"]["code"] == "unsupported"

    async with running_bridge("newline", "--state-dir", str(tmp_path / "b"), env=c.env) as b:
        # a fresh bridge knows nothing of the agent until it asks it
        listed = await b.result("provider/sessions/list", listing, timeout=90)
        (entry,) = listed["sessions"]
        assert entry["sessionRef"] == ref
        assert "bridgeSessionId" not in entry
        other = await b.result(
            "provider/sessions/list", {**listing, "workspace": str(tmp_path / "home")}, timeout=90
        )
        assert other["sessions"] == []
        cont = {"provider": case.provider, "sessionRef": ref}
        continued = await b.result("provider/sessions/continue", cont, timeout=90)
        assert continued["bound"] == "created"
        session_id = continued["session"]["sessionId"]
        # the agent's replay of its session/load is the import: the earlier turn, raw kept
        page = await b.result("events/read", {"sessionId": session_id, "after": 0})
        payloads = [e["payload"] for e in page["events"]]
        marker = next(p for p in payloads if p["type"] == "session.imported")
        imported = payloads[: payloads.index(marker)]
        assert continued["imported"] == marker["records"] == len(imported) > 0
        assert {"type": "run.started", "input": "remember alpha"} in imported
        assert "Alpha noted." in "".join(p.get("text", "") for p in imported)
        assert continued["session"]["workspace"] == work
        before = len(case.requests())
        case.say("It was alpha.")
        events = await drive(b, await start(b, session_id, "what did I ask?"), timeout=90)
        assert events[-1]["type"] == "run.completed"
        later = case.requests()[before:]
        assert later, "the continued run asked the model nothing"
        assert "remember alpha" in later[-1] and "Alpha noted." in later[-1]
        again = await b.result("provider/sessions/continue", cont, timeout=90)
        assert again["bound"] == "existing"
        assert again["session"]["sessionId"] == session_id
        listed = await b.result("provider/sessions/list", listing, timeout=90)
        assert [e.get("bridgeSessionId") for e in listed["sessions"]] == [session_id]


async def test_an_acp_editor_continues_an_acp_agents_session(tmp_path: Path) -> None:
    """Through ``agent-bridge acp --provider claude-acp``: a session claude-agent-acp made
    (through another bridge) is in the editor's ``session/list``, ``session/load``
    continues it in the agent's own conversation (its earlier turn replayed to the
    editor), and it is listed once afterwards."""
    import os

    from acp_agent_support import BRIDGE
    from standins.anthropic_server import AnthropicStandIn, Text

    acp = pytest.importorskip("acp", reason="LOUD SKIP: agent-client-protocol is not installed")
    from test_acp_native_e2e import Client

    cli = require_cli("claude-agent-acp")
    with AnthropicStandIn() as server:
        c = ClaudeAcp(tmp_path, server, cli)
        work = str(c.work)
        server.push(Text("Alpha noted."))
        async with running_bridge("newline", "--state-dir", str(tmp_path / "a"), env=c.env) as a:
            created = await a.result("session/create", c.params(), timeout=90)
            events = await drive(
                a, await start(a, created["session"]["sessionId"], "remember alpha"), timeout=90
            )
            assert events[-1]["type"] == "run.completed"
        argv = [BRIDGE, "acp", "--provider", "claude-acp", "--state-dir", str(tmp_path / "b")]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **c.env}
        client = Client()
        async with acp.spawn_agent_process(client, *argv, env=env) as (conn, _process):
            await conn.initialize(protocol_version=1)
            listed = await conn.list_sessions(cwd=work)
            (entry,) = listed.sessions
            await conn.load_session(cwd=work, session_id=entry.session_id, mcp_servers=[])
            # the earlier turn, imported from the agent's replay, is replayed to the editor
            assert "remember alpha" in client.texts("user_message_chunk")
            assert client.texts("agent_message_chunk") == "Alpha noted."
            server.push(Text("It was alpha."))
            reply = await conn.prompt(
                session_id=entry.session_id, prompt=[acp.text_block("what did I ask?")]
            )
            assert reply.stop_reason == "end_turn"
            assert client.texts("agent_message_chunk").endswith("It was alpha.")
            request = json.dumps(server.model_requests()[-1].body)
            assert "remember alpha" in request and "Alpha noted." in request
            again = await conn.list_sessions(cwd=work)
            assert [s.session_id for s in again.sessions] == [entry.session_id]
        check_schema(c.log)
