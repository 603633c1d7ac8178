"""End to end: an ACP client picks up, through ``agent-bridge acp``, a conversation
started in the terminal.

The real ``claude -p`` (against the stand-in) makes a session alone; the ACP client's
``session/list`` for that directory shows it (under the id its bridge session will get),
``session/load`` continues it (its earlier turn replayed as ``user_message_chunk`` and
``agent_message_chunk``), the next prompt's model request carries the terminal's turn, and
a second ``session/list`` shows it once, as the bridge session.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp_agent_support import BRIDGE
from provider_clis import require_cli
from standins.anthropic_server import AnthropicStandIn, Text, last_user_text
from test_claude_native_e2e import private_env

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]

acp = pytest.importorskip("acp", reason="LOUD SKIP: agent-client-protocol is not installed")
from acp import spawn_agent_process, text_block  # noqa: E402


class Client:
    def __init__(self) -> None:
        self.updates: list[Any] = []

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("no permission expected")

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    def texts(self, kind: str) -> str:
        return "".join(
            u.content.text
            for u in self.updates
            if u.session_update == kind and getattr(u.content, "text", None)
        )


async def test_acp_client_continues_a_terminal_session(tmp_path: Path) -> None:
    cli = require_cli("claude")
    work = tmp_path / "work"
    with AnthropicStandIn([Text("Noted: pelican."), Text("It was pelican.")]) as server:
        env = private_env(tmp_path, server.base_url)
        done = await anyio.run_process(
            [cli, "-p", "remember the word pelican"],
            cwd=work,
            env={"PATH": "/usr/bin:/bin", **env},
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        argv = [BRIDGE, "acp", "--provider", "claude-code", "--state-dir", str(tmp_path / "s")]
        client = Client()
        full_env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            **env,
            "AGENT_BRIDGE_CLAUDE_PATH": cli,
        }
        async with spawn_agent_process(client, *argv, env=full_env) as (conn, _process):  # type: ignore[arg-type]  # a client of the methods the bridge calls
            await conn.initialize(protocol_version=1)
            listed = await conn.list_sessions(cwd=str(work))
            (entry,) = listed.sessions
            assert entry.title == "remember the word pelican"
            sid = entry.session_id
            await conn.load_session(cwd=str(work), session_id=sid, mcp_servers=[])
            assert "remember the word pelican" in client.texts("user_message_chunk")
            assert "Noted: pelican." in client.texts("agent_message_chunk")
            client.updates.clear()
            reply = await conn.prompt(session_id=sid, prompt=[text_block("what was the word?")])
            assert reply.stop_reason == "end_turn"
            assert client.texts("agent_message_chunk") == "It was pelican."
            request = server.model_requests()[-1]
            assert last_user_text(request.body) == "what was the word?"
            texts = [
                b.get("text", "") if isinstance(b, dict) else b
                for m in request.body["messages"]
                for b in (m["content"] if isinstance(m["content"], list) else [m["content"]])
            ]
            assert any("remember the word pelican" in t for t in texts)
            again = await conn.list_sessions(cwd=str(work))
            assert [s.session_id for s in again.sessions] == [sid]


async def test_codex_threads_are_listed_once(tmp_path: Path) -> None:
    """``agent-bridge acp --provider codex``: a thread made by ``codex exec`` is listed as
    a native entry, loaded (continued) and prompted; a session made through the bridge is
    prompted and left open; each is then listed once, as its bridge session."""
    from standins.responses_server import ResponsesStandIn, reply, text
    from test_codex_native_e2e import private_env as codex_env

    cli = require_cli("codex")
    env = codex_env(tmp_path)
    work = tmp_path / "work"
    with ResponsesStandIn() as server:
        server.script(
            reply(text("Noted: pelican.")), reply(text("It was pelican.")), reply(text("Hello."))
        )
        base_url = f'model_providers.stub.base_url="{server.base_url}"'
        done = await anyio.run_process(
            [cli, "exec", "--skip-git-repo-check", "-c", base_url, "remember pelican"],
            stdin=None,
            cwd=work,
            env={"PATH": "/usr/bin:/bin", **env},
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        override = "config=" + json.dumps([base_url])
        argv = [BRIDGE, "acp", "--provider", "codex", "--state-dir", str(tmp_path / "s")]
        argv += ["--option", override]
        full_env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            **env,
            "AGENT_BRIDGE_CODEX_PATH": cli,
        }
        client = Client()
        async with spawn_agent_process(client, *argv, env=full_env) as (conn, _process):  # type: ignore[arg-type]  # a client of the methods the bridge calls
            await conn.initialize(protocol_version=1)
            listed = await conn.list_sessions(cwd=str(work))
            (entry,) = listed.sessions
            native = entry.session_id
            await conn.load_session(cwd=str(work), session_id=native, mcp_servers=[])
            reply_ = await conn.prompt(session_id=native, prompt=[text_block("the word?")])
            assert reply_.stop_reason == "end_turn"
            listed = await conn.list_sessions(cwd=str(work))
            assert [s.session_id for s in listed.sessions] == [native]
            created = await conn.new_session(cwd=str(work), mcp_servers=[])
            sid = created.session_id
            reply_ = await conn.prompt(session_id=sid, prompt=[text_block("hello")])
            assert reply_.stop_reason == "end_turn"
            listed = await conn.list_sessions(cwd=str(work))
            assert sorted(s.session_id for s in listed.sessions) == sorted([native, sid])
        async with spawn_agent_process(client, *argv, env=full_env) as (conn, _process):  # type: ignore[arg-type]  # a client of the methods the bridge calls
            await conn.initialize(protocol_version=1)
            listed = await conn.list_sessions(cwd=str(work))
            assert sorted(s.session_id for s in listed.sessions) == sorted([native, sid])


async def test_codex_thread_listed_once_while_its_first_turn_runs(tmp_path: Path) -> None:
    """``agent-bridge acp --provider codex``: while a new session's first turn runs, its
    Codex thread's rollout already exists but the session's recovery record (saved when
    the turn started) does not name it yet; a ``session/list`` then lists the session once,
    as the bridge session, never its thread again as a native session."""
    from standins.responses_server import ResponsesStandIn, reply, text
    from test_codex_native_e2e import private_env as codex_env

    cli = require_cli("codex")
    env = codex_env(tmp_path)
    work = tmp_path / "work"
    with ResponsesStandIn() as server:
        server.script(reply(text(chunks=["slow "] * 12, delay=0.4)))
        base_url = f'model_providers.stub.base_url="{server.base_url}"'
        argv = [BRIDGE, "acp", "--provider", "codex", "--state-dir", str(tmp_path / "s")]
        argv += ["--option", "config=" + json.dumps([base_url])]
        full_env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            **env,
            "AGENT_BRIDGE_CODEX_PATH": cli,
        }
        client = Client()
        async with spawn_agent_process(client, *argv, env=full_env) as (conn, _process):  # type: ignore[arg-type]  # a client of the methods the bridge calls
            await conn.initialize(protocol_version=1)
            sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            listings: list[list[str]] = []

            async def prompt() -> None:
                reply_ = await conn.prompt(session_id=sid, prompt=[text_block("hello")])
                assert reply_.stop_reason == "end_turn"

            async with anyio.create_task_group() as tg:
                tg.start_soon(prompt)
                with anyio.fail_after(60):
                    while "slow" not in client.texts("agent_message_chunk"):
                        await anyio.sleep(0.05)
                rollouts = list((tmp_path / "codex-home" / "sessions").rglob("rollout-*.jsonl"))
                assert rollouts, "the turn runs but Codex wrote no rollout yet"
                listed = await conn.list_sessions(cwd=str(work))
                listings.append([s.session_id for s in listed.sessions])
            assert listings == [[sid]]
            listed = await conn.list_sessions(cwd=str(work))
            assert [s.session_id for s in listed.sessions] == [sid]
