"""Boolean config options of ``agent-bridge acp``, driven by the ACP Python SDK's client.

The provider is an ACP agent (configured in a config file), here another ``agent-bridge
acp`` on the scripted provider, so the session has the ACP provider's ``boolean`` session
options (``clientFs``, ``clientTerminal``).  A client that advertises
``session.configOptions.boolean`` gets them as toggles and sets one; a client that does
not gets only selects and cannot set them.  Every message of the outer bridge is
validated against ACP's schema.json.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from acp_agent_support import BRIDGE, TAP, check_schema

acp = pytest.importorskip("acp", reason="LOUD SKIP: agent-client-protocol is not installed")
from acp import RequestError, spawn_agent_process, text_block  # noqa: E402
from acp.schema import (  # noqa: E402
    BooleanConfigOptionCapabilities,
    ClientCapabilities,
    ClientSessionCapabilities,
    SessionConfigOptionsCapabilities,
)

pytestmark = pytest.mark.timeout(90)

TOGGLES = ClientCapabilities(
    session=ClientSessionCapabilities(
        config_options=SessionConfigOptionsCapabilities(boolean=BooleanConfigOptionCapabilities())
    )
)


class Client:
    """An ACP client that keeps the session updates and asks for nothing."""

    def __init__(self) -> None:
        self.updates: list[Any] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    def texts(self) -> str:
        return "".join(
            u.content.text
            for u in self.updates
            if getattr(u, "session_update", None) == "agent_message_chunk"
        )


def _outer(tmp_path: Path, log: Path) -> tuple[list[str], dict[str, str]]:
    """The outer bridge's argv (behind the tap) and environment: its provider ``inner`` is
    ``agent-bridge acp`` on the scripted provider (which echoes)."""
    inner = [BRIDGE, "acp", "--provider", "scripted", "--state-dir", str(tmp_path / "inner")]
    config = tmp_path / "config.toml"
    config.write_text(
        f'[acp.agents.inner]\ndisplayName = "Inner bridge"\ncommand = {json.dumps(inner)}\n'
    )
    argv = [sys.executable, str(TAP), "--log", str(log), "--", BRIDGE, "acp"]
    argv += ["--provider", "inner", "--state-dir", str(tmp_path / "outer")]
    return argv, {**os.environ, "AGENT_BRIDGE_CONFIG": str(config)}


async def test_a_client_that_takes_toggles_gets_and_sets_the_boolean_options(
    tmp_path: Path,
) -> None:
    log = tmp_path / "acp.log"
    argv, env = _outer(tmp_path, log)
    client = Client()
    async with spawn_agent_process(client, argv[0], *argv[1:], env=env) as (conn, _process):  # type: ignore[arg-type]  # a client of the methods the bridge calls
        await conn.initialize(protocol_version=1, client_capabilities=TOGGLES)
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        sid = session.session_id
        kinds = {o.id: o.type for o in session.config_options or []}
        assert kinds["provider"] == "select"
        assert kinds["clientFs"] == kinds["clientTerminal"] == "boolean", kinds
        current = {o.id: o.current_value for o in session.config_options or []}
        assert current["clientFs"] is False and current["clientTerminal"] is False

        changed = await conn.set_config_option(
            config_id="clientFs", session_id=sid, type="boolean", value=True
        )
        after = {o.id: o.current_value for o in changed.config_options}
        assert after["clientFs"] is True and after["clientTerminal"] is False
        with pytest.raises(RequestError) as bad:  # a toggle takes a boolean
            await conn.set_config_option(config_id="clientTerminal", session_id=sid, value="on")
        assert bad.value.code == -32602

        reply = await conn.prompt(session_id=sid, prompt=[text_block("toggled")])
        assert reply.stop_reason == "end_turn"
        assert client.texts() == "You said: toggled"
        loaded = await conn.list_sessions()
        assert [s.session_id for s in loaded.sessions] == [sid]
    records = check_schema(log)
    replies = [r["msg"] for r in records if r["dir"] == "<-" and "result" in r["msg"]]
    assert any(
        {"id": "clientFs", "type": "boolean", "currentValue": True}.items() <= o.items()
        for reply in replies
        for o in (reply["result"] or {}).get("configOptions", [])
    )


async def test_a_client_without_toggles_gets_selects_only(tmp_path: Path) -> None:
    log = tmp_path / "acp.log"
    argv, env = _outer(tmp_path, log)
    async with spawn_agent_process(Client(), argv[0], *argv[1:], env=env) as (conn, _process):  # type: ignore[arg-type]  # a client of the methods the bridge calls
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        options = session.config_options or []
        assert options and {o.type for o in options} == {"select"}
        assert "clientFs" not in {o.id for o in options}
        with pytest.raises(RequestError) as unknown:
            await conn.set_config_option(
                config_id="clientFs", session_id=session.session_id, type="boolean", value=True
            )
        assert unknown.value.code == -32602
    check_schema(log)
