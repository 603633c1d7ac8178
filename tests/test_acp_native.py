"""An ACP agent's own sessions through ACP's ``session/list`` (adapters/acp/native.py):
the descriptor follows the agent's ``initialize``; listing and finding a session run the
project's stand-in agent (tests/standins/fake_acp.py) as a real child process over pipes.

The real agents (claude-agent-acp, codex-acp) are in tests/test_acp_agent_native_e2e.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from test_acp_adapter import FAKE

from agent_bridge.adapters.acp import protocol as p
from agent_bridge.adapters.acp.launch import spec_from_entry
from agent_bridge.adapters.acp.native import parse_cursor, session_entry
from agent_bridge.adapters.acp.provider import AcpProvider, gemini_provider, generic_provider
from agent_bridge.errors import BridgeError
from agent_bridge.wire.providers import NativeSessionsCapability

pytestmark = pytest.mark.timeout(60)

LISTING = {"loadSession": True, "sessionCapabilities": {"list": {}, "resume": {}}}


def caps(provider: AcpProvider) -> NativeSessionsCapability:
    return provider.describe().capabilities.native_sessions


def learned(agent_capabilities: dict[str, Any]) -> AcpProvider:
    provider = AcpProvider(spec_from_entry("x", {"command": ["a"]}))
    provider.learned(p.AgentInfo.from_result({"agentCapabilities": agent_capabilities}))
    return provider


def test_descriptor_follows_initialize() -> None:
    asked_not = AcpProvider(spec_from_entry("x", {"command": ["a"]}))
    # not asked yet: trusted, as for resume; reading pages is never possible through ACP
    assert caps(asked_not) == NativeSessionsCapability("supported", "unsupported", "supported")
    assert caps(learned(LISTING)) == NativeSessionsCapability(
        "supported", "unsupported", "supported"
    )
    only_list = learned({"sessionCapabilities": {"list": {}}})
    assert caps(only_list) == NativeSessionsCapability("supported", "unsupported", "unsupported")
    assert caps(learned({"loadSession": True})) == NativeSessionsCapability.unsupported()
    assert caps(generic_provider()) == NativeSessionsCapability.unsupported()
    assert caps(gemini_provider()) == NativeSessionsCapability("supported", "exact", "unsupported")


def test_native_ref_is_the_agents_session_id() -> None:
    provider = learned(LISTING)
    assert provider.native_ref({"agent": "x", "sessionId": "s-1", "cwd": "/w"}) == "s-1"
    assert provider.native_ref({"agent": "x"}) is None
    assert learned({"loadSession": True}).native_ref({"sessionId": "s-1"}) is None
    assert generic_provider().native_ref({"sessionId": "s-1"}) is None


def test_cursor_and_entry_shapes() -> None:
    assert parse_cursor(None) == (None, 0)
    assert parse_cursor("a1:3:") == (None, 3)
    assert parse_cursor("a1:0:agent cursor") == ("agent cursor", 0)
    for bad in ("", "3:x", "a1:-1:x", "a1:x:y", "a2:0:"):
        with pytest.raises(BridgeError) as caught:
            parse_cursor(bad)
        assert caught.value.error_code == "invalid_params"
    entry = session_entry({"sessionId": "s", "cwd": "/w", "title": "t" * 300, "updatedAt": "x"})
    assert entry is not None and entry.title == "t" * 200 and entry.workspace == "/w"
    assert session_entry({"sessionId": ""}) is None
    assert session_entry({"sessionId": "a\nb"}) is None
    assert session_entry({"cwd": "/w"}) is None
    # a working directory the kit does not take is not shown (nor compared by real path)
    for cwd in ("/w\u0000x", "relative", "/" + "d" * 5000, "/w\nx", "", 7):
        entry = session_entry({"sessionId": "s", "cwd": cwd})
        assert entry is not None and entry.workspace is None, cwd


class Agent:
    """The stand-in agent as a configured provider, with ``sessions`` remembered in its
    state directory (as if made by earlier processes)."""

    def __init__(self, tmp: Path, **script: Any) -> None:
        self.work = tmp / "work"
        self.elsewhere = tmp / "elsewhere"
        self.state = tmp / "agent-state"
        for d in (self.work, self.elsewhere, self.state):
            d.mkdir(exist_ok=True)
        self.log = tmp / "acp.log"
        script_path = tmp / "script.json"
        script_path.write_text(
            json.dumps(
                {"log": str(self.log), "state_dir": str(self.state), "capabilities": LISTING}
                | script
            )
        )
        command = [sys.executable, str(FAKE), "--script", str(script_path)]
        self.provider = AcpProvider(spec_from_entry("fake", {"command": command}))

    def remember(self, count: int, cwd: Path, start: int = 0) -> list[str]:
        path = self.state / "fake_acp_sessions.json"
        saved = json.loads(path.read_text()) if path.exists() else {}
        ids = [f"s{start + i:03d}" for i in range(count)]
        for i, sid in enumerate(ids):
            saved[sid] = {
                "cwd": str(cwd),
                "history": [],
                "prompts": 0,
                "order": start + i,
                "title": f"prompt {sid}",
            }
        path.write_text(json.dumps(saved))
        return ids

    def methods(self) -> list[str]:
        if not self.log.exists():
            return []
        out = []
        for line in self.log.read_text().splitlines():
            record = json.loads(line)
            if record["dir"] == "->" and "method" in record["msg"]:
                out.append(record["msg"]["method"])
        return out


async def every_page(provider: AcpProvider, workspace: str | None, limit: int) -> list[str]:
    refs: list[str] = []
    cursor: str | None = None
    for _ in range(20):
        page = await provider.list_native_sessions(workspace, cursor, limit)
        assert len(page.sessions) <= limit
        refs += [s.session_ref for s in page.sessions]
        cursor = page.next_cursor
        if cursor is None:
            return refs
    raise AssertionError("the listing did not end")


async def test_a_session_the_agent_lists_with_an_unusable_cwd_is_in_no_workspace(
    tmp_path: Path,
) -> None:
    """The agent's ``session/list`` naming a working directory with a NUL (the workspace
    check's ``realpath`` raised on it: the whole listing failed): listed without a
    workspace, left out of a workspace's listing; the others as before."""
    agent = Agent(tmp_path)
    mine = agent.remember(2, agent.work)
    path = agent.state / "fake_acp_sessions.json"
    saved = json.loads(path.read_text())
    saved["s900"] = dict(saved[mine[0]], cwd="/w\u0000x", order=900)
    path.write_text(json.dumps(saved))
    everything = await agent.provider.list_native_sessions(None, None, 10)
    assert {s.session_ref: s.workspace for s in everything.sessions} == {
        mine[0]: str(agent.work),
        mine[1]: str(agent.work),
        "s900": None,
    }
    assert await every_page(agent.provider, str(agent.work), 10) == mine


async def test_pages_cut_to_the_limit_cover_every_session_once(tmp_path: Path) -> None:
    agent = Agent(tmp_path, list_page=2)
    mine = agent.remember(5, agent.work)
    theirs = agent.remember(2, agent.elsewhere, start=5)
    provider = agent.provider
    assert await every_page(provider, str(agent.work), 3) == mine
    assert await every_page(provider, str(agent.work), 2) == mine
    assert await every_page(provider, None, 4) == mine + theirs
    page = await provider.list_native_sessions(str(agent.work), None, 1)
    (entry,) = page.sessions
    assert entry.title == "prompt s000" and entry.workspace == str(agent.work)
    assert caps(provider) == NativeSessionsCapability("supported", "unsupported", "supported")
    assert set(agent.methods()) == {"initialize", "session/list"}  # read-only


async def test_continuation_names_the_sessions_directory(tmp_path: Path) -> None:
    agent = Agent(tmp_path, list_page=2)
    agent.remember(3, agent.elsewhere)
    continuation = await agent.provider.native_continuation("s002")
    assert continuation.workspace == str(agent.elsewhere)
    assert continuation.opaque == {
        "agent": "fake",
        "sessionId": "s002",
        "cwd": str(agent.elsewhere),
        "native": True,
    }
    with pytest.raises(BridgeError) as caught:
        await agent.provider.native_continuation("s999")
    assert caught.value.error_code == "session_not_found"
    with pytest.raises(BridgeError) as caught:
        await agent.provider.native_continuation("bad\nref")
    assert caught.value.error_code == "invalid_params"


async def test_malformed_cursor_starts_no_agent(tmp_path: Path) -> None:
    agent = Agent(tmp_path)
    with pytest.raises(BridgeError) as caught:
        await agent.provider.list_native_sessions(None, "not mine", 10)
    assert caught.value.error_code == "invalid_params"
    assert agent.methods() == []


async def test_an_agent_without_session_list_is_declared_unsupported(tmp_path: Path) -> None:
    agent = Agent(tmp_path, capabilities={"loadSession": True})
    provider = agent.provider
    assert caps(provider).list == "supported"  # trusted until asked
    with pytest.raises(BridgeError) as caught:
        await provider.list_native_sessions(None, None, 10)
    assert caught.value.error_code == "unsupported"
    assert caps(provider) == NativeSessionsCapability.unsupported()
    with pytest.raises(BridgeError) as caught:
        await provider.list_native_sessions(None, None, 10)
    assert caught.value.error_code == "unsupported"
    assert agent.methods() == ["initialize"]  # asked once


async def test_a_failing_list_is_unavailable_not_empty(tmp_path: Path) -> None:
    agent = Agent(tmp_path, list_fails=True)
    agent.remember(2, agent.work)
    with pytest.raises(BridgeError) as caught:
        await agent.provider.list_native_sessions(None, None, 10)
    assert caught.value.error_code == "history_unavailable"


async def test_reading_pages_is_unsupported(tmp_path: Path) -> None:
    agent = Agent(tmp_path)
    with pytest.raises(BridgeError) as caught:
        await agent.provider.read_native_session("s000", None, 10, "start")
    assert caught.value.error_code == "unsupported"
