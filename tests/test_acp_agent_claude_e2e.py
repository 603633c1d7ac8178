"""``agent-bridge acp --provider claude-code`` with the real, pinned Claude Code CLI
against the Anthropic stand-in on 127.0.0.1, driven by the ACP Python SDK client:

a prompt whose Bash call the client allows (the file is created, the tool call streams
as ``tool_call`` / ``tool_call_update``), ``session/set_config_option model haiku`` between
runs (the next model request asks for a Haiku model) and ``session/set_mode`` to a
permission mode, then a second prompt.  Every message is validated against ACP's
schema.json.  Without the CLI this is skipped loudly; in CI it fails.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp_agent_support import BRIDGE, TAP, check_schema
from provider_clis import require_cli
from standins.anthropic_server import AnthropicStandIn, Text, ToolUse

acp = pytest.importorskip("acp", reason="LOUD SKIP: agent-client-protocol is not installed")
from acp import (  # noqa: E402
    embedded_text_resource,
    image_block,
    resource_block,
    resource_link_block,
    spawn_agent_process,
    text_block,
)
from acp.schema import AllowedOutcome, RequestPermissionResponse  # noqa: E402

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]


@pytest.fixture
def standin() -> Iterator[AnthropicStandIn]:
    with AnthropicStandIn() as server:
        yield server


class Client:
    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.asked: list[Any] = []

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        self.asked.append(tool_call)
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id="allow_once")
        )

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    def text(self) -> str:
        return "".join(
            u.content.text for u in self.updates if u.session_update == "agent_message_chunk"
        )


def private_claude(tmp_path: Path, standin: AnthropicStandIn) -> tuple[dict[str, str], list[str]]:
    """The environment (the real CLI, a private home, config and temp directory under
    ``tmp_path``, the stand-in as its API) and the argv of ``agent-bridge acp --provider
    claude-code`` behind the tap (logging to ``tmp_path/acp.log``); makes ``tmp_path/work``.
    Skips loudly without the CLI (fails in CI)."""
    cli = require_cli("claude")
    for name in ("home", "config", "tmp", "work"):
        (tmp_path / name).mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "AGENT_BRIDGE_CLAUDE_PATH": cli,
        "HOME": str(tmp_path / "home"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "config"),
        "TMPDIR": str(tmp_path / "tmp"),
        "ANTHROPIC_BASE_URL": standin.base_url,
        "ANTHROPIC_API_KEY": "dummy",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }
    argv = [sys.executable, str(TAP), "--log", str(tmp_path / "acp.log"), "--", BRIDGE, "acp",
            "--provider", "claude-code", "--state-dir", str(tmp_path / "state")]  # fmt: skip
    return env, argv


async def test_claude_code_behind_the_acp_agent(tmp_path: Path, standin: AnthropicStandIn) -> None:
    env, argv = private_claude(tmp_path, standin)
    work, log = tmp_path / "work", tmp_path / "acp.log"
    standin.push(ToolUse("touch approved.txt"), Text("Done."), Text("Second answer."))
    client = Client()
    async with spawn_agent_process(client, argv[0], *argv[1:], env=env) as (conn, _process):  # type: ignore[arg-type]  # a client of the methods the bridge calls
        await conn.initialize(protocol_version=1)
        session = await conn.new_session(cwd=str(work), mcp_servers=[])
        sid = session.session_id
        ids = [o.id for o in session.config_options or []]
        assert ids[:2] == ["provider", "model"] and "permissionMode" in ids
        assert session.modes is not None and session.modes.current_mode_id == "default"

        reply = await conn.prompt(session_id=sid, prompt=[text_block("create the file")])
        assert reply.stop_reason == "end_turn"
        assert (work / "approved.txt").exists()
        assert client.asked and client.asked[0].raw_input["command"] == "touch approved.txt"
        kinds = [u.session_update for u in client.updates]
        assert "tool_call" in kinds and "tool_call_update" in kinds
        assert client.text().endswith("Done.")
        first_model = standin.model_requests()[-1].body.get("model", "")
        assert "haiku" not in first_model

        changed = await conn.set_config_option(config_id="model", session_id=sid, value="haiku")
        model = next(o for o in changed.config_options if o.id == "model")
        assert model.current_value == "haiku"
        await conn.set_session_mode(session_id=sid, mode_id="acceptEdits")
        told = [u for u in client.updates if u.session_update == "config_option_update"]
        mode = next(o for o in told[-1].config_options if o.id == "permissionMode")
        assert mode.current_value == "acceptEdits"
        client.updates.clear()
        reply = await conn.prompt(session_id=sid, prompt=[text_block("and now?")])
        assert reply.stop_reason == "end_turn"
        assert client.text() == "Second answer."
        assert "haiku" in standin.model_requests()[-1].body.get("model", "")
    check_schema(log)


async def test_provider_switch_before_the_first_prompt(
    tmp_path: Path, standin: AnthropicStandIn
) -> None:
    """The ``provider`` config option moves a session that has had no prompt to another
    provider (same session id); after a prompt it is refused with -32602."""
    cli = require_cli("claude")
    for name in ("home", "config", "tmp"):
        (tmp_path / name).mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "AGENT_BRIDGE_CLAUDE_PATH": cli,
        "HOME": str(tmp_path / "home"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "config"),
        "TMPDIR": str(tmp_path / "tmp"),
        "ANTHROPIC_BASE_URL": standin.base_url,
        "ANTHROPIC_API_KEY": "dummy",
    }
    log = tmp_path / "acp.log"
    argv = [sys.executable, str(TAP), "--log", str(log), "--", BRIDGE, "acp",
            "--state-dir", str(tmp_path / "state")]  # fmt: skip
    client = Client()
    async with spawn_agent_process(client, argv[0], *argv[1:], env=env) as (conn, _process):  # type: ignore[arg-type]  # a client of the methods the bridge calls
        await conn.initialize(protocol_version=1)
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        sid = session.session_id
        assert session.config_options is not None
        assert session.config_options[0].current_value == "claude-code"  # the default
        changed = await conn.set_config_option(
            config_id="provider", session_id=sid, value="scripted"
        )
        assert changed.config_options[0].current_value == "scripted"
        reply = await conn.prompt(session_id=sid, prompt=[text_block("hi")])
        assert reply.stop_reason == "end_turn"
        assert client.text() == "You said: hi"  # the scripted provider's default echo
        with pytest.raises(acp.RequestError) as refused:
            await conn.set_config_option(config_id="provider", session_id=sid, value="claude-code")
        assert refused.value.code == -32602
        listed = await conn.list_sessions()
        assert [s.session_id for s in listed.sessions] == [sid]
    assert standin.model_requests() == []
    check_schema(log)


async def test_claude_codes_commands_reach_an_acp_client_and_one_runs(
    tmp_path: Path, standin: AnthropicStandIn
) -> None:
    """The real CLI's slash commands (its initialize answer: built-in ones and the
    workspace's custom command) reach the ACP client as ``available_commands_update``
    right after ``session/new``, with description and input hint; a prompt
    ``/greet Ada`` runs the custom command: the stand-in's request holds the command
    file's text with the argument in place.  Every message fits ACP's schema."""
    env, argv = private_claude(tmp_path, standin)
    work, log = tmp_path / "work", tmp_path / "acp.log"
    commands = work / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "greet.md").write_text(
        "---\ndescription: Greet someone by name\nargument-hint: <name>\n---\n"
        "Say the word PINEAPPLE-42 to $ARGUMENTS.\n"
    )
    standin.push(Text("PINEAPPLE-42, Ada."))
    client = Client()
    async with spawn_agent_process(client, argv[0], *argv[1:], env=env) as (conn, _process):  # type: ignore[arg-type]  # a client of the methods the bridge calls
        await conn.initialize(protocol_version=1)
        session = await conn.new_session(cwd=str(work), mcp_servers=[])
        for _ in range(100):  # queued right behind the reply
            listed = [u for u in client.updates if u.session_update == "available_commands_update"]
            if listed:
                break
            await anyio.sleep(0.05)
        assert listed, client.updates
        by_name = {c.name: c for c in listed[0].available_commands}
        assert by_name["greet"].description.startswith("Greet someone by name")
        hint = by_name["greet"].input
        assert hint is not None and hint.root.hint == "<name>"
        assert "compact" in by_name or "init" in by_name  # the CLI's built-in ones too
        reply = await conn.prompt(session_id=session.session_id, prompt=[text_block("/greet Ada")])
        assert reply.stop_reason == "end_turn"
        assert client.text() == "PINEAPPLE-42, Ada."
    (turn,) = standin.model_requests()
    seen = "\n".join(
        str(b.get("text", "")) if isinstance(b, dict) else str(b)
        for m in turn.body.get("messages") or []
        for b in (m["content"] if isinstance(m.get("content"), list) else [m.get("content")])
    )
    assert "Say the word PINEAPPLE-42 to Ada." in seen
    check_schema(log)


#: a real 1x1 PNG, base64
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


async def test_an_acp_clients_image_link_and_resource_reach_the_real_cli(
    tmp_path: Path, standin: AnthropicStandIn
) -> None:
    """An ACP client's image, resource link and embedded resource, sent to
    ``agent-bridge acp`` in front of the real Claude Code, arrive in the stand-in's model
    request as Messages API content: the image as a base64 image block, the link as an
    ``@`` mention of the workspace file, the resource as context text.  Every message
    fits ACP's schema."""
    env, argv = private_claude(tmp_path, standin)
    work, log = tmp_path / "work", tmp_path / "acp.log"
    (work / "main.py").write_text("print('hi')\n")
    standin.push(Text("I see it."))
    client = Client()
    prompt: list[Any] = [  # the SDK's block helpers are typed as BaseModel
        text_block("What is in this picture?"),
        image_block(PNG, "image/png"),
        resource_link_block(name="main.py", uri=(work / "main.py").as_uri()),
        resource_block(embedded_text_resource("untitled:1", "x = 1")),
    ]
    async with spawn_agent_process(client, argv[0], *argv[1:], env=env) as (conn, _process):  # type: ignore[arg-type]  # a client of the methods the bridge calls
        init = await conn.initialize(protocol_version=1)
        assert init.agent_capabilities is not None
        prompts = init.agent_capabilities.prompt_capabilities
        assert prompts is not None and prompts.image and prompts.embedded_context
        session = await conn.new_session(cwd=str(work), mcp_servers=[])
        reply = await conn.prompt(session_id=session.session_id, prompt=prompt)
        assert reply.stop_reason == "end_turn"
        assert client.text() == "I see it."
    (turn,) = standin.model_requests()
    user = [m for m in turn.body["messages"] if m.get("role") == "user"][-1]
    blocks = [b for b in user["content"] if isinstance(b, dict)]
    images = [b["source"] for b in blocks if b.get("type") == "image"]
    assert images == [{"type": "base64", "media_type": "image/png", "data": PNG}]
    texts = [b.get("text", "") for b in blocks if b.get("type") == "text"]
    assert "What is in this picture?" in texts
    assert f"@{os.path.realpath(work / 'main.py')}" in texts
    assert '<context ref="untitled:1">\nx = 1\n</context>' in texts
    check_schema(log)
