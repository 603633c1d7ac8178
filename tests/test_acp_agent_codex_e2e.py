"""``agent-bridge acp`` in front of the real Codex CLI (its model provider the Responses
stand-in on loopback), driven by the ACP Python SDK's client over real pipes: Codex's
approval presets are the session's ACP modes (``session/set_mode`` switches the next
turn's approval policy and sandbox), its skills arrive as an ``available_commands_update``,
and a prompt ``/<skill> <arguments>`` from the client runs the skill (the stand-in's
request carries the skill's instructions).  Every message is checked against ACP's
schema through the tap.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp_agent_support import BRIDGE, TAP, check_schema
from provider_clis import require_cli
from standins.responses_server import CODEX_OFFLINE_CONFIG, ResponsesStandIn

acp = pytest.importorskip("acp", reason="LOUD SKIP: agent-client-protocol is not installed")
from acp import spawn_agent_process, text_block  # noqa: E402
from acp.schema import ClientCapabilities  # noqa: E402

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]


class Client:
    """Records the updates it is sent and every permission it is asked (declined)."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.asked: list[Any] = []
        self.seen = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        self.seen.set()

    async def request_permission(self, options: Any, session_id: str, **kwargs: Any) -> Any:
        self.asked.append(kwargs.get("tool_call"))
        return {"outcome": {"outcome": "cancelled"}}

    def commands(self) -> list[list[str]]:
        return [
            [c.name for c in u.available_commands]
            for u in self.updates
            if u.session_update == "available_commands_update"
        ]

    async def wait_for_commands(self) -> None:
        async def until() -> None:
            while not self.commands():
                self.seen.clear()
                await self.seen.wait()

        await asyncio.wait_for(until(), 15)


@pytest.fixture
def stand_in() -> Iterator[ResponsesStandIn]:
    with ResponsesStandIn() as server:
        yield server
        assert server.errors == []


async def test_codex_modes_and_skills_over_acp(tmp_path: Path, stand_in: ResponsesStandIn) -> None:
    codex = require_cli("codex")
    home, work, codex_home = tmp_path / "home", tmp_path / "work", tmp_path / "codex-home"
    for folder in (home, work, codex_home, tmp_path / "tmp"):
        folder.mkdir()
    (codex_home / "config.toml").write_text(CODEX_OFFLINE_CONFIG)
    skill = codex_home / "skills" / "greet"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: greet\ndescription: Greets\n---\nGREET-SKILL-BODY: greet them.\n"
    )
    log = tmp_path / "acp.log"
    config = [f'model_providers.stub.base_url="{stand_in.base_url}"']
    argv = [
        str(TAP),
        "--log",
        str(log),
        "--",
        BRIDGE,
        "acp",
        "--provider",
        "codex",
        "--state-dir",
        str(tmp_path / "state"),
        "--option",
        f"codexHome={codex_home}",
        "--option",
        "approvalPolicy=on-request",
        "--option",
        "sandbox=read-only",
        "--option",
        f"config={json.dumps(config)}",
    ]
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "TMPDIR": str(tmp_path / "tmp"),
        "AGENT_BRIDGE_CODEX_PATH": codex,
        "STUB_API_KEY": "dummy-key",
    }
    client = Client()
    async with spawn_agent_process(client, sys.executable, *argv, env=env) as (conn, _process):  # type: ignore[arg-type]  # a client of the methods the bridge calls
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        session = await conn.new_session(cwd=str(work), mcp_servers=[])
        sid = session.session_id
        assert session.modes is not None
        assert session.modes.current_mode_id == "read-only"  # on-request + read-only
        assert [m.id for m in session.modes.available_modes] == [
            "read-only",
            "auto",
            "full-access",
        ]
        await client.wait_for_commands()
        assert "greet" in client.commands()[0]

        reply = await conn.prompt(session_id=sid, prompt=[text_block("/greet the team")])
        assert reply.stop_reason == "end_turn"
        request = json.dumps(stand_in.response_bodies()[-1]["input"])
        assert "$greet the team" in request and "GREET-SKILL-BODY" in request

        await conn.set_session_mode(mode_id="full-access", session_id=sid)
        reply = await conn.prompt(session_id=sid, prompt=[text_block("TOOL:touch made.txt")])
        assert reply.stop_reason == "end_turn"
    assert (work / "made.txt").exists()  # full-access: written without asking
    assert client.asked == []
    modes = [u.current_mode_id for u in client.updates if u.session_update == "current_mode_update"]
    assert modes == ["full-access"]
    check_schema(log)
