"""The Claude Code adapter against ``tests/standins/fake_claude.py`` (fast, no network).

Most tests drive a real bridge child (``running_bridge``) whose ``claude`` is a wrapper
around the fake CLI (``AGENT_BRIDGE_CLAUDE_PATH``), so they cover the whole path: the
descriptor and option validation, spawning through ``bridge.processes``, the stream-json
protocol, interactions through the host, and the terminal events.  The pure parts
(argv, environment, result classification) are tested directly.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from bridge_client import BridgeProcess
from conftest import running_bridge

from agent_bridge.adapters.claude import launch, mapping, protocol
from agent_bridge.adapters.claude.probe import parse_auth_status, parse_version, probe_cli

ROOT = Path(__file__).resolve().parent.parent
FAKE = ROOT / "tests" / "standins" / "fake_claude.py"

# --------------------------------------------------------------------------- helpers


class Fake:
    """A fake ``claude`` for one test: a wrapper script, a script and a record file."""

    def __init__(self, tmp: Path, script: dict[str, Any] | None = None) -> None:
        self.tmp = tmp
        self.workspace = tmp / "work"
        self.workspace.mkdir(exist_ok=True)
        for name in ("home", "config", "tmp"):
            (tmp / name).mkdir(exist_ok=True)
        self.record_path = tmp / "record.jsonl"
        self.script_path = tmp / "script.json"
        self.write_script(script or {})
        self.wrapper = tmp / "claude"
        self.wrapper.write_text(
            f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" --fake-script "{self.script_path}" "$@"\n'
        )
        self.wrapper.chmod(0o755)

    def write_script(self, script: dict[str, Any]) -> None:
        self.script_path.write_text(json.dumps({"record": str(self.record_path), **script}))

    def env(self, **extra: str) -> dict[str, str]:
        return {
            "AGENT_BRIDGE_CLAUDE_PATH": str(self.wrapper),
            "HOME": str(self.tmp / "home"),
            "CLAUDE_CONFIG_DIR": str(self.tmp / "config"),
            "TMPDIR": str(self.tmp / "tmp"),
            **extra,
        }

    def records(self) -> list[dict[str, Any]]:
        if not self.record_path.exists():
            return []
        return [json.loads(line) for line in self.record_path.read_text().splitlines()]

    def inputs(self) -> list[dict[str, Any]]:
        """Every frame the fake read on stdin, in order (over all its processes)."""
        return [r["in"] for r in self.records() if "in" in r]

    def starts(self) -> list[dict[str, Any]]:
        """One entry per fake process started (argv, cwd, env names, pid)."""
        return [r for r in self.records() if "argv" in r]

    def replies(self) -> list[dict[str, Any]]:
        """The control_responses the adapter sent to the fake's requests."""
        return [m["response"] for m in self.inputs() if m.get("type") == "control_response"]


@asynccontextmanager
async def bridge_with(
    fake: Fake, *args: str, env: dict[str, str] | None = None, **kw: Any
) -> AsyncIterator[BridgeProcess]:
    async with running_bridge("newline", *args, env={**fake.env(), **(env or {})}, **kw) as b:
        yield b


async def create(bridge: BridgeProcess, fake: Fake, options: dict[str, Any] | None = None) -> str:
    result = await bridge.result(
        "session/create",
        {"provider": "claude-code", "workspace": str(fake.workspace), "options": options or {}},
    )
    return str(result["session"]["sessionId"])


async def start_run(bridge: BridgeProcess, session_id: str, text: str) -> str:
    result = await bridge.result("run/start", {"sessionId": session_id, "input": {"text": text}})
    return str(result["runId"])


def payloads(bridge: BridgeProcess, run_id: str, kind: str | None = None) -> list[dict[str, Any]]:
    """Payloads of ``run_id`` received so far (optionally of one type), in order."""
    out = []
    for m in bridge.received:
        if m.get("method") != "event" or m["params"].get("runId") != run_id:
            continue
        payload = m["params"]["payload"]
        if kind is None or payload["type"] == kind:
            out.append(payload)
    return out


def text_of(bridge: BridgeProcess, run_id: str) -> str:
    return "".join(p["text"] for p in payloads(bridge, run_id, "text.delta"))


async def answer_next(bridge: BridgeProcess, answer: dict[str, Any]) -> dict[str, Any]:
    """Answer the next ``interaction/request`` from the bridge; return its params."""
    request = await bridge.wait_for(lambda m: m.get("method") == "interaction/request")
    await bridge.send({"jsonrpc": "2.0", "id": request["id"], "result": answer})
    params: dict[str, Any] = request["params"]
    return params


def error_of(reply: dict[str, Any]) -> dict[str, Any]:
    assert "error" in reply, reply
    data: dict[str, Any] = reply["error"]["data"]
    return data


def pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie still answers kill(0); look at its state.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return True
    return state == "Z"


# --------------------------------------------------------------------------- descriptor


async def test_descriptor_lists_options_and_capabilities(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    async with bridge_with(fake) as bridge:
        result = await bridge.result("providers/list", {"probe": True})
    claude = next(p for p in result["providers"] if p["id"] == "claude-code")
    caps = claude["capabilities"]
    assert caps["run"]["interrupt"] == "cooperative"
    assert caps["interactions"]["approval"] == {"supported": True, "modes": ["once", "session"]}
    assert caps["interactions"]["question"] == {"supported": True, "questionSet": True}
    assert caps["recovery"]["resume"] is True
    options = {o["name"]: o for o in claude["options"]}
    assert set(options) >= {
        "executable",
        "model",
        "permissionMode",
        "allowedTools",
        "disallowedTools",
        "appendSystemPrompt",
        "mcpConfig",
        "configDir",
    }
    assert options["permissionMode"]["values"] == list(launch.PERMISSION_MODES)
    assert options["permissionMode"]["default"] == "default"
    availability = claude["availability"]
    assert availability["status"] == "available"
    assert availability["executable"] == str(fake.wrapper)
    assert availability["version"] == "2.1.197"
    # No API key in the bridge's environment: the CLI itself says it has no credentials.
    assert availability["authentication"] == "unauthenticated"
    assert availability["nextStep"]


async def test_probe_with_a_key_is_unknown_not_authenticated(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    async with bridge_with(fake, env={"ANTHROPIC_API_KEY": "dummy"}) as bridge:
        result = await bridge.result("providers/list", {"probe": True})
    claude = next(p for p in result["providers"] if p["id"] == "claude-code")
    assert claude["availability"]["version"] == "2.1.197"
    assert claude["availability"].get("authentication", "unknown") == "unknown"


async def test_probe_without_the_cli_says_what_is_missing(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {"PATH": str(empty), "HOME": str(tmp_path)}
    availability = await probe_cli(env)
    assert availability.status == "unavailable"
    assert availability.reason is not None and "not found" in availability.reason
    assert availability.next_step is not None


# --------------------------------------------------------------------------- runs


async def test_streaming_text_and_usage(tmp_path: Path) -> None:
    fake = Fake(tmp_path, {"turns": [[{"text": "Hello there, editor!", "chunks": 3}]]})
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        run_id = await start_run(bridge, session_id, "say hi")
        terminal = await bridge.terminal()
        assert terminal["payload"] == {"type": "run.completed", "stopReason": "end_turn"}
        deltas = payloads(bridge, run_id, "text.delta")
        assert len(deltas) == 3
        assert text_of(bridge, run_id) == "Hello there, editor!"
        usage = payloads(bridge, run_id, "usage")
        assert len(usage) == 1
        assert usage[0]["context"]["usedTokens"] > 0
        assert usage[0]["context"]["maxTokens"] == 1000000
        assert usage[0]["cumulative"]["inputTokens"] == 12
        assert usage[0]["cumulative"]["costUsd"] > 0
        # A second turn: cumulative grows, context is the current occupancy.
        run2 = await start_run(bridge, session_id, "again")
        await bridge.terminal()
        usage2 = payloads(bridge, run2, "usage")[0]
        assert usage2["cumulative"]["inputTokens"] == 24
        assert usage2["cumulative"]["costUsd"] > usage[0]["cumulative"]["costUsd"]
        # Every projected event keeps the CLI line it came from (the raw view).
        page = await bridge.result(
            "events/read", {"sessionId": session_id, "view": "raw", "limit": 1000}
        )
        records = [r["record"] for r in page["raw"]]
        kinds = {r["type"] for r in records}
        assert {"stream_event", "result"} <= kinds
        deltas_raw = [r for r in records if r["type"] == "stream_event"]
        assert deltas_raw[0]["event"]["delta"]["text"] == "Hello"
    # The prompt went over stdin, never into argv; the environment was allowlisted.
    start = fake.starts()[0]
    assert "say hi" not in " ".join(start["argv"])
    assert start["cwd"] == str(fake.workspace.resolve())
    assert "AGENT_BRIDGE_CLAUDE_PATH" not in start["env"]
    assert start["env"].count("CLAUDE_CONFIG_DIR") == 1
    users = [m for m in fake.inputs() if m.get("type") == "user"]
    assert users[0]["message"]["content"] == "say hi"
    init = [m for m in fake.inputs() if m.get("type") == "control_request"]
    assert init[0]["request"]["subtype"] == "initialize"


async def test_session_options_become_flags(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    options = {
        "model": "sonnet",
        "permissionMode": "acceptEdits",
        "allowedTools": ["Read", "Bash(git log:*)"],
        "disallowedTools": ["WebFetch"],
        "appendSystemPrompt": "-be brief",
        "mcpConfig": {"mcpServers": {}},
    }
    async with bridge_with(fake) as bridge:
        await create(bridge, fake, options)
        reply = await bridge.call(
            "session/create",
            {"provider": "claude-code", "options": {"permissionMode": "yolo"}},
        )
        assert error_of(reply)["code"] == "invalid_option"
    argv = fake.starts()[0]["argv"]
    assert "--model=sonnet" in argv
    assert "--permission-mode=acceptEdits" in argv
    assert "--allowed-tools=Read,Bash(git log:*)" in argv
    assert "--disallowed-tools=WebFetch" in argv
    assert "--append-system-prompt=-be brief" in argv
    assert '--mcp-config={"mcpServers":{}}' in argv
    for flag in launch.BASE_FLAGS:
        assert flag in argv


async def test_api_errors_are_classified(tmp_path: Path) -> None:
    fake = Fake(
        tmp_path,
        {
            "turns": [
                [{"api_error": {"status": 401, "message": "sk-ant-api03-secretsecret bad key"}}],
                [{"api_error": {"status": 429}}],
                [{"api_error": {"status": 500}}],
                "fine again",
            ]
        },
    )
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        codes = []
        for _ in range(3):
            await start_run(bridge, session_id, "x")
            terminal = await bridge.terminal()
            assert terminal["payload"]["type"] == "run.failed"
            codes.append(terminal["payload"]["error"]["code"])
            assert terminal["payload"]["error"]["message"] in (
                "the provider needs authentication",
                "the provider is rate limited",
                "the provider failed",
            )
        assert codes == ["provider_auth_required", "provider_rate_limited", "provider_failed"]
        run_id = await start_run(bridge, session_id, "x")
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
        assert text_of(bridge, run_id) == "fine again"
    # No upstream prose reached the host.
    assert not any("secretsecret" in json.dumps(m) for m in bridge.received)
    assert not any("API Error" in json.dumps(m) for m in bridge.received)


# --------------------------------------------------------------------------- approvals


async def test_approval_allow_runs_the_tool(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        run_id = await start_run(bridge, session_id, "TOOL:touch approved.txt")
        request = await answer_next(bridge, {"kind": "approval", "decision": "allow"})
        assert request["request"]["kind"] == "approval"
        assert request["request"]["toolName"] == "Bash"
        assert request["request"]["command"] == "touch approved.txt"
        assert request["request"]["input"] == {
            "command": "touch approved.txt",
            "description": "scripted",
        }
        assert request["request"]["modes"] == ["once", "session"]
        terminal = await bridge.terminal()
        assert terminal["payload"]["type"] == "run.completed"
        tools = payloads(bridge, run_id, "tool.activity")
        assert [t["status"] for t in tools] == ["started", "completed"]
        assert tools[0]["input"]["command"] == "touch approved.txt"
        assert tools[1]["output"] == "(Bash completed with no output)"
        settled = payloads(bridge, run_id, "interaction.settled")
        assert settled[0]["status"] == "responded"
    assert (fake.workspace / "approved.txt").exists()
    replies = fake.replies()
    assert len(replies) == 1
    body = replies[0]["response"]
    assert body == {
        "behavior": "allow",
        "updatedInput": {"command": "touch approved.txt", "description": "scripted"},
    }


async def test_approval_for_the_session_sends_session_scoped_rules(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        await start_run(bridge, session_id, "TOOL:touch s.txt")
        await answer_next(bridge, {"kind": "approval", "decision": "allow", "mode": "session"})
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
    updates = fake.replies()[0]["response"]["updatedPermissions"]
    assert {u["type"] for u in updates} == {"addRules", "addDirectories"}
    assert all(u["destination"] == "session" for u in updates)  # nothing written to disk


async def test_approval_deny_does_not_run_the_tool(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        run_id = await start_run(bridge, session_id, "TOOL:touch denied.txt")
        await answer_next(bridge, {"kind": "approval", "decision": "deny"})
        terminal = await bridge.terminal()
        assert terminal["payload"]["type"] == "run.completed"
        tools = payloads(bridge, run_id, "tool.activity")
        assert [t["status"] for t in tools] == ["started", "failed"]
    assert not (fake.workspace / "denied.txt").exists()
    assert fake.replies()[0]["response"] == {
        "behavior": "deny",
        "message": protocol.DENY_MESSAGE,
    }


async def test_host_without_approval_support_is_denied(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    async with bridge_with(fake, approval=False) as bridge:
        session_id = await create(bridge, fake)
        await start_run(bridge, session_id, "TOOL:touch nope.txt")
        await bridge.event("diagnostic", code="approval_auto_denied")
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
    assert not (fake.workspace / "nope.txt").exists()


async def test_duplicate_and_late_answers_send_one_reply(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        await start_run(bridge, session_id, "TOOL:touch once.txt")
        request = await bridge.wait_for(lambda m: m.get("method") == "interaction/request")
        interaction_id = request["params"]["interactionId"]
        answer = {"kind": "approval", "decision": "allow"}
        first = await bridge.result(
            "interaction/respond", {"interactionId": interaction_id, "answer": answer}
        )
        again = await bridge.result(
            "interaction/respond", {"interactionId": interaction_id, "answer": answer}
        )
        other = await bridge.call(
            "interaction/respond",
            {"interactionId": interaction_id, "answer": {"kind": "approval", "decision": "deny"}},
        )
        assert first["status"] == "applied"
        assert again["status"] == "duplicate"
        assert error_of(other)["code"] == "interaction_already_settled"
        # The host's own (late) answer to the interaction/request changes nothing.
        await bridge.send({"jsonrpc": "2.0", "id": request["id"], "result": answer})
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
        late = await bridge.call(
            "interaction/respond",
            {"interactionId": interaction_id, "answer": {"kind": "approval", "decision": "deny"}},
        )
        assert error_of(late)["code"] == "interaction_already_settled"
    assert len(fake.replies()) == 1
    assert (fake.workspace / "once.txt").exists()


async def test_cli_withdrawing_its_request_withdraws_the_interaction(tmp_path: Path) -> None:
    fake = Fake(tmp_path, {"turns": [[{"bash": "touch w.txt", "cancel_after": 0.3}]]})
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        run_id = await start_run(bridge, session_id, "go")
        request = await bridge.wait_for(lambda m: m.get("method") == "interaction/request")
        settled = await bridge.event("interaction.settled")
        assert settled["payload"]["status"] == "withdrawn"
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
        # Answering now is too late, and nothing is sent to the CLI.
        reply = await bridge.call(
            "interaction/respond",
            {
                "interactionId": request["params"]["interactionId"],
                "answer": {"kind": "approval", "decision": "allow"},
            },
        )
        assert error_of(reply)["code"] == "interaction_already_settled"
        assert [t["status"] for t in payloads(bridge, run_id, "tool.activity")] == [
            "started",
            "failed",
        ]
    assert not fake.replies()
    assert not (fake.workspace / "w.txt").exists()


async def test_unknown_control_request_is_answered_with_an_error(tmp_path: Path) -> None:
    fake = Fake(
        tmp_path,
        {
            "turns": [
                [{"control_request": {"subtype": "frobnicate"}, "await": True}, {"text": "ok"}]
            ]
        },
    )
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        run_id = await start_run(bridge, session_id, "go")
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
        codes = [p["code"] for p in payloads(bridge, run_id, "diagnostic")]
        assert codes == ["provider_request_declined"]
    replies = [r["reply_to_fake_request"] for r in fake.records() if "reply_to_fake_request" in r]
    assert len(replies) == 1
    assert replies[0]["subtype"] == "error"


# --------------------------------------------------------------------------- questions

COLOR = {
    "question": "Which color?",
    "header": "Color",
    "options": [{"label": "Red", "description": "warm"}, {"label": "Blue"}],
    "multiSelect": False,
}
SIZES = {
    "question": "Which sizes?",
    "header": "Size",
    "options": [{"label": "S"}, {"label": "L"}],
    "multiSelect": True,
}


def ask(*questions: dict[str, Any]) -> dict[str, Any]:
    return {"turns": [[{"tool": "AskUserQuestion", "input": {"questions": list(questions)}}]]}


async def test_ask_user_question_becomes_a_question(tmp_path: Path) -> None:
    fake = Fake(tmp_path, ask(COLOR))
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        await start_run(bridge, session_id, "go")
        request = await answer_next(bridge, {"kind": "question", "choice": "2"})
        assert request["request"] == {
            "kind": "question",
            "prompt": "Which color?",
            "choices": [{"id": "1", "label": "Red"}, {"id": "2", "label": "Blue"}],
            "allowFreeText": True,
        }
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
    reply = fake.replies()[0]["response"]
    assert reply["behavior"] == "allow"
    assert reply["updatedInput"]["answers"] == {"Which color?": "Blue"}
    assert reply["updatedInput"]["questions"] == [COLOR]


async def test_several_questions_become_a_question_set(tmp_path: Path) -> None:
    fake = Fake(tmp_path, ask(COLOR, SIZES))
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        await start_run(bridge, session_id, "go")
        request = await answer_next(
            bridge, {"kind": "questionSet", "answers": {"q1": "1", "q2": "S, L"}}
        )
        items = request["request"]["items"]
        assert request["request"]["kind"] == "questionSet"
        assert [i["key"] for i in items] == ["q1", "q2"]
        assert "choices" not in items[1]  # multi-select: free text listing the options
        assert "S, L" in items[1]["prompt"]
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
    answers = fake.replies()[0]["response"]["updatedInput"]["answers"]
    assert answers == {"Which color?": "Red", "Which sizes?": "S, L"}


async def test_unanswered_question_is_denied(tmp_path: Path) -> None:
    fake = Fake(tmp_path, ask(COLOR))
    async with bridge_with(fake, question=False) as bridge:
        session_id = await create(bridge, fake)
        await start_run(bridge, session_id, "go")
        await bridge.event("diagnostic", code="question_auto_cancelled")
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
    assert fake.replies()[0]["response"] == {
        "behavior": "deny",
        "message": protocol.NO_ANSWER_MESSAGE,
    }


# --------------------------------------------------------------------------- strays


async def test_stray_frames_are_diagnostics_not_completions(tmp_path: Path) -> None:
    fake = Fake(
        tmp_path,
        {
            "turns": [
                [
                    {"text": "one"},
                    {"stray": "result"},
                    {"stray": "assistant"},
                    {"stray": "stream_event"},
                    {"stray": "control_response"},
                    {"frame": {"type": "mystery_record", "text": "upstream prose"}},
                    {"frame": {"type": "mystery_record"}},
                    {"sleep": 0.2},
                    {"text": "two"},
                ]
            ]
        },
    )
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        run_id = await start_run(bridge, session_id, "go")
        terminal = await bridge.terminal()
        assert terminal["payload"]["type"] == "run.completed"
        events = payloads(bridge, run_id)
        kinds = [e["type"] for e in events]
        # The run ended on its own result, after the text of both messages.
        assert kinds[-1] == "run.completed"
        assert text_of(bridge, run_id) == "onetwo"
        codes = [e["code"] for e in events if e["type"] == "diagnostic"]
        assert codes.count("provider_stray_record") == 4
        assert codes.count("provider_unknown_record") == 1  # once per type and run
        assert not any("upstream prose" in json.dumps(e) for e in events)
        # Still serving: the next run works.
        await start_run(bridge, session_id, "again")
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"


# --------------------------------------------------------------------------- failures


LEAKY_STDERR = "ANTHROPIC_API_KEY=sk-ant-leak123456 died"


async def test_crash_mid_run_fails_the_run_and_the_bridge_keeps_serving(tmp_path: Path) -> None:
    fake = Fake(
        tmp_path,
        {
            "turns": [
                "first",
                [
                    {"text": "partial"},
                    {"crash": {"exit_code": 3, "stderr": LEAKY_STDERR}},
                ],
            ]
        },
    )
    async with bridge_with(fake, "--log-level", "INFO") as bridge:
        session_id = await create(bridge, fake)
        await start_run(bridge, session_id, "one")
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
        await start_run(bridge, session_id, "two")
        terminal = await bridge.terminal()
        assert terminal["payload"]["type"] == "run.failed"
        assert terminal["payload"]["error"]["code"] == "provider_crashed"
        # The same session goes on with a new CLI process that resumes the conversation.
        fake.write_script({"turns": ["after the crash"]})
        run3 = await start_run(bridge, session_id, "three")
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
        assert text_of(bridge, run3) == "after the crash"
        pong = await bridge.result("bridge/ping", {})
        assert pong is not None
    starts = fake.starts()
    assert len(starts) == 2
    assert any(a.startswith("--resume=") for a in starts[1]["argv"])
    log = bytes(bridge.stderr).decode()
    assert "died" in log  # the stderr tail went to the log...
    assert "sk-ant-leak123456" not in log  # ...redacted
    assert not any("died" in json.dumps(m) for m in bridge.received)  # and not to the host


async def test_stdout_eof_fails_the_run(tmp_path: Path) -> None:
    fake = Fake(tmp_path, {"turns": [[{"text": "bye"}, {"close_stdout": True}]]})
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        await start_run(bridge, session_id, "go")
        terminal = await bridge.terminal()
        assert terminal["payload"]["type"] == "run.failed"
        assert terminal["payload"]["error"]["code"] == "provider_crashed"
        await bridge.result("session/close", {"sessionId": session_id})
    pid = fake.starts()[0]["pid"]
    assert pid_gone(pid)


async def test_stderr_flood_does_not_deadlock(tmp_path: Path) -> None:
    line = "x" * 1000
    fake = Fake(
        tmp_path,
        {"turns": [[{"stderr": line, "repeat": 4000}, {"text": "still here"}]]},
    )
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        run_id = await start_run(bridge, session_id, "go")
        assert (await bridge.terminal(timeout=20))["payload"]["type"] == "run.completed"
        assert text_of(bridge, run_id) == "still here"


async def test_missing_executable_is_provider_unavailable(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    async with bridge_with(fake) as bridge:
        reply = await bridge.call(
            "session/create",
            {"provider": "claude-code", "options": {"executable": str(tmp_path / "nope")}},
        )
        data = error_of(reply)
        assert data["code"] == "provider_unavailable"
        assert data["details"]["missing"] == "claude executable"
        assert data["details"]["option"] == "executable"
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {"AGENT_BRIDGE_CLAUDE_PATH": "", "PATH": str(empty)}
    async with bridge_with(fake, env=env) as bridge:
        reply = await bridge.call("session/create", {"provider": "claude-code"})
        data = error_of(reply)
        assert data["code"] == "provider_unavailable"
        assert data["details"]["missing"] == "claude executable"
        assert "PATH" in data["details"]["searched"]
        # The bridge keeps serving.
        await bridge.result("bridge/ping", {})


async def test_handshake_timeout_leaves_no_process(tmp_path: Path) -> None:
    fake = Fake(tmp_path, {"startup_delay": 30})
    async with bridge_with(fake) as bridge:
        started = time.monotonic()
        reply = await bridge.call(
            "session/create",
            {
                "provider": "claude-code",
                "workspace": str(fake.workspace),
                "options": {"startupTimeoutSeconds": 1},
            },
        )
        assert error_of(reply)["code"] == "provider_timeout"
        assert time.monotonic() - started < 6
        pid = fake.starts()[0]["pid"]
        assert pid_gone(pid)


async def test_crash_at_start_is_reported(tmp_path: Path) -> None:
    fake = Fake(tmp_path, {"startup": [{"crash": {"exit_code": 2, "stderr": "bad config"}}]})
    async with bridge_with(fake) as bridge:
        reply = await bridge.call(
            "session/create", {"provider": "claude-code", "workspace": str(fake.workspace)}
        )
        assert error_of(reply)["code"] == "provider_crashed"


# --------------------------------------------------------------------------- interrupt


async def test_cooperative_interrupt(tmp_path: Path) -> None:
    fake = Fake(tmp_path, {"turns": [[{"text": "a b c d e f g h", "delay": 0.2}], "next"]})
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        run_id = await start_run(bridge, session_id, "go")
        await bridge.event("text.delta")
        await bridge.result("run/interrupt", {"runId": run_id})
        terminal = await bridge.terminal()
        assert terminal["payload"] == {"type": "run.interrupted", "reason": "user"}
        run2 = await start_run(bridge, session_id, "again")
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
        assert text_of(bridge, run2) == "next"
    assert len(fake.starts()) == 1  # the same process went on


async def test_interrupt_while_an_approval_is_pending(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        run_id = await start_run(bridge, session_id, "TOOL:touch never.txt")
        await bridge.wait_for(lambda m: m.get("method") == "interaction/request")
        await bridge.result("run/interrupt", {"runId": run_id})
        terminal = await bridge.terminal()
        assert terminal["payload"]["type"] == "run.interrupted"
        assert terminal["payload"].get("forced", False) is False
        settled = payloads(bridge, run_id, "interaction.settled")
        assert settled[0]["status"] == "cancelled"
    assert not (fake.workspace / "never.txt").exists()


async def test_cli_ignoring_interrupt_is_forced_and_the_session_resumes(tmp_path: Path) -> None:
    fake = Fake(
        tmp_path,
        {"turns": ["first", [{"text": "stuck"}, {"hang": True}]], "interrupt": "ignore"},
    )
    async with bridge_with(fake, "--interrupt-grace", "1") as bridge:
        session_id = await create(bridge, fake)
        await start_run(bridge, session_id, "one")
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
        run_id = await start_run(bridge, session_id, "two")
        await bridge.event("text.delta", text="stuck")
        started = time.monotonic()
        await bridge.result("run/interrupt", {"runId": run_id})
        terminal = await bridge.terminal()
        assert terminal["payload"]["type"] == "run.interrupted"
        assert terminal["payload"]["forced"] is True
        assert time.monotonic() - started < 3
        # The next run revives the session from its recovery record (--resume).
        fake.write_script({"turns": ["revived"]})
        run3 = await start_run(bridge, session_id, "three")
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
        assert text_of(bridge, run3) == "revived"
    starts = fake.starts()
    assert len(starts) == 2
    assert pid_gone(starts[0]["pid"])
    assert any(a.startswith("--resume=") for a in starts[1]["argv"])


async def test_silent_cli_is_forced_too(tmp_path: Path) -> None:
    fake = Fake(tmp_path, {"turns": [[{"hang": True}]], "interrupt": "silent"})
    async with bridge_with(fake, "--interrupt-grace", "1") as bridge:
        session_id = await create(bridge, fake)
        run_id = await start_run(bridge, session_id, "go")
        await anyio.sleep(0.2)
        await bridge.result("run/interrupt", {"runId": run_id})
        terminal = await bridge.terminal()
        assert terminal["payload"]["forced"] is True
        await bridge.result("session/close", {"sessionId": session_id})
    assert pid_gone(fake.starts()[0]["pid"])


# --------------------------------------------------------------------------- recovery


async def test_export_and_resume_in_another_bridge(tmp_path: Path) -> None:
    cli_session = "11111111-2222-3333-4444-555555555555"
    fake = Fake(tmp_path, {"turns": ["remember me"], "session_id": cli_session})
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        await start_run(bridge, session_id, "first")
        await bridge.terminal()
        record = (await bridge.result("session/export", {"sessionId": session_id}))["record"]
    assert record["providerId"] == "claude-code"
    assert record["opaque"]["sessionId"] == cli_session
    fake.write_script({"turns": ["welcome back"]})
    async with bridge_with(fake) as bridge:
        resumed = await bridge.result("session/resume", {"record": record})
        session_id = resumed["session"]["sessionId"]
        assert "workspace" not in resumed["session"]
        run_id = await start_run(bridge, session_id, "second")
        await bridge.terminal()
        assert text_of(bridge, run_id) == "welcome back"
        usage = payloads(bridge, run_id, "usage")[0]
        assert usage["cumulative"]["inputTokens"] == 24  # carried over from bridge A
    starts = fake.starts()
    assert f"--resume={cli_session}" in starts[1]["argv"]
    assert starts[1]["cwd"] == str(fake.workspace.resolve())


async def test_resume_of_an_unknown_conversation_is_recovery_invalid(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    record: dict[str, Any] = {
        "providerId": "claude-code",
        "providerVersion": "1.0.0",
        "wireVersion": 1,
        "opaque": {
            "v": 1,
            "sessionId": "99999999-2222-3333-4444-555555555555",
            "cwd": str(fake.workspace),
            "configDir": None,
        },
    }
    async with bridge_with(fake) as bridge:
        reply = await bridge.call("session/resume", {"record": record})
        assert error_of(reply)["code"] == "recovery_invalid"
        bad = {**record, "opaque": {**record["opaque"], "sessionId": "--dangerous"}}
        reply = await bridge.call("session/resume", {"record": bad})
        assert error_of(reply)["code"] == "recovery_invalid"


# --------------------------------------------------------------------------- pure parts


def test_environment_is_allowlisted() -> None:
    parent = {
        "PATH": "/usr/bin",
        "HOME": "/h",
        "ANTHROPIC_API_KEY": "k",
        "CLAUDE_CODE_MAX_RETRIES": "1",
        "OPENAI_API_KEY": "no",
        "GITHUB_TOKEN": "no",
        "FAKE_CLAUDE_SCRIPT": "no",
        "AGENT_BRIDGE_CLAUDE_PATH": "/x",
    }
    env = launch.child_env("/cfg", parent)
    assert env == {
        "PATH": "/usr/bin",
        "HOME": "/h",
        "ANTHROPIC_API_KEY": "k",
        "CLAUDE_CODE_MAX_RETRIES": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CONFIG_DIR": "/cfg",
    }
    # The bridge's own setting wins over the silent default.
    parent["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "0"
    assert launch.child_env(None, parent)["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "0"


def test_discovery_order(tmp_path: Path) -> None:
    exe = tmp_path / "claude"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    other = tmp_path / "other"
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)
    env = {"PATH": str(tmp_path), launch.ENV_EXECUTABLE: str(other)}
    assert launch.discover_executable(str(exe), env).path == str(exe)
    assert launch.discover_executable(None, env).path == str(other)
    assert launch.discover_executable(None, {"PATH": str(tmp_path)}).path == str(exe)
    # An explicit location that is wrong is reported, not silently replaced.
    missing = launch.discover_executable(str(tmp_path / "nope"), env)
    assert missing.path is None and missing.details["option"] == "executable"


def test_discovery_finds_the_claude_agent_sdk_bundle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "site" / "claude_agent_sdk"
    (package / "_bundled").mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('must not be imported')\n")
    bundled = package / "_bundled" / "claude"
    bundled.write_text("#!/bin/sh\n")
    bundled.chmod(0o755)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    importlib.invalidate_caches()
    empty = tmp_path / "bin"
    empty.mkdir()
    found = launch.discover_executable(None, {"PATH": str(empty)})
    assert found.path == str(bundled)
    assert found.source == "claude-agent-sdk"


def test_classify_result() -> None:
    ok = {"type": "result", "subtype": "success", "is_error": False, "stop_reason": "end_turn"}
    assert mapping.classify_result(ok, interrupting=False).state == "completed"
    assert mapping.classify_result(ok, interrupting=True).stop_reason == "end_turn"
    aborted = {
        "subtype": "error_during_execution",
        "is_error": True,
        "terminal_reason": "aborted_streaming",
    }
    assert mapping.classify_result(aborted, interrupting=True).state == "interrupted"
    assert mapping.classify_result(aborted, interrupting=False).error_code == "provider_failed"
    for status, code in (
        (401, "provider_auth_required"),
        (403, "provider_auth_required"),
        (429, "provider_rate_limited"),
        (500, "provider_failed"),
        (None, "provider_failed"),
    ):
        result = {"subtype": "success", "is_error": True, "api_error_status": status}
        assert mapping.classify_result(result, interrupting=False).error_code == code
    result = {"subtype": "success", "is_error": True, "api_error_status": None}
    outcome = mapping.classify_result(
        result, interrupting=False, assistant_error="authentication_failed"
    )
    assert outcome.error_code == "provider_auth_required"
    assert (
        mapping.classify_result(
            {"subtype": "error_max_turns", "is_error": True}, interrupting=False
        ).error_code
        == "provider_failed"
    )


def test_malformed_questions_fall_back_to_an_approval() -> None:
    assert mapping.parse_questions({"questions": "nope"}) is None
    assert mapping.parse_questions({"questions": [{"question": 1}]}) is None
    assert mapping.parse_questions({"questions": [{"question": "q", "options": [{}]}]}) is None
    _request, asked = mapping.parse_questions({"questions": [COLOR]}) or (None, ())
    assert asked[0].labels == ("Red", "Blue")
    from agent_bridge.wire.interactions import QuestionAnswer

    assert mapping.question_answers(asked, QuestionAnswer(choice="9")) is None
    assert mapping.question_answers(asked, QuestionAnswer(text="Green")) == {
        "Which color?": "Green"
    }
    assert mapping.question_answers(asked, None) is None


def test_probe_parsers() -> None:
    assert parse_version("2.1.197 (Claude Code)") == ("2.1.197", (2, 1, 197))
    assert parse_version("garbage") is None
    assert parse_auth_status('{"loggedIn": false}')[0] == "unauthenticated"
    assert parse_auth_status('{"loggedIn": true, "authMethod": "api_key"}')[0] == "unknown"
    assert parse_auth_status('{"loggedIn": true, "authMethod": "claude.ai"}')[0] == "authenticated"
    assert parse_auth_status("not json")[0] == "unknown"
