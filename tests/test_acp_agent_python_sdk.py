"""``agent-bridge acp`` driven by the ACP Python SDK's client (``agent-client-protocol``,
a pinned dev extra), over real pipes, with the scripted provider.

The scenario of tests/acp_agent_support.py: new session, a prompt that streams and asks
an approval (allowed), one denied, a cancel mid-turn, then a restart of the bridge on the
same journal: list, load (the history replayed before the reply), set a config option and
prompt again.  Every message is validated against ACP's schema.json; errors for bad input
are ACP errors and the agent keeps serving.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from acp_agent_support import (
    ALLOWED,
    BRIDGE,
    DENIED,
    FIRST_TEXT,
    agent_argv,
    check_schema,
    updates_of,
    write_script,
)

acp = pytest.importorskip("acp", reason="LOUD SKIP: agent-client-protocol is not installed")
from acp import (  # noqa: E402
    RequestError,
    embedded_text_resource,
    image_block,
    resource_block,
    resource_link_block,
    spawn_agent_process,
    text_block,
)
from acp.schema import (  # noqa: E402
    AllowedOutcome,
    AuthCapabilities,
    ClientCapabilities,
    DeniedOutcome,
    RequestPermissionResponse,
)

pytestmark = pytest.mark.timeout(90)


class Recorder:
    """An ACP client that records updates and answers permissions from a queue of
    decisions (``None``: never answer, until :attr:`release` is set)."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, Any]] = []
        self.decisions: list[str | None] = []
        self.asked: list[Any] = []
        self.release = asyncio.Event()
        self.asked_event = asyncio.Event()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        self.asked.append((tool_call, options))
        self.asked_event.set()
        decision = self.decisions.pop(0) if self.decisions else None
        if decision is None:
            await self.release.wait()
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=decision)
        )

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    def texts(self) -> str:
        return "".join(
            u.content.text
            for _, u in self.updates
            if getattr(u, "session_update", None) == "agent_message_chunk"
        )

    def kinds(self) -> list[str]:
        return [u.session_update for _, u in self.updates]


async def test_python_sdk_client_drives_the_scenario(tmp_path: Path) -> None:
    script = write_script(tmp_path)
    state = tmp_path / "state"
    log = tmp_path / "acp.log"
    work = tmp_path / "work"
    work.mkdir()
    client = Recorder()
    argv = agent_argv(log, state, script)
    async with spawn_agent_process(client, argv[0], *argv[1:]) as (conn, process):  # type: ignore[arg-type]  # a client of the methods the bridge calls
        init = await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        assert init.protocol_version == 1
        assert init.agent_capabilities is not None and init.auth_methods is not None
        assert init.agent_capabilities.load_session is True
        caps = init.agent_capabilities.session_capabilities
        assert caps is not None
        assert caps.list is not None and caps.resume is not None and caps.close is not None
        # the agent method is always there; no terminal method for this client
        assert [m.id for m in init.auth_methods] == ["provider-credentials"]
        await conn.authenticate(method_id="provider-credentials")  # scripted: available
        with pytest.raises(RequestError) as unknown:
            await conn.authenticate(method_id="nope")
        assert unknown.value.code == -32602
        session = await conn.new_session(cwd=str(work), mcp_servers=[])
        sid = session.session_id
        assert any(o.id == "provider" for o in session.config_options or [])

        # 1: streams, asks; allowed
        client.decisions = ["allow_once"]
        reply = await conn.prompt(session_id=sid, prompt=[text_block("Greet")])
        assert reply.stop_reason == "end_turn"
        text = client.texts()
        assert text.startswith(FIRST_TEXT) and text.endswith(ALLOWED), text
        kinds = client.kinds()
        for kind in (
            "agent_message_chunk",
            "agent_thought_chunk",
            "tool_call",
            "tool_call_update",
            "plan",
            "usage_update",
        ):
            assert kind in kinds, (kind, kinds)
        # the first prompt titles the session (ACP's session/new has no title)
        infos = [u for _, u in client.updates if u.session_update == "session_info_update"]
        assert [u.title for u in infos] == ["Greet"]
        assert client.updates[0][1].session_update == "session_info_update"
        tool_call, options = client.asked[0]
        assert tool_call.title == "Write hello.txt"
        assert [o.option_id for o in options] == ["allow_once", "allow_always", "reject_once"]
        edit = next(u for _, u in client.updates if u.session_update == "tool_call")
        assert edit.kind == "edit" and edit.locations[0].path == "/tmp/hello.txt"
        assert edit.content[0].type == "diff" and edit.content[0].new_text == "hello"

        # 2: denied
        client.updates.clear()
        client.decisions = ["reject_once"]
        reply = await conn.prompt(session_id=sid, prompt=[text_block("Again")])
        assert reply.stop_reason == "end_turn"
        assert client.texts() == DENIED
        assert "session_info_update" not in client.kinds()  # titled once

        # 3: cancelled mid-turn, while the permission is unanswered
        client.decisions = [None]
        client.asked_event.clear()
        prompt = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block("Stop")]))
        await asyncio.wait_for(client.asked_event.wait(), 20)
        await conn.cancel(session_id=sid)
        reply = await asyncio.wait_for(prompt, 20)
        assert reply.stop_reason == "cancelled"
        client.release.set()

        # bad input: a clear error, and the agent keeps serving
        with pytest.raises(RequestError) as bad:
            await conn.prompt(session_id="ses_nope", prompt=[text_block("x")])
        assert bad.value.code == -32002
        assert bad.value.data is not None and bad.value.data["code"] == "session_not_found"
        with pytest.raises(RequestError) as bad:
            await conn.set_config_option(config_id="nope", session_id=sid, value="x")
        assert bad.value.code == -32602
        listed = await conn.list_sessions()
        assert [s.session_id for s in listed.sessions] == [sid]
    assert process.returncode is not None

    # a new bridge process on the same journal: list, load, config option, prompt
    client2 = Recorder()
    log2 = tmp_path / "acp2.log"
    argv = agent_argv(log2, state, script)
    async with spawn_agent_process(client2, argv[0], *argv[1:]) as (conn, _process):  # type: ignore[arg-type]  # a client of the methods the bridge calls
        init = await conn.initialize(
            protocol_version=1,
            client_capabilities=ClientCapabilities(auth=AuthCapabilities(terminal=True)),
        )
        assert init.auth_methods is not None
        terminal = [m for m in init.auth_methods if getattr(m, "type", None) == "terminal"]
        assert [(m.id, m.args) for m in terminal] == [("provider-login", ["--login"])]
        listed = await conn.list_sessions(cwd=str(work))
        assert [s.session_id for s in listed.sessions] == [sid]
        assert listed.sessions[0].cwd == str(work)
        assert listed.sessions[0].title == "Greet"  # from the journal, in a new bridge
        loaded = await conn.load_session(cwd=str(work), session_id=sid, mcp_servers=[])
        # the history was replayed before the reply: the three prompts and the replies
        users = [
            u.content.text for _, u in client2.updates if u.session_update == "user_message_chunk"
        ]
        assert users == ["Greet", "Again", "Stop"]
        assert FIRST_TEXT in client2.texts() and DENIED in client2.texts()
        assert loaded.config_options
        changed = await conn.set_config_option(
            config_id="provider", session_id=sid, value="scripted"
        )
        assert changed.config_options[0].current_value == "scripted"
        client2.updates.clear()
        reply = await conn.prompt(session_id=sid, prompt=[text_block("after restart")])
        assert reply.stop_reason == "end_turn"
        assert client2.texts() == "Echo: after restart"
        await conn.close_session(session_id=sid)

    for path in (log, log2):
        records = check_schema(path)
        assert not any("unparsed" in r["msg"] for r in records)
    assert updates_of(check_schema(log2))[0]["sessionUpdate"] == "user_message_chunk"


async def test_a_title_comes_from_the_prompt_s_text_not_its_resources(tmp_path: Path) -> None:
    log = tmp_path / "acp.log"
    script = tmp_path / "echo.json"
    script.write_text(json.dumps({"runs": [{"steps": [{"type": "echo"}]}]}))
    argv = agent_argv(log, tmp_path / "state", script)
    client = Recorder()
    async with spawn_agent_process(client, argv[0], *argv[1:]) as (conn, _process):  # type: ignore[arg-type]  # a client of the methods the bridge calls
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        (tmp_path / "main.py").write_text("print()\n")
        link = resource_link_block(name="main.py", uri=(tmp_path / "main.py").as_uri())
        reply = await conn.prompt(
            session_id=session.session_id,
            prompt=[link, text_block("  Explain\tthis file\nline by line")],
        )
        assert reply.stop_reason == "end_turn"
        infos = [u for _, u in client.updates if u.session_update == "session_info_update"]
        assert [u.title for u in infos] == ["Explain this file"]
        listed = await conn.list_sessions()
        assert [s.title for s in listed.sessions] == ["Explain this file"]
    check_schema(log)


async def test_client_gone_stops_runs_and_the_bridge(tmp_path: Path) -> None:
    """A client that goes away mid-run: the run ends and the bridge exits promptly."""
    script = tmp_path / "wait.json"
    script.write_text(json.dumps({"steps": [{"type": "waitForInterrupt"}]}))
    process = await asyncio.create_subprocess_exec(
        BRIDGE,
        "acp",
        "--provider",
        "scripted",
        "--state-dir",
        str(tmp_path / "state"),
        "-o",
        f"script={script}",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None
    lines = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": str(tmp_path)}},
    ]
    for line in lines:
        process.stdin.write(json.dumps(line).encode() + b"\n")
    await process.stdin.drain()
    replies = [json.loads(await process.stdout.readline()) for _ in lines]
    sid = replies[1]["result"]["sessionId"]
    prompt = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "session/prompt",
        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "wait"}]},
    }
    process.stdin.write(json.dumps(prompt).encode() + b"\n")
    await process.stdin.drain()
    await asyncio.sleep(0.5)
    process.stdin.close()
    assert await asyncio.wait_for(process.wait(), 20) == 0
    # the journal says the run ended and the session closed
    from agent_bridge.journal import open_history

    history = open_history(str(tmp_path / "state"))
    await history.start(lambda: None)
    try:
        record = await history.load_session(sid)
        assert record is not None and record.state == "closed"
    finally:
        await history.aclose()


async def test_bad_input_gets_clear_errors_and_the_agent_keeps_serving(tmp_path: Path) -> None:
    script = write_script(tmp_path)
    log = tmp_path / "acp.log"
    argv = agent_argv(log, tmp_path / "state", script)
    process = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert process.stdin is not None and process.stdout is not None

    async def exchange(line: bytes) -> dict[str, Any]:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(line + b"\n")
        await process.stdin.drain()
        reply: dict[str, Any] = json.loads(await asyncio.wait_for(process.stdout.readline(), 20))
        return reply

    def request(id: int, method: str, params: Any) -> bytes:
        return json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).encode()

    early = await exchange(request(1, "session/new", {"cwd": str(tmp_path)}))
    assert early["error"]["code"] == -32600
    init = await exchange(request(2, "initialize", {"protocolVersion": 99}))
    assert init["result"]["protocolVersion"] == 1  # ours, for a version we do not know
    assert (await exchange(b"{not json"))["error"]["code"] == -32700
    assert (await exchange(request(3, "session/fly", {})))["error"]["code"] == -32601
    bad = await exchange(request(4, "session/new", {"cwd": 7}))
    assert bad["error"]["code"] == -32602
    relative = await exchange(request(5, "session/new", {"cwd": "relative/dir"}))
    assert relative["error"]["code"] == -32602
    assert relative["error"]["data"]["code"] == "invalid_params"
    again = await exchange(request(6, "initialize", {"protocolVersion": 1}))
    assert again["error"]["code"] == -32600
    created = await exchange(request(7, "session/new", {"cwd": str(tmp_path), "mcpServers": []}))
    assert created["result"]["sessionId"].startswith("ses_")
    for reply in (early, bad, relative, again, created):
        assert "traceback" not in json.dumps(reply).lower()
    process.stdin.close()
    assert await asyncio.wait_for(process.wait(), 20) == 0
    check_schema(log)


#: a real 1x1 PNG, base64
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


async def test_images_resources_and_links_reach_the_provider_and_history(tmp_path: Path) -> None:
    """An image, a resource link and an embedded resource pass through to the scripted
    provider (its ``received`` step replies with what arrived), are refused when they are
    not acceptable (-32602 naming the block, no turn), and session/load in a new bridge
    replays the prompt's text, link and resource."""
    import base64
    import hashlib

    log = tmp_path / "acp.log"
    script = tmp_path / "received.json"
    script.write_text(json.dumps({"steps": [{"type": "received"}]}))
    work = tmp_path / "work"
    work.mkdir()
    (work / "main.py").write_text("print()\n")
    (tmp_path / "secret.py").write_text("x\n")
    argv = agent_argv(log, tmp_path / "state", script)
    client = Recorder()
    prompt: list[Any] = [  # the SDK's block helpers are typed as BaseModel
        text_block("What is wrong?"),
        image_block(PNG, "image/png"),
        resource_link_block(name="main.py", uri=(work / "main.py").as_uri()),
        resource_block(embedded_text_resource("untitled:1", "x = 1", mime_type="text/x-python")),
    ]
    async with spawn_agent_process(client, argv[0], *argv[1:]) as (conn, _process):  # type: ignore[arg-type]  # a client of the methods the bridge calls
        init = await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        assert init.agent_capabilities is not None
        prompts = init.agent_capabilities.prompt_capabilities
        assert prompts is not None
        assert (prompts.image, prompts.audio, prompts.embedded_context) == (True, False, True)
        session = await conn.new_session(cwd=str(work), mcp_servers=[])
        sid = session.session_id
        reply = await conn.prompt(session_id=sid, prompt=prompt)
        assert reply.stop_reason == "end_turn"
        data = base64.b64decode(PNG)
        real = os.path.realpath(work)
        assert json.loads(client.texts()) == [
            {"type": "text", "text": "What is wrong?"},
            {
                "type": "image",
                "mimeType": "image/png",
                "size": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
            },
            {"type": "file", "path": f"{real}/main.py"},
            {"type": "resource", "text": "x = 1", "uri": "untitled:1", "mimeType": "text/x-python"},
        ]
        for bad, field in [
            (
                resource_link_block(name="s", uri=(tmp_path / "secret.py").as_uri()),
                "input.content.1",
            ),
            (image_block("not base64!", "image/png"), "input.content.1"),
            (image_block(PNG, "image/bmp"), "input.content.1"),
            (resource_link_block(name="m", uri=(work / "missing.py").as_uri()), "input.content.1"),
        ]:
            with pytest.raises(RequestError) as refused:
                await conn.prompt(session_id=sid, prompt=[text_block("x"), bad])  # type: ignore[list-item]
            assert refused.value.code == -32602, bad
            assert refused.value.data is not None
            assert refused.value.data["details"]["field"] == field
    check_schema(log)

    log2 = tmp_path / "acp2.log"
    client2 = Recorder()
    argv = agent_argv(log2, tmp_path / "state", script)
    async with spawn_agent_process(client2, argv[0], *argv[1:]) as (conn, _process):  # type: ignore[arg-type]  # a client of the methods the bridge calls
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        await conn.load_session(session_id=sid, cwd=str(work), mcp_servers=[])
        asked = [u.content for _, u in client2.updates if u.session_update == "user_message_chunk"]
        assert [c.type for c in asked] == ["text", "resource_link", "resource"]
        assert asked[1].uri == (work / "main.py").resolve().as_uri()
        assert asked[2].resource.text == "x = 1"
    check_schema(log2)


async def test_malformed_prompt_blocks_are_invalid_params(tmp_path: Path) -> None:
    script = tmp_path / "echo.json"
    script.write_text(json.dumps({"steps": [{"type": "echo"}]}))
    log = tmp_path / "acp.log"
    argv = agent_argv(log, tmp_path / "state", script)
    process = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert process.stdin is not None and process.stdout is not None

    async def exchange(id: int, method: str, params: Any) -> dict[str, Any]:
        assert process.stdin is not None and process.stdout is not None
        line = json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        process.stdin.write(line.encode() + b"\n")
        await process.stdin.drain()
        while True:
            reply: dict[str, Any] = json.loads(
                await asyncio.wait_for(process.stdout.readline(), 20)
            )
            if reply.get("id") == id:
                return reply

    await exchange(1, "initialize", {"protocolVersion": 1})
    created = await exchange(2, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
    sid = created["result"]["sessionId"]
    for n, block in enumerate(
        [
            {"text": "no type"},
            {"type": "video", "data": "x"},
            {"type": "text", "text": 5},
            {"type": "image", "data": PNG},
            {"type": "resource_link", "uri": "file:///x"},
            {"type": "resource", "resource": {"uri": "untitled:1"}},
            {"type": "audio", "data": "AA==", "mimeType": "audio/wav"},
        ],
        start=3,
    ):
        reply = await exchange(n, "session/prompt", {"sessionId": sid, "prompt": [block]})
        assert reply["error"]["code"] == -32602, (block, reply)
    ok = await exchange(
        20, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}
    )
    assert ok["result"]["stopReason"] == "end_turn"
    process.stdin.close()
    assert await asyncio.wait_for(process.wait(), 20) == 0
    check_schema(log)
