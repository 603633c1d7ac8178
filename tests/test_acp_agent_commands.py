"""What a provider can be asked reaches an ACP client of ``agent-bridge acp``: the
session's commands as an ``available_commands_update`` right after the reply that opened
it (``session/new``, ``session/load``), before any prompt; a change in a run as another.

Driven by the ACP Python SDK's client over real pipes, the scripted provider naming its
commands; every message validated against ACP's schema.json (through the tap).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from acp_agent_support import agent_argv, check_schema

acp = pytest.importorskip("acp", reason="LOUD SKIP: agent-client-protocol is not installed")
from acp import spawn_agent_process, text_block  # noqa: E402
from acp.schema import ClientCapabilities  # noqa: E402

pytestmark = pytest.mark.timeout(90)

COMMANDS = [
    {"name": "review", "description": "Review the current diff", "hint": "<focus>"},
    {"name": "test", "description": "Run the tests"},
]
SCRIPT: dict[str, Any] = {
    "commands": COMMANDS,
    "steps": [
        {
            "type": "emit",
            "payloads": [{"type": "commands.updated", "commands": [{"name": "deploy"}]}],
        },
        {"type": "text", "text": "Done."},
    ],
}


class Client:
    """Records the updates it is sent."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.seen = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        self.seen.set()

    def command_lists(self) -> list[list[str]]:
        return [
            [c.name for c in u.available_commands]
            for u in self.updates
            if u.session_update == "available_commands_update"
        ]

    async def wait_for_lists(self, count: int) -> None:
        async def until() -> None:
            while len(self.command_lists()) < count:
                self.seen.clear()
                await self.seen.wait()

        await asyncio.wait_for(until(), 10)


def _around_reply(
    records: list[dict[str, Any]], method: str
) -> tuple[list[list[str]], list[list[str]]]:
    """The command lists the bridge sent before its reply to the (first) ``method``
    request, and those after it, before the client's next request."""
    request_id = next(
        r["msg"]["id"] for r in records if r["dir"] == "->" and r["msg"].get("method") == method
    )
    index = next(
        i
        for i, r in enumerate(records)
        if r["dir"] == "<-" and "method" not in r["msg"] and r["msg"].get("id") == request_id
    )
    before = [
        [c["name"] for c in r["msg"]["params"]["update"]["availableCommands"]]
        for r in records[:index]
        if r["dir"] == "<-"
        and r["msg"].get("method") == "session/update"
        and r["msg"]["params"]["update"]["sessionUpdate"] == "available_commands_update"
    ]
    out: list[list[str]] = []
    for r in records[index + 1 :]:
        if r["dir"] == "->" and "method" in r["msg"]:
            break
        if r["dir"] == "<-" and r["msg"].get("method") == "session/update":
            update = r["msg"]["params"]["update"]
            if update["sessionUpdate"] == "available_commands_update":
                out.append([c["name"] for c in update["availableCommands"]])
    return before, out


async def test_the_commands_reach_the_client_after_new_and_load(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    state = tmp_path / "state"
    work = tmp_path / "work"
    work.mkdir()
    log, log2 = tmp_path / "acp.log", tmp_path / "acp2.log"
    client = Client()
    argv = agent_argv(log, state, script)
    async with spawn_agent_process(client, argv[0], *argv[1:]) as (conn, _process):  # type: ignore[arg-type]  # a client of the methods the bridge calls
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        session = await conn.new_session(cwd=str(work), mcp_servers=[])
        sid = session.session_id
        await client.wait_for_lists(1)
        assert client.command_lists() == [["review", "test"]]
        first = next(u for u in client.updates if u.session_update == "available_commands_update")
        assert first.available_commands[0].description == "Review the current diff"
        assert first.available_commands[0].input.root.hint == "<focus>"
        # a change in a run follows as another update
        reply = await conn.prompt(session_id=sid, prompt=[text_block("Go")])
        assert reply.stop_reason == "end_turn"
        assert client.command_lists() == [["review", "test"], ["deploy"]]
    records = check_schema(log)
    assert _around_reply(records, "session/new") == ([], [["review", "test"]])

    # a new bridge on the same journal: session/load replays the change, then sends the
    # list the provider names now (the script's, in a new provider session)
    client2 = Client()
    argv = agent_argv(log2, state, script)
    async with spawn_agent_process(client2, argv[0], *argv[1:]) as (conn, _process):  # type: ignore[arg-type]
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        await conn.load_session(cwd=str(work), session_id=sid, mcp_servers=[])
        await client2.wait_for_lists(2)
        assert client2.command_lists() == [["deploy"], ["review", "test"]]
    # the replayed change before the reply, the current list after it
    assert _around_reply(check_schema(log2), "session/load") == ([["deploy"]], [["review", "test"]])


async def test_no_list_when_the_provider_names_none(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"type": "text", "text": "Done."}]}))
    log = tmp_path / "acp.log"
    work = tmp_path / "work"
    work.mkdir()
    client = Client()
    argv = agent_argv(log, tmp_path / "state", script)
    async with spawn_agent_process(client, argv[0], *argv[1:]) as (conn, _process):  # type: ignore[arg-type]
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        session = await conn.new_session(cwd=str(work), mcp_servers=[])
        reply = await conn.prompt(session_id=session.session_id, prompt=[text_block("Go")])
        assert reply.stop_reason == "end_turn"
    assert client.command_lists() == []
    assert _around_reply(check_schema(log), "session/new") == ([], [])


SETTINGS: dict[str, Any] = {
    "model": {"current": "small", "available": [{"id": "small"}, {"id": "large"}]},
    "mode": {"current": "ask", "available": [{"id": "ask", "name": "Ask"}, {"id": "auto"}]},
}


async def test_the_provider_s_modes_are_acp_modes(tmp_path: Path) -> None:
    """A provider that names its modes (``session/settings``) offers them as ACP
    ``modes``; ``session/set_mode`` switches them live (``session/configure``) and the
    client gets ``current_mode_update``, as it does when the provider switches by itself
    in a run (``settings.updated``)."""
    switch = {"type": "settings.updated", "model": "small", "mode": "ask"}
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "settings": SETTINGS,
                "steps": [{"type": "emit", "payloads": [switch]}, {"type": "text", "text": "ok"}],
            }
        )
    )
    log = tmp_path / "acp.log"
    work = tmp_path / "work"
    work.mkdir()
    client = Client()
    argv = agent_argv(log, tmp_path / "state", script)
    async with spawn_agent_process(client, argv[0], *argv[1:]) as (conn, _process):  # type: ignore[arg-type]
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        session = await conn.new_session(cwd=str(work), mcp_servers=[])
        sid = session.session_id
        assert session.modes is not None
        assert session.modes.current_mode_id == "ask"
        assert [(m.id, m.name) for m in session.modes.available_modes] == [
            ("ask", "Ask"),
            ("auto", "auto"),
        ]
        await conn.set_session_mode(mode_id="auto", session_id=sid)
        with pytest.raises(acp.RequestError) as unknown:
            await conn.set_session_mode(mode_id="huge", session_id=sid)
        assert unknown.value.code == -32602
        reply = await conn.prompt(session_id=sid, prompt=[text_block("Go")])
        assert reply.stop_reason == "end_turn"
        modes = [
            u.current_mode_id for u in client.updates if u.session_update == "current_mode_update"
        ]
        assert modes == ["auto", "ask"]
        loaded = await conn.load_session(cwd=str(work), session_id=sid, mcp_servers=[])
        assert loaded is not None and loaded.modes is not None
        # what the provider names now: the scripted provider's emitted switch is an event
        # only, its settings keep what session/set_mode chose
        assert loaded.modes.current_mode_id == "auto"
    records = check_schema(log)
    sent = [
        r["msg"]["params"]["update"]["currentModeId"]
        for r in records
        if r["dir"] == "<-"
        and r["msg"].get("method") == "session/update"
        and r["msg"]["params"]["update"]["sessionUpdate"] == "current_mode_update"
    ]
    assert sent == ["auto", "ask"]  # the replay of the load sent none


async def test_the_provider_s_models_are_the_model_config_option(tmp_path: Path) -> None:
    """A provider that names its models (``session/settings``) offers them as the
    ``model`` config option (category ``model``: ACP's schema has no ``models`` nor
    ``session/set_model`` in the version this bridge is checked against);
    ``session/set_config_option model`` switches live (``session/configure``) and the
    client gets ``config_option_update`` with the model now current; a model not offered
    is -32602."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"settings": SETTINGS, "steps": [{"type": "echo"}]}))
    log = tmp_path / "acp.log"
    work = tmp_path / "work"
    work.mkdir()
    client = Client()
    argv = agent_argv(log, tmp_path / "state", script)
    async with spawn_agent_process(client, argv[0], *argv[1:]) as (conn, _process):  # type: ignore[arg-type]
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        session = await conn.new_session(cwd=str(work), mcp_servers=[])
        sid = session.session_id
        models = [o for o in session.config_options or [] if o.id == "model"]
        assert len(models) == 1
        model = models[0]
        assert model.current_value == "small" and model.category == "model"
        assert [o.value for o in model.options] == ["small", "large"]
        changed = await conn.set_config_option(config_id="model", session_id=sid, value="large")
        now = next(o for o in changed.config_options if o.id == "model")
        assert now.current_value == "large"
        with pytest.raises(acp.RequestError) as unknown:
            await conn.set_config_option(config_id="model", session_id=sid, value="huge")
        assert unknown.value.code == -32602
        told = [u for u in client.updates if u.session_update == "config_option_update"]
        assert told, client.updates
        last = next(o for o in told[-1].config_options if o.id == "model")
        assert last.current_value == "large"
        reply = await conn.prompt(session_id=sid, prompt=[text_block("Go")])
        assert reply.stop_reason == "end_turn"
    check_schema(log)
