"""End to end: the bridge drives the real ``claude`` CLI against the stand-in Messages API.

The CLI (installed by ``scripts/install-provider-clis.sh``; see ``tests/provider_clis.py``)
runs as the bridge's child with a private HOME, CLAUDE_CONFIG_DIR and TMPDIR, and talks
only to :class:`AnthropicStandIn` on 127.0.0.1.  Assertions are made on what the host
received and on what the stand-in recorded.
"""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from bridge_client import BridgeProcess
from conftest import running_bridge
from provider_clis import pinned, require_cli
from standins.anthropic_server import (
    AnthropicStandIn,
    RecordedRequest,
    Text,
    ToolUse,
    last_user_text,
)

pytestmark = pytest.mark.e2e


@pytest.fixture
def standin() -> Iterator[AnthropicStandIn]:
    with AnthropicStandIn() as server:
        yield server


class Env:
    """A private home for the CLI and the bridge environment pointing at the stand-in."""

    def __init__(self, tmp: Path, server: AnthropicStandIn) -> None:
        self.cli = require_cli("claude")
        self.workspace = tmp / "work"
        for name in ("home", "config", "tmp", "work"):
            (tmp / name).mkdir(exist_ok=True)
        self.vars = {
            "AGENT_BRIDGE_CLAUDE_PATH": self.cli,
            "HOME": str(tmp / "home"),
            "CLAUDE_CONFIG_DIR": str(tmp / "config"),
            "TMPDIR": str(tmp / "tmp"),
            "ANTHROPIC_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": "dummy",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CODE_MAX_RETRIES": "0",
        }


@pytest.fixture
def env(tmp_path: Path, standin: AnthropicStandIn) -> Env:
    return Env(tmp_path, standin)


@asynccontextmanager
async def bridge(env: Env, *args: str) -> AsyncIterator[BridgeProcess]:
    async with running_bridge("newline", *args, env=env.vars) as b:
        yield b


async def create(b: BridgeProcess, env: Env) -> str:
    result = await b.result(
        "session/create",
        {"provider": "claude-code", "workspace": str(env.workspace)},
        timeout=30,
    )
    return str(result["session"]["sessionId"])


async def run(b: BridgeProcess, session_id: str, text: str) -> str:
    result = await b.result("run/start", {"sessionId": session_id, "input": {"text": text}})
    return str(result["runId"])


def payloads(b: BridgeProcess, run_id: str, kind: str) -> list[dict[str, Any]]:
    return [
        m["params"]["payload"]
        for m in b.received
        if m.get("method") == "event"
        and m["params"].get("runId") == run_id
        and m["params"]["payload"]["type"] == kind
    ]


def text_of(b: BridgeProcess, run_id: str) -> str:
    return "".join(p["text"] for p in payloads(b, run_id, "text.delta"))


async def answer_next(b: BridgeProcess, decision: str) -> dict[str, Any]:
    request = await b.wait_for(lambda m: m.get("method") == "interaction/request", timeout=30)
    answer = {"kind": "approval", "decision": decision}
    await b.send({"jsonrpc": "2.0", "id": request["id"], "result": answer})
    params: dict[str, Any] = request["params"]
    return params


def transcript_texts(request: RecordedRequest) -> list[str]:
    """Every text of the user and assistant messages a model request carried."""
    out: list[str] = []
    for message in request.body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.extend(b.get("text", "") for b in content if isinstance(b, dict))
    return out


async def test_real_cli_probe(env: Env) -> None:
    async with bridge(env) as b:
        result = await b.result("providers/list", {"probe": True}, timeout=30)
    claude = next(p for p in result["providers"] if p["id"] == "claude-code")
    availability = claude["availability"]
    assert availability["status"] == "available"
    assert availability["version"] == (pinned("2.1.197") or availability["version"])
    # An API key is configured, but nothing proves it valid: not "authenticated".
    assert availability.get("authentication", "unknown") == "unknown"


async def test_real_cli_streams_text(env: Env, standin: AnthropicStandIn) -> None:
    deltas = ["Hello", " from", " the stand-in", " model!"]
    standin.push(Text("".join(deltas), deltas=deltas))
    async with bridge(env) as b:
        session_id = await create(b, env)
        run_id = await run(b, session_id, "say hello")
        terminal = await b.terminal(timeout=30)
        assert terminal["payload"] == {"type": "run.completed", "stopReason": "end_turn"}
        assert len(payloads(b, run_id, "text.delta")) == 4
        assert text_of(b, run_id) == "Hello from the stand-in model!"
        usage = payloads(b, run_id, "usage")[0]
        assert usage["context"]["usedTokens"] > 0
        assert usage["cumulative"]["outputTokens"] > 0
    turns = standin.model_requests()
    assert len(turns) == 1
    assert last_user_text(turns[0].body) == "say hello"
    assert all(r.path.startswith("/") for r in standin.requests)


#: a real 1x1 PNG, base64
PNG_B64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


async def test_real_cli_receives_images_files_and_resources(
    env: Env, standin: AnthropicStandIn
) -> None:
    """Run input blocks reach the real CLI's model request as Messages API content: the
    image as a base64 image block (inline and from a workspace file), the file reference
    as an ``@`` mention with its lines, the embedded resource as context text."""
    import base64
    import os

    (env.workspace / "shot.png").write_bytes(base64.b64decode(PNG_B64))
    (env.workspace / "main.py").write_text("print('hi')\n")
    standin.push(Text("I see it."))
    content: list[dict[str, Any]] = [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image", "mimeType": "image/png", "data": PNG_B64},
        {"type": "image", "path": "shot.png"},
        {"type": "file", "path": "main.py", "startLine": 1, "endLine": 1},
        {"type": "resource", "text": "x = 1", "uri": "untitled:1"},
    ]
    async with bridge(env) as b:
        session_id = await create(b, env)
        await b.result("run/start", {"sessionId": session_id, "input": {"content": content}})
        terminal = await b.terminal(timeout=30)
        assert terminal["payload"]["type"] == "run.completed", terminal
        refused = await b.call(
            "run/start",
            {
                "sessionId": session_id,
                "input": {"content": [content[1] | {"mimeType": "image/bmp"}]},
            },
        )
        assert refused["error"]["data"]["code"] == "unsupported"
    (turn,) = standin.model_requests()
    user = [m for m in turn.body["messages"] if m.get("role") == "user"][-1]
    blocks = [b for b in user["content"] if isinstance(b, dict)]
    images = [b for b in blocks if b.get("type") == "image"]
    assert [i["source"] for i in images] == [
        {"type": "base64", "media_type": "image/png", "data": PNG_B64}
    ] * 2
    texts = [b.get("text", "") for b in blocks if b.get("type") == "text"]
    main = os.path.realpath(env.workspace / "main.py")
    assert "What is in this picture?" in texts
    assert f"@{main} (lines 1-1)" in texts
    assert '<context ref="untitled:1">\nx = 1\n</context>' in texts


async def test_real_cli_commands_reach_the_host_and_a_command_block_runs_one(
    env: Env, standin: AnthropicStandIn
) -> None:
    """The real CLI's commands (its initialize answer: built-in slash commands, the
    workspace's custom commands, skills) are listed by ``session/commands``; a
    ``command`` block runs the workspace's custom command: the stand-in's request holds
    the command file's text with the arguments in place."""
    commands = env.workspace / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "greet.md").write_text(
        "---\ndescription: Greet someone by name\nargument-hint: <name>\n---\n"
        "Say the word PINEAPPLE-42 to $ARGUMENTS.\n"
    )
    standin.push(Text("PINEAPPLE-42, Ada."))
    async with bridge(env) as b:
        session_id = await create(b, env)
        listed = await b.result("session/commands", {"sessionId": session_id})
        assert listed["known"] is True
        by_name = {c["name"]: c for c in listed["commands"]}
        assert by_name["greet"]["description"].startswith("Greet someone by name")
        assert by_name["greet"].get("hint") == "<name>"
        assert "compact" in by_name or "init" in by_name  # built-in ones too
        command = {"type": "command", "name": "greet", "arguments": "Ada"}
        await b.result("run/start", {"sessionId": session_id, "input": {"content": [command]}})
        terminal = await b.terminal(timeout=30)
        assert terminal["payload"]["type"] == "run.completed", terminal
    (turn,) = standin.model_requests()
    assert "Say the word PINEAPPLE-42 to Ada." in "\n".join(transcript_texts(turn))


async def test_real_cli_bash_approved(env: Env, standin: AnthropicStandIn) -> None:
    standin.push(ToolUse("touch approved.txt"), Text("Done."))
    async with bridge(env) as b:
        session_id = await create(b, env)
        run_id = await run(b, session_id, "create the file")
        request = await answer_next(b, "allow")
        assert request["request"]["toolName"] == "Bash"
        assert request["request"]["command"] == "touch approved.txt"
        terminal = await b.terminal(timeout=30)
        assert terminal["payload"]["type"] == "run.completed"
        tools = payloads(b, run_id, "tool.activity")
        assert [t["status"] for t in tools] == ["started", "completed"]
        assert text_of(b, run_id) == "Done."
    assert (env.workspace / "approved.txt").exists()
    results = standin.tool_results()
    assert len(results) == 1 and results[0]["is_error"] is False


async def test_real_cli_bash_denied(env: Env, standin: AnthropicStandIn) -> None:
    standin.push(ToolUse("touch denied.txt"), Text("Understood."))
    async with bridge(env) as b:
        session_id = await create(b, env)
        run_id = await run(b, session_id, "create the file")
        await answer_next(b, "deny")
        terminal = await b.terminal(timeout=30)
        assert terminal["payload"]["type"] == "run.completed"
        tools = payloads(b, run_id, "tool.activity")
        assert [t["status"] for t in tools] == ["started", "failed"]
    assert not (env.workspace / "denied.txt").exists()
    results = standin.tool_results()
    assert len(results) == 1 and results[0]["is_error"] is True


async def test_real_cli_question_is_answered(env: Env, standin: AnthropicStandIn) -> None:
    question = {
        "question": "Which color do you want?",
        "header": "Color",
        "options": [
            {"label": "Red", "description": "warm"},
            {"label": "Blue", "description": "cool"},
        ],
        "multiSelect": False,
    }
    standin.push(
        ToolUse(name="AskUserQuestion", input={"questions": [question]}), Text("Blue it is.")
    )
    async with bridge(env) as b:
        session_id = await create(b, env)
        run_id = await run(b, session_id, "ask me")
        request = await b.wait_for(lambda m: m.get("method") == "interaction/request", timeout=30)
        assert request["params"]["request"]["kind"] == "question"
        assert request["params"]["request"]["prompt"] == "Which color do you want?"
        answer = {"kind": "question", "choice": "2"}
        await b.send({"jsonrpc": "2.0", "id": request["id"], "result": answer})
        assert (await b.terminal(timeout=30))["payload"]["type"] == "run.completed"
        assert text_of(b, run_id) == "Blue it is."
    results = standin.tool_results()
    assert len(results) == 1
    assert '"Which color do you want?"="Blue"' in str(results[0]["content"])


async def test_real_cli_interrupt_of_a_slow_stream(env: Env, standin: AnthropicStandIn) -> None:
    words = " ".join(f"word{i}" for i in range(40))
    standin.push(Text(words, delay=0.2), Text("Back again."))
    async with bridge(env) as b:
        session_id = await create(b, env)
        run_id = await run(b, session_id, "talk slowly")
        await b.event("text.delta", timeout=30)
        await b.result("run/interrupt", {"runId": run_id})
        terminal = await b.terminal(timeout=10)
        assert terminal["payload"] == {"type": "run.interrupted", "reason": "user"}
        assert text_of(b, run_id) != words
        await anyio.to_thread.run_sync(
            lambda: standin.wait_for(lambda rs: any(r.aborted for r in rs), timeout=10)
        )
        # The same CLI process goes on, and knows it was interrupted.
        run2 = await run(b, session_id, "continue")
        assert (await b.terminal(timeout=30))["payload"]["type"] == "run.completed"
        assert text_of(b, run2) == "Back again."
    texts = transcript_texts(standin.model_requests()[-1])
    assert any("[Request interrupted by user]" in t for t in texts)


async def test_real_cli_resume_in_a_fresh_bridge(env: Env, standin: AnthropicStandIn) -> None:
    standin.push(Text("The secret word is pineapple."), Text("It was pineapple."))
    async with bridge(env) as b:
        session_id = await create(b, env)
        await run(b, session_id, "remember the secret word")
        assert (await b.terminal(timeout=30))["payload"]["type"] == "run.completed"
        record = (await b.result("session/export", {"sessionId": session_id}))["record"]
    first_session = standin.model_requests()[0].headers.get("x-claude-code-session-id")
    assert first_session
    async with bridge(env) as b:
        resumed = await b.result("session/resume", {"record": record}, timeout=30)
        run_id = await run(b, resumed["session"]["sessionId"], "what was the word?")
        assert (await b.terminal(timeout=30))["payload"]["type"] == "run.completed"
        assert text_of(b, run_id) == "It was pineapple."
    requests = standin.model_requests()
    assert len(requests) == 2
    texts = transcript_texts(requests[1])
    assert any("remember the secret word" in t for t in texts)
    assert any("The secret word is pineapple." in t for t in texts)
    assert last_user_text(requests[1].body) == "what was the word?"
    assert requests[1].headers.get("x-claude-code-session-id") == first_session


async def test_real_cli_at_a_closed_port_says_why(tmp_path: Path) -> None:
    """The model server is down: ``run.failed`` carries the classified cause (never the
    CLI's text) and the bridge logs the failure at WARNING, its default level."""
    import socket

    cli = require_cli("claude")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    for name in ("home", "config", "tmp", "work"):
        (tmp_path / name).mkdir()
    env = {
        "AGENT_BRIDGE_CLAUDE_PATH": cli,
        "HOME": str(tmp_path / "home"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "config"),
        "TMPDIR": str(tmp_path / "tmp"),
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
        "ANTHROPIC_API_KEY": "dummy",
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }
    async with running_bridge("newline", env=env) as b:
        result = await b.result(
            "session/create",
            {"provider": "claude-code", "workspace": str(tmp_path / "work")},
            timeout=30,
        )
        session_id = result["session"]["sessionId"]
        run_id = await run(b, session_id, "hello?")
        end = await b.wait_for(
            lambda m: (
                m.get("method") == "event"
                and m["params"].get("runId") == run_id
                and m["params"]["payload"]["type"] in ("run.failed", "run.completed")
            ),
            timeout=90,
        )
        error = end["params"]["payload"]["error"]
        assert error["code"] == "provider_failed"
        assert error["details"] == {"cause": "connection_refused"}
        assert "API Error" not in str(end)  # no upstream prose on the wire
    log = b.stderr.decode("utf-8", "replace")
    assert "WARNING" in log and "provider_failed" in log and "connection_refused" in log


async def test_real_cli_model_and_permission_mode_switch_between_runs(
    env: Env, standin: AnthropicStandIn
) -> None:
    """``session/settings`` shows the models the real CLI's initialize offered and its
    permission modes; ``session/configure`` switches both with its set_model and
    set_permission_mode control requests: the next turn's model request names the
    chosen model."""
    standin.push(Text("One."), Text("Two."))
    async with bridge(env) as b:
        session_id = await create(b, env)
        settings = await b.result("session/settings", {"sessionId": session_id})
        assert settings["mode"]["current"] == "default"
        assert "plan" in {m["id"] for m in settings["mode"]["available"]}
        assert settings["model"]["available"], settings  # what initialize offered
        await run(b, session_id, "first")
        assert (await b.terminal(timeout=30))["payload"]["type"] == "run.completed"
        switched = await b.result(
            "session/configure",
            {"sessionId": session_id, "model": "claude-stand-in-2", "mode": "acceptEdits"},
        )
        assert switched["model"]["current"] == "claude-stand-in-2"
        assert switched["mode"]["current"] == "acceptEdits"
        event = await b.event("settings.updated")
        assert event["payload"]["mode"] == "acceptEdits"
        bad = await b.call(
            "session/configure", {"sessionId": session_id, "mode": "reckless"}, check=False
        )
        assert bad["error"]["data"]["code"] == "invalid_params"
        await run(b, session_id, "second")
        assert (await b.terminal(timeout=30))["payload"]["type"] == "run.completed"
    first, second = standin.model_requests()
    assert first.body["model"] != "claude-stand-in-2"
    assert second.body["model"] == "claude-stand-in-2"


def _children(pid: int, program: str) -> list[int]:
    """The pids whose parent is ``pid`` and whose argv[0] is ``program`` (from /proc)."""
    out: list[int] = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                argv0 = (entry / "cmdline").read_bytes().split(b"\0")[0].decode()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid and argv0 == program:
                out.append(int(entry.name))
    return out


async def test_real_cli_dying_mid_tool_closes_the_open_tool_call_before_the_run_ends(
    env: Env, standin: AnthropicStandIn
) -> None:
    """A tool call that started and never got its result (here the real CLI is killed
    while its Bash command runs) is reported ``failed``, under its ``toolCallId``, before
    the run's terminal event: every call a host saw start ends."""
    standin.push(ToolUse("touch started.txt; sleep 30", tool_use_id="toolu_dangling"))
    async with bridge(env) as b:
        session_id = await create(b, env)
        run_id = await run(b, session_id, "run the slow command")
        await answer_next(b, "allow")
        with anyio.fail_after(30):
            while not (env.workspace / "started.txt").exists():  # the command runs now
                await anyio.sleep(0.05)
        assert b.proc is not None
        (cli,) = _children(b.proc.pid, env.cli)
        os.kill(cli, signal.SIGKILL)
        terminal = await b.terminal(timeout=30)
        assert terminal["payload"]["type"] == "run.failed"
        assert terminal["payload"]["error"]["code"] == "provider_crashed"
        tools = payloads(b, run_id, "tool.activity")
        assert [(t["toolCallId"], t["status"]) for t in tools] == [
            ("toolu_dangling", "started"),
            ("toolu_dangling", "failed"),
        ]
        events = [m["params"] for m in b.received if m.get("method") == "event"]
        closing = next(e for e in events if e["payload"] == tools[-1])
        assert closing["sequence"] < terminal["sequence"]
