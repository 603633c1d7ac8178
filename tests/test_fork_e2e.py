"""End to end: ``session/fork`` with the real ``claude`` CLI against the stand-in Messages API.

The fork is the CLI's own (``--resume --fork-session --resume-session-at``): the stand-in
sees what each conversation carries.  A fork made after the first of two turns carries
that turn and not the second; the original still carries both; the fork's history reads
the original's up to the fork point (as the fork's events), then its own; ``session/list``
shows its parent.  The errors (unknown session, past the end, inside a run) and the
refusal on a provider that cannot fork are checked through the same bridge.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from bridge_client import BridgeProcess
from conftest import running_bridge
from provider_clis import require_cli
from standins.anthropic_server import (
    AnthropicStandIn,
    RecordedRequest,
    Text,
    ToolUse,
    last_user_text,
    tool_result_text,
)

pytestmark = pytest.mark.e2e


@pytest.fixture
def standin() -> Iterator[AnthropicStandIn]:
    with AnthropicStandIn() as server:
        yield server


def claude_env(tmp: Path, server: AnthropicStandIn) -> dict[str, str]:
    for name in ("home", "config", "tmp", "work"):
        (tmp / name).mkdir(exist_ok=True)
    return {
        "AGENT_BRIDGE_CLAUDE_PATH": require_cli("claude"),
        "HOME": str(tmp / "home"),
        "CLAUDE_CONFIG_DIR": str(tmp / "config"),
        "TMPDIR": str(tmp / "tmp"),
        "ANTHROPIC_BASE_URL": server.base_url,
        "ANTHROPIC_API_KEY": "dummy",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }


@asynccontextmanager
async def bridge(env: dict[str, str], *args: str) -> AsyncIterator[BridgeProcess]:
    async with running_bridge("newline", *args, env=env) as b:
        yield b


async def turn(b: BridgeProcess, session_id: str, text: str) -> dict[str, Any]:
    """Run one turn to its end; return its terminal event's params."""
    await b.result("run/start", {"sessionId": session_id, "input": {"text": text}})
    terminal = await b.terminal(timeout=60)
    assert terminal["payload"]["type"] == "run.completed", terminal
    assert terminal["sessionId"] == session_id
    return terminal


def texts(request: RecordedRequest) -> str:
    """Every text of the messages a model request carried, joined."""
    out: list[str] = []
    for message in request.body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.extend(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return "\n".join(out)


async def read_all(b: BridgeProcess, session_id: str) -> list[dict[str, Any]]:
    page = await b.result("events/read", {"sessionId": session_id, "after": 0, "limit": 1000})
    events: list[dict[str, Any]] = page["events"]
    return events


async def error_of(b: BridgeProcess, method: str, params: Any) -> dict[str, Any]:
    reply = await b.call(method, params, 30)
    assert "error" in reply, reply
    data: dict[str, Any] = reply["error"]["data"]
    return data


@pytest.mark.parametrize("journal", ["sqlite", "memory"])
async def test_claude_fork_midway(tmp_path: Path, standin: AnthropicStandIn, journal: str) -> None:
    env = claude_env(tmp_path, standin)
    state = str(tmp_path / "state") if journal == "sqlite" else ":memory:"
    standin.push(
        Text("Alpha noted."),
        Text("Beta noted."),
        Text("Only alpha."),
        Text("Alpha and beta."),
        Text("Still only alpha."),
    )
    async with bridge(env, "--state-dir", state) as b:
        created = await b.result(
            "session/create",
            {"provider": "claude-code", "workspace": str(tmp_path / "work")},
            timeout=30,
        )
        original = created["session"]["sessionId"]
        first = await turn(b, original, "remember alpha")
        await turn(b, original, "now remember beta")
        before = await read_all(b, original)

        # Past the end, an unknown session: typed errors.
        last = before[-1]["sequence"]
        data = await error_of(b, "session/fork", {"sessionId": original, "atEvent": last + 1})
        assert data["code"] == "invalid_params" and data["details"]["field"] == "atEvent"
        data = await error_of(b, "session/fork", {"sessionId": "ses_nosuchsession"})
        assert data["code"] == "session_not_found"

        forked = await b.result(
            "session/fork", {"sessionId": original, "atEvent": first["sequence"]}, timeout=30
        )
        fork = forked["session"]
        assert forked["providerSequence"] == first["sequence"]  # a run's end: exact
        assert fork["parent"] == {"sessionId": original, "sequence": first["sequence"]}
        assert fork["lastSequence"] == first["sequence"]
        assert fork["providerId"] == "claude-code"

        # The fork's history: the original's up to the fork point, as the fork's events.
        prefix = await read_all(b, fork["sessionId"])
        assert [e["payload"] for e in prefix] == [
            e["payload"] for e in before if e["sequence"] <= first["sequence"]
        ]
        assert {e["sessionId"] for e in prefix} == {fork["sessionId"]}
        assert len({e["eventId"] for e in prefix} & {e["eventId"] for e in before}) == 0

        fork_turn = await turn(b, fork["sessionId"], "which words do you know?")
        assert fork_turn["sequence"] > first["sequence"]
        await turn(b, original, "and which do you know?")
        await turn(b, fork["sessionId"], "still?")

        listed = await b.result("session/list", {})
        by_id = {s["sessionId"]: s for s in listed["sessions"]}
        assert by_id[fork["sessionId"]]["parent"] == fork["parent"]
        assert "parent" not in by_id[original]
        # A session a fork reads from is not deleted, and not closed by the attempt.
        data = await error_of(b, "session/delete", {"sessionId": original})
        assert data["code"] == "invalid_params" and data["details"]["field"] == "sessionId"
        listed = await b.result("session/list", {})
        assert {s["sessionId"]: s["state"] for s in listed["sessions"]}[original] == "active"
        # The original's history is unchanged by the fork.
        after = await read_all(b, original)
        assert after[: len(before)] == before

    requests = standin.model_requests()
    assert [last_user_text(r.body) for r in requests] == [
        "remember alpha",
        "now remember beta",
        "which words do you know?",
        "and which do you know?",
        "still?",
    ]
    fork_seen = texts(requests[2])
    assert "remember alpha" in fork_seen and "Alpha noted." in fork_seen
    assert "beta" not in fork_seen.lower()
    original_seen = texts(requests[3])
    assert "now remember beta" in original_seen and "Beta noted." in original_seen
    assert "which words do you know?" not in original_seen
    fork_again = texts(requests[4])
    assert "which words do you know?" in fork_again and "Only alpha." in fork_again
    assert "beta" not in fork_again.lower()
    sessions = [r.headers.get("x-claude-code-session-id") for r in requests]
    assert sessions[0] == sessions[1] == sessions[3]
    assert sessions[2] == sessions[4] != sessions[0]


def blocks(request: RecordedRequest) -> list[dict[str, Any]]:
    """Every content block of the messages a model request carried, with its role."""
    out: list[dict[str, Any]] = []
    for message in request.body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            out.append({"role": message.get("role"), "type": "text", "text": content})
        elif isinstance(content, list):
            out.extend({"role": message.get("role"), **b} for b in content if isinstance(b, dict))
    return out


async def test_claude_fork_inside_a_run(tmp_path: Path, standin: AnthropicStandIn) -> None:
    """``granularity: message``: a fork at an event inside a run that has ended is made
    from the CLI's last complete assistant message at or before it.  The run streamed a
    text, then called a tool, then answered.  A fork at the text's last delta carries the
    prompt and the text, not the tool call or the answer; one at the tool call carries
    the call too, and not the answer; one in the middle of the text (the message not yet
    complete there) carries nothing of the run: the reply's ``providerSequence`` says
    where the provider was cut each time (0: before anything)."""
    env = claude_env(tmp_path, standin)
    standin.push(
        ToolUse("echo fork-probe", text="Let me look at it."),
        Text("All done."),
        Text("Forked at the text."),
        Text("Forked at the tool."),
        Text("Forked mid-text."),
    )
    async with bridge(env, "--state-dir", str(tmp_path / "state")) as b:
        listed = await b.result("providers/list", {"probe": False})
        claude = next(p for p in listed["providers"] if p["id"] == "claude-code")
        assert claude["capabilities"]["fork"] == {
            "atEnd": True,
            "atEvent": True,
            "granularity": "message",
        }
        created = await b.result(
            "session/create",
            {
                "provider": "claude-code",
                "workspace": str(tmp_path / "work"),
                "options": {"allowedTools": ["Bash"]},
            },
            timeout=30,
        )
        original = created["session"]["sessionId"]
        end = await turn(b, original, "look around")
        events = await read_all(b, original)
        kinds = [e["payload"]["type"] for e in events]
        started = next(e for e in events if e["payload"]["type"] == "tool.activity")
        deltas = [e for e in events if e["payload"]["type"] == "text.delta"]
        text_end = max(e["sequence"] for e in deltas if e["sequence"] < started["sequence"])
        mid_text = deltas[0]["sequence"]
        assert mid_text < text_end, kinds

        async def fork_at(at: int, expected: int, question: str) -> None:
            forked = await b.result(
                "session/fork", {"sessionId": original, "atEvent": at}, timeout=30
            )
            fork = forked["session"]
            assert fork["parent"] == {"sessionId": original, "sequence": at}
            assert forked["providerSequence"] == expected, (at, forked, kinds)
            # the fork's history is the original's up to atEvent, whatever the provider holds
            prefix = await read_all(b, fork["sessionId"])
            assert [e["payload"] for e in prefix] == [
                e["payload"] for e in events if e["sequence"] <= at
            ]
            await turn(b, fork["sessionId"], question)

        await fork_at(text_end, text_end, "what did you say?")
        await fork_at(started["sequence"], started["sequence"], "what did you run?")
        await fork_at(mid_text, 0, "anything?")
        assert end["sequence"] > started["sequence"]

    requests = standin.model_requests()
    asked = [last_user_text(r.body) for r in requests]
    assert asked[-3:] == ["what did you say?", "what did you run?", "anything?"], asked
    at_text, at_tool, at_mid = requests[-3:]
    seen = texts(at_text)
    assert "look around" in seen and "Let me look at it." in seen
    assert not [b for b in blocks(at_text) if b["type"] in ("tool_use", "tool_result")]
    assert "All done." not in seen
    assert [b["input"] for b in blocks(at_tool) if b["type"] == "tool_use"] == [
        {"command": "echo fork-probe", "description": "scripted"}
    ], blocks(at_tool)
    # the command's output came after the cut: the CLI closes the open call itself
    # ("[Tool result missing due to internal error]"), it never sees the real result
    results = [tool_result_text(b) for b in blocks(at_tool) if b["type"] == "tool_result"]
    assert len(results) == 1 and "fork-probe" not in results[0], results
    assert "All done." not in texts(at_tool)
    assert "look around" not in texts(at_mid) and "Let me look" not in texts(at_mid)
    assert not [b for b in blocks(at_mid) if b["type"] in ("tool_use", "tool_result")]


async def test_claude_fork_inside_a_run_still_going_is_refused(
    tmp_path: Path, standin: AnthropicStandIn
) -> None:
    """The CLI has not written a run still going: a fork at one of its events is
    ``invalid_params`` saying so (nothing made); once the run has ended the same event
    forks."""
    env = claude_env(tmp_path, standin)
    standin.push(Text("word " * 30, chunks=30, delay=0.1), Text("Forked."))
    async with bridge(env) as b:
        created = await b.result(
            "session/create",
            {"provider": "claude-code", "workspace": str(tmp_path / "work")},
            timeout=30,
        )
        original = created["session"]["sessionId"]
        await b.result("run/start", {"sessionId": original, "input": {"text": "talk"}})
        delta = await b.event("text.delta", timeout=30)
        data = await error_of(
            b, "session/fork", {"sessionId": original, "atEvent": delta["sequence"]}
        )
        assert data["code"] == "invalid_params" and data["details"]["field"] == "atEvent"
        assert "still going" in data["details"]["reason"]
        listed = await b.result("session/list", {})
        assert [s["sessionId"] for s in listed["sessions"]] == [original]
        assert (await b.terminal(timeout=60))["payload"]["type"] == "run.completed"
        forked = await b.result(
            "session/fork", {"sessionId": original, "atEvent": delta["sequence"]}, timeout=30
        )
        assert forked["providerSequence"] < delta["sequence"]


async def test_a_fork_keeps_the_model_and_mode_chosen_for_its_original(
    tmp_path: Path, standin: AnthropicStandIn
) -> None:
    """The model and mode ``session/configure`` chose for a session are the fork's too
    (the CLI is forked with the session's options, then switched as the original was):
    the fork's first request asks the stand-in for the chosen model."""
    env = claude_env(tmp_path, standin)
    standin.push(Text("One."), Text("Two."))
    async with bridge(env, "--state-dir", str(tmp_path / "state")) as b:
        created = await b.result(
            "session/create",
            {"provider": "claude-code", "workspace": str(tmp_path / "work")},
            timeout=30,
        )
        original = created["session"]["sessionId"]
        await b.result(
            "session/configure",
            {"sessionId": original, "model": "claude-stand-in-2", "mode": "acceptEdits"},
            timeout=30,
        )
        await turn(b, original, "first")
        forked = await b.result("session/fork", {"sessionId": original}, timeout=30)
        fork = forked["session"]["sessionId"]
        settings = await b.result("session/settings", {"sessionId": fork})
        assert settings["model"]["current"] == "claude-stand-in-2"
        assert settings["mode"]["current"] == "acceptEdits"
        await turn(b, fork, "second")
    first, second = standin.model_requests()
    assert first.body["model"] == second.body["model"] == "claude-stand-in-2"
    assert "first" in texts(second)  # the fork's history, not a new conversation


async def test_fork_refused_where_the_provider_cannot(tmp_path: Path) -> None:
    async with bridge({}) as b:
        created = await b.result("session/create", {"provider": "scripted"})
        session_id = created["session"]["sessionId"]
        await b.result("run/start", {"sessionId": session_id, "input": {"text": "hello"}})
        await b.terminal(timeout=30)
        data = await error_of(b, "session/fork", {"sessionId": session_id})
        assert data["code"] == "unsupported"
        data = await error_of(b, "session/fork", {"sessionId": session_id, "atEvent": 1})
        assert data["code"] == "unsupported"
        listed = await b.result("providers/list", {"probe": False})
        scripted = next(p for p in listed["providers"] if p["id"] == "scripted")
        assert "fork" not in scripted["capabilities"]


async def test_acp_clients_fork_through_the_acp_agent(
    tmp_path: Path, standin: AnthropicStandIn
) -> None:
    """``agent-bridge acp --provider claude-code`` advertises ACP's unstable
    ``sessionCapabilities.fork`` and answers ``session/fork`` (ACP Python SDK client) with
    a native fork of the whole session: its next prompt carries the original's turns,
    the original's next does not carry the fork's.  Messages fit ACP's unstable schema."""
    acp = pytest.importorskip("acp", reason="LOUD SKIP: agent-client-protocol is not installed")
    from acp_agent_support import BRIDGE, TAP, accepted
    from acp_schema import AcpSchema, read_transcript, schema_path

    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **claude_env(tmp_path, standin)}
    log = tmp_path / "acp.log"
    argv = [sys.executable, str(TAP), "--log", str(log), "--", BRIDGE, "acp"]
    argv += ["--provider", "claude-code", "--state-dir", str(tmp_path / "state")]
    standin.push(Text("Alpha noted."), Text("Forked answer."), Text("Original answer."))
    client = AcpClient()
    work = str(tmp_path / "work")
    async with acp.spawn_agent_process(client, argv[0], *argv[1:], env=env) as (conn, _):
        init = await conn.initialize(protocol_version=1)
        caps = init.agent_capabilities
        assert caps is not None and caps.session_capabilities is not None
        assert caps.session_capabilities.fork is not None
        session = await conn.new_session(cwd=work, mcp_servers=[])
        reply = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("alpha")])
        assert reply.stop_reason == "end_turn"
        forked = await conn.fork_session(session_id=session.session_id, cwd=work)
        assert forked.session_id != session.session_id
        reply = await conn.prompt(session_id=forked.session_id, prompt=[acp.text_block("fork?")])
        assert reply.stop_reason == "end_turn"
        reply = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("orig?")])
        assert reply.stop_reason == "end_turn"
    requests = standin.model_requests()
    assert [last_user_text(r.body) for r in requests] == ["alpha", "fork?", "orig?"]
    assert "Alpha noted." in texts(requests[1]) and "Alpha noted." in texts(requests[2])
    assert "fork?" not in texts(requests[2])
    unstable = AcpSchema(schema_path().with_name("schema.unstable.json"))
    assert unstable.check_transcript(accepted(read_transcript(log))) == []


class AcpClient:
    """An ACP client that allows every tool and keeps the updates."""

    def __init__(self) -> None:
        self.updates: list[Any] = []

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("no permission is asked in this test")

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)


async def test_claude_fork_of_a_closed_session_in_a_later_bridge(
    tmp_path: Path, standin: AnthropicStandIn
) -> None:
    """The fork point's position comes from the journal: a bridge started later forks a
    session another bridge ran and closed, midway, and the fork resumes natively there."""
    env = claude_env(tmp_path, standin)
    state = ("--state-dir", str(tmp_path / "state"))
    standin.push(Text("Alpha noted."), Text("Beta noted."), Text("Only alpha."))
    async with bridge(env, *state) as b:
        created = await b.result(
            "session/create",
            {"provider": "claude-code", "workspace": str(tmp_path / "work")},
            timeout=30,
        )
        original = created["session"]["sessionId"]
        first = await turn(b, original, "remember alpha")
        await turn(b, original, "now remember beta")
    async with bridge(env, *state) as b:
        forked = await b.result(
            "session/fork", {"sessionId": original, "atEvent": first["sequence"]}, timeout=30
        )
        fork = forked["session"]["sessionId"]
        await turn(b, fork, "which words?")
        listed = await b.result("session/list", {})
        states = {s["sessionId"]: s["state"] for s in listed["sessions"]}
        assert states == {original: "closed", fork: "active"}
        data = await error_of(b, "session/delete", {"sessionId": original})
        assert data["code"] == "invalid_params" and data["details"]["field"] == "sessionId"
    seen = texts(standin.model_requests()[-1])
    assert "Alpha noted." in seen and "beta" not in seen.lower()
    # The fork reopens by id like any session: its parent stays, its history goes on.
    standin.push(Text("Still only alpha."))
    async with bridge(env, *state) as b:
        reopened = await b.result("session/resume", {"sessionId": fork}, timeout=30)
        assert reopened["session"]["parent"] == {
            "sessionId": original,
            "sequence": first["sequence"],
        }
        await turn(b, fork, "and now?")
        events = await read_all(b, fork)
        assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
    seen = texts(standin.model_requests()[-1])
    assert "which words?" in seen and "Only alpha." in seen and "beta" not in seen.lower()


async def test_claude_fork_reopened_before_its_first_turn(
    tmp_path: Path, standin: AnthropicStandIn
) -> None:
    """The CLI writes a forked conversation only with its first turn: a fork closed before
    one keeps where it forks from in its recovery record, and forks again when reopened."""
    env = claude_env(tmp_path, standin)
    state = ("--state-dir", str(tmp_path / "state"))
    standin.push(Text("Alpha noted."), Text("Beta noted."), Text("Only alpha."))
    async with bridge(env, *state) as b:
        created = await b.result(
            "session/create",
            {"provider": "claude-code", "workspace": str(tmp_path / "work")},
            timeout=30,
        )
        original = created["session"]["sessionId"]
        first = await turn(b, original, "remember alpha")
        await turn(b, original, "now remember beta")
        forked = await b.result(
            "session/fork", {"sessionId": original, "atEvent": first["sequence"]}, timeout=30
        )
        fork = forked["session"]["sessionId"]
    async with bridge(env, *state) as b:
        await b.result("session/resume", {"sessionId": fork}, timeout=30)
        await turn(b, fork, "which words?")
    seen = texts(standin.model_requests()[-1])
    assert "Alpha noted." in seen and "beta" not in seen.lower()
