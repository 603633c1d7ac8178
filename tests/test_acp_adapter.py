"""The ACP adapter against the project's ACP agent stand-in (tests/standins/fake_acp.py),
through the real bridge: a `python -m agent_bridge serve` child whose configuration file
names the stand-in as an agent.

Every message the bridge and the stand-in exchanged is validated against ACP's published
schema.json (tests/acp_schema.py) at the end of each test, and the stand-in is kept in
step with the captured Gemini CLI transcript (tests/data/acp/).
"""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from acp_schema import AcpSchema, read_transcript
from bridge_client import Answer, allow, codes, deny, drive, of_type, start, text_of
from conftest import running_bridge

from agent_bridge.adapters.acp import mapping
from agent_bridge.adapters.acp import protocol as p
from agent_bridge.adapters.acp.launch import (
    ConfigEntryError,
    agents_from_config,
    child_env,
    spec_from_entry,
)
from agent_bridge.adapters.acp.provider import AcpProvider, gemini_provider
from agent_bridge.config import Config, config_path, load_config
from agent_bridge.errors import BridgeError
from agent_bridge.spi import InteractionOutcome
from agent_bridge.wire.interactions import (
    ApprovalAnswer,
    QuestionAnswer,
    QuestionRequest,
    QuestionSetRequest,
)

ROOT = Path(__file__).resolve().parent.parent
FAKE = ROOT / "tests" / "standins" / "fake_acp.py"
TRANSCRIPT = ROOT / "tests" / "data" / "acp" / "gemini_0.61.0_transcript.jsonl"
HELLO = "Hi! I am the stand-in model."

pytestmark = pytest.mark.timeout(60)

Msg = dict[str, Any]


class Fake:
    """The stand-in as a configured agent: its script, its log, a workspace, the
    bridge's configuration file naming it."""

    def __init__(self, tmp: Path, agent_id: str = "fake", **script: Any) -> None:
        self.tmp = tmp
        self.work = tmp / "work"
        self.work.mkdir(exist_ok=True)
        self.state = tmp / "agent-state"
        self.state.mkdir(exist_ok=True)
        self.log = tmp / "acp.log"
        self.script_path = tmp / "script.json"
        self.agent_id = agent_id
        self.write(**script)
        self.config = tmp / "config.toml"
        command = [sys.executable, str(FAKE), "--script", str(self.script_path)]
        self.config.write_text(
            f"[acp.agents.{agent_id}]\n"
            f'displayName = "Fake agent"\n'
            f"command = {json.dumps(command)}\n"
            'env = { FAKE_ACP = "1" }\n'
        )

    def write(self, **script: Any) -> None:
        self.script_path.write_text(
            json.dumps({"log": str(self.log), "state_dir": str(self.state), **script})
        )

    @property
    def env(self) -> dict[str, str]:
        return {"AGENT_BRIDGE_CONFIG": str(self.config)}

    def records(self) -> list[Msg]:
        return read_transcript(self.log) if self.log.exists() else []

    def sent_by_bridge(self, method: str) -> list[Msg]:
        return [
            r["msg"]
            for r in self.records()
            if r["dir"] == "->" and r["msg"].get("method") == method
        ]

    def replies_of_bridge(self) -> list[Msg]:
        return [r["msg"] for r in self.records() if r["dir"] == "->" and "method" not in r["msg"]]

    def check_schema(self, off_schema: str | None = None) -> None:
        """Every message both ways fits ACP's schema; ``off_schema`` names a record the
        stand-in sent off the schema on purpose (an unknown update kind)."""
        records = [
            r
            for r in self.records()
            if off_schema is None or off_schema not in json.dumps(r["msg"])
        ]
        problems = AcpSchema().check_transcript(records)
        assert problems == [], problems

    def params(self, **options: Any) -> Msg:
        return {"provider": self.agent_id, "workspace": str(self.work), "options": options}


@pytest.fixture
def fake(tmp_path: Path) -> Fake:
    return Fake(tmp_path)


async def create(bridge: Any, fake: Fake, **options: Any) -> str:
    result = await bridge.result("session/create", fake.params(**options), timeout=30)
    session_id: str = result["session"]["sessionId"]
    return session_id


async def run_text(
    bridge: Any, session_id: str, text: str, answer: Answer | None = None, timeout: float = 20
) -> list[Msg]:
    return await drive(bridge, await start(bridge, session_id, text), answer, timeout=timeout)


# --------------------------------------------------------------------------- the transcript


def test_captured_gemini_transcript_fits_acp_schema() -> None:
    assert AcpSchema().check_transcript(read_transcript(TRANSCRIPT)) == []


def _transcript() -> list[Msg]:
    return [r["msg"] for r in read_transcript(TRANSCRIPT) if r["dir"] in ("->", "<-")]


def test_standin_matches_the_transcript_shapes(tmp_path: Path) -> None:
    """The stand-in answers initialize, session/new and asks permission in the shapes
    Gemini CLI 0.61.0 used (same keys, same option kinds, same tool kinds)."""
    real = _transcript()
    init = next(m for m in real if m.get("id") == 0 and "result" in m)["result"]
    new = next(m for m in real if m.get("id") == 2 and "result" in m)["result"]
    ask = next(m for m in real if m.get("method") == "session/request_permission")["params"]
    from standins import fake_acp

    assert set(init) == {"protocolVersion", "authMethods", "agentInfo", "agentCapabilities"}
    assert init["agentCapabilities"] == fake_acp.GEMINI_CAPS
    assert [m["kind"] for m in ask["options"]] == [m["kind"] for m in fake_acp.PERMISSION_OPTIONS]
    assert [m["optionId"] for m in ask["options"]] == [
        m["optionId"] for m in fake_acp.PERMISSION_OPTIONS
    ]
    assert set(ask["toolCall"]) == {"toolCallId", "status", "title", "content", "locations", "kind"}
    assert {m["id"] for m in new["modes"]["availableModes"]} >= {
        m["id"] for m in fake_acp.MODES["availableModes"]
    }
    # The updates Gemini sent are the ones the stand-in sends for the same prompts.
    kinds = {
        m["params"]["update"]["sessionUpdate"] for m in real if m.get("method") == "session/update"
    }
    assert kinds == {"available_commands_update", "agent_message_chunk", "tool_call_update"}
    texts = "".join(
        m["params"]["update"]["content"]["text"]
        for m in real[:20]
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    assert texts.startswith(HELLO)


def test_mapping_the_transcript() -> None:
    """Every update of the captured transcript maps to payloads (none unknown); its
    permission request maps to an approval with both modes; its stop reasons map."""
    state = mapping.TurnState()
    payloads: list[Any] = []
    for m in _transcript():
        if m.get("method") == "session/update":
            payloads += mapping.update_payloads(state, m["params"]["update"])
        if m.get("method") == "session/request_permission":
            permission = mapping.permission_request(m["params"], "/w")
            assert permission.request.modes == ("once", "session")
            assert permission.request.action == "command"
            assert permission.request.command == m["params"]["toolCall"]["title"]
    assert not [x for x in payloads if getattr(x, "code", "") == "acp_unknown_update"]
    assert any(getattr(x, "text", "") == "Hi!" for x in payloads)
    tools = [x for x in payloads if type(x).__name__ == "ToolActivity"]
    assert [t.status for t in tools][:2] == ["started", "completed"]
    assert mapping.prompt_outcome({"stopReason": "cancelled"}, interrupt_requested=True).state == (
        "interrupted"
    )
    # An agent ending a turn "cancelled" by itself (codex-acp after a rejection): completed.
    unasked = mapping.prompt_outcome({"stopReason": "cancelled"}, interrupt_requested=False)
    assert (unasked.state, unasked.stop_reason) == ("completed", "cancelled")


# --------------------------------------------------------------------------- units


def test_config_file_location(tmp_path: Path) -> None:
    assert config_path({"AGENT_BRIDGE_CONFIG": "/x/c.toml"}) == Path("/x/c.toml")
    assert config_path({"AGENT_BRIDGE_CONFIG": ""}) is None
    assert config_path({"XDG_CONFIG_HOME": "/xdg", "HOME": "/h"}) == Path(
        "/xdg/agent-bridge/config.toml"
    )
    assert config_path({"HOME": "/h"}) == Path("/h/.config/agent-bridge/config.toml")
    assert load_config({"AGENT_BRIDGE_CONFIG": str(tmp_path / "none.toml")}).data == {}
    bad = tmp_path / "bad.toml"
    bad.write_text("[acp\n")
    assert load_config({"AGENT_BRIDGE_CONFIG": str(bad)}).data == {}


def test_config_entries() -> None:
    config = Config(
        {
            "acp": {
                "agents": {
                    "good": {"command": ["a", "--acp"], "displayName": "A", "passEnv": ["K"]},
                    "nocommand": {"displayName": "B"},
                    "BadId": {"command": ["x"]},
                    "badenv": {"command": ["x"], "env": {"A": 1}},
                }
            }
        }
    )
    agents = agents_from_config(config)
    assert [a.id for a in agents] == ["good"]
    assert agents[0].argv == ("a", "--acp") and agents[0].maturity == "experimental"
    assert agents[0].env_var == "AGENT_BRIDGE_ACP_GOOD_PATH"
    with pytest.raises(ConfigEntryError):
        spec_from_entry("x", {"command": "a --acp"})  # a string, not argv
    env = child_env(
        spec_from_entry("x", {"command": ["a"], "env": {"E": "1"}, "passEnv": ["K"]}),
        parent={"PATH": "/bin", "K": "k", "SECRET_TOKEN": "s"},
    )
    assert env["E"] == "1" and env["K"] == "k" and "SECRET_TOKEN" not in env


def test_gemini_descriptor_declares_its_resume_defect() -> None:
    d = gemini_provider().describe()
    assert d.id == "gemini" and d.display_name == "Gemini CLI" and d.maturity == "verified"
    assert d.capabilities.recovery.resume is False
    assert d.capabilities.run.interrupt == "cooperative"
    names = {o.name for o in d.options}
    assert {"authMethod", "mode", "model", "clientFs", "clientTerminal", "mcpServers"} <= names


def test_descriptor_follows_initialize() -> None:
    provider = AcpProvider(spec_from_entry("x", {"command": ["a"]}))
    assert provider.describe().capabilities.recovery.resume is True  # not asked yet
    provider.learned(p.AgentInfo.from_result({"agentCapabilities": {}, "authMethods": []}))
    assert provider.describe().capabilities.recovery.resume is False
    provider.learned(
        p.AgentInfo.from_result(
            {
                "agentCapabilities": {"sessionCapabilities": {"resume": {}}},
                "authMethods": [{"id": "key", "name": "Key"}],
            }
        )
    )
    d = provider.describe()
    assert d.capabilities.recovery.resume is True
    auth = next(o for o in d.options if o.name == "authMethod")
    assert auth.type == "enum" and auth.values == ("key",)
    provider.learned_session(
        {
            "modes": {"availableModes": [{"id": "plan", "name": "Plan"}]},
            "configOptions": [
                {
                    "id": "m",
                    "name": "M",
                    "category": "model",
                    "type": "select",
                    "currentValue": "a",
                    "options": [{"value": "a", "name": "A"}],
                }
            ],
        }
    )
    options = {o.name: o for o in provider.describe().options}
    assert options["mode"].values == ("plan",) and options["model"].values == ("a",)


def test_permission_replies() -> None:
    params = {
        "options": [
            {"optionId": "a1", "kind": "allow_once", "name": "Allow"},
            {"optionId": "aa", "kind": "allow_always", "name": "Always"},
            {"optionId": "r1", "kind": "reject_once", "name": "Reject"},
            {"optionId": "ra", "kind": "reject_always", "name": "Never"},
        ],
        "toolCall": {"toolCallId": "t", "title": "rm x", "kind": "delete"},
    }
    perm = mapping.permission_request(params, "/w")
    assert perm.request.action == "fileChange" and perm.request.modes == ("once", "session")

    def reply(outcome: InteractionOutcome, cancelling: bool = False) -> Any:
        return mapping.permission_reply(perm, outcome, cancelling=cancelling)["outcome"]

    def answered(decision: Any, mode: Any = "once") -> InteractionOutcome:
        return InteractionOutcome("responded", ApprovalAnswer(decision=decision, mode=mode))

    assert reply(answered("allow"))["optionId"] == "a1"
    assert reply(answered("allow", "session"))["optionId"] == "aa"
    assert reply(answered("deny"))["optionId"] == "r1"
    assert reply(answered("deny", "session"))["optionId"] == "ra"
    assert reply(InteractionOutcome("cancelled")) == {"outcome": "cancelled"}
    assert reply(InteractionOutcome("expired"))["optionId"] == "r1"
    assert reply(answered("allow"), cancelling=True) == {"outcome": "cancelled"}


def test_elicitation_mapping() -> None:
    asked = mapping.elicitation_request(
        {
            "mode": "form",
            "message": "Pick",
            "requestedSchema": {
                "type": "object",
                "properties": {"c": {"type": "string", "enum": ["r", "b"]}},
            },
        }
    )
    assert asked is not None
    request, fields = asked
    assert isinstance(request, QuestionRequest) and [c.id for c in request.choices] == ["r", "b"]
    assert mapping.elicitation_reply(
        fields, InteractionOutcome("responded", QuestionAnswer(choice="b"))
    ) == {"action": "accept", "content": {"c": "b"}}
    assert mapping.elicitation_reply(fields, InteractionOutcome("cancelled")) == {
        "action": "cancel"
    }
    two = mapping.elicitation_request(
        {
            "mode": "form",
            "message": "M",
            "requestedSchema": {
                "properties": {"n": {"type": "integer"}, "ok": {"type": "boolean"}}
            },
        }
    )
    assert two is not None and isinstance(two[0], QuestionSetRequest)
    assert mapping.elicitation_request({"mode": "url", "url": "u", "message": "m"}) is None


def test_classify_rpc_errors() -> None:
    assert mapping.classify_rpc_error(-32000, "session/new") == "provider_auth_required"
    assert mapping.classify_rpc_error(-32603, "session/load") == "recovery_invalid"
    assert mapping.classify_rpc_error(-32603, "session/prompt") == "provider_failed"
    assert mapping.classify_rpc_error(-32601, "session/resume") == "unsupported"


# --------------------------------------------------------------------------- through the bridge


async def test_providers_list_probes_the_agent(fake: Fake) -> None:
    async with running_bridge("newline", env=fake.env) as bridge:
        listed = await bridge.result("providers/list", {"probe": True}, timeout=40)
        by_id = {d["id"]: d for d in listed["providers"]}
        assert {"gemini", "acp", "fake"} <= set(by_id)
        d = by_id["fake"]
        assert d["displayName"] == "Fake agent" and d["maturity"] == "experimental"
        assert d["availability"]["status"] == "available"
        assert d["availability"]["version"] == "0.61.0"
        assert d["capabilities"]["recovery"]["resume"] is True  # loadSession advertised
        auth = next(o for o in d["options"] if o["name"] == "authMethod")
        assert auth["values"] == ["oauth-personal", "gemini-api-key"]
    # The probe asked initialize only, with no client capabilities.
    assert [m.get("method") for m in fake.sent_by_bridge("initialize")] == ["initialize"]
    assert not fake.sent_by_bridge("session/new")
    fake.check_schema()


async def test_text_run(fake: Fake) -> None:
    async with running_bridge("newline", env=fake.env) as bridge:
        session_id = await create(bridge, fake)
        payloads = await run_text(bridge, session_id, "say hi")
        assert text_of(payloads) == HELLO
        assert payloads[-1] == {"type": "run.completed", "stopReason": "end_turn"}
        assert of_type(payloads, "commands.updated") == [
            {"type": "commands.updated", "commands": [{"name": "help", "description": "Help"}]}
        ]
        again = await run_text(bridge, session_id, "REFUSE")
        assert again[-1] == {"type": "run.completed", "stopReason": "refusal"}
    new = fake.sent_by_bridge("session/new")[0]["params"]
    assert new == {"cwd": str(fake.work.resolve()), "mcpServers": []}
    init = fake.sent_by_bridge("initialize")[0]["params"]
    assert init["clientCapabilities"]["fs"] == {"readTextFile": False, "writeTextFile": False}
    assert init["clientCapabilities"]["terminal"] is False
    fake.check_schema()


async def test_generic_acp_provider_from_options(fake: Fake, tmp_path: Path) -> None:
    """The generic ``acp`` provider runs the session's ``command``, and no variable of the
    bridge's environment replaces it (``AGENT_BRIDGE_ACP_ACP_PATH``, the name derived from
    its id, did; ``AGENT_BRIDGE_ACP_PATH``, the one its option described, did not): both
    point at an impostor here.  Its ``executable`` option says so in ``providers/list``;
    without ``command`` a session is ``invalid_option``."""
    impostor = tmp_path / "impostor"
    impostor.write_text("#!/bin/sh\nexit 3\n")
    impostor.chmod(0o755)
    env = {"AGENT_BRIDGE_ACP_ACP_PATH": str(impostor), "AGENT_BRIDGE_ACP_PATH": str(impostor)}
    async with running_bridge("newline", env=env) as bridge:
        command = [sys.executable, str(FAKE), "--script", str(fake.script_path)]
        result = await bridge.result(
            "session/create",
            {"provider": "acp", "workspace": str(fake.work), "options": {"command": command}},
            timeout=30,
        )
        payloads = await run_text(bridge, result["session"]["sessionId"], "hi")
        assert text_of(payloads) == HELLO
        reply = await bridge.call("session/create", {"provider": "acp", "options": {}})
        assert reply["error"]["data"]["code"] == "invalid_option"
        listed = await bridge.result("providers/list", {})
        generic = next(p for p in listed["providers"] if p["id"] == "acp")
        executable = next(o for o in generic["options"] if o["name"] == "executable")
        assert "first item of the command option" in executable["description"]
        assert "AGENT_BRIDGE" not in executable["description"]
    fake.check_schema()


async def test_approval_allowed_and_denied(fake: Fake) -> None:
    async with running_bridge("newline", env=fake.env) as bridge:
        session_id = await create(bridge, fake)
        asked: list[Msg] = []

        def answer(params: Msg) -> Msg:
            asked.append(params["request"])
            reply: Msg = allow()(params)
            return reply

        payloads = await run_text(bridge, session_id, "TOOL:touch approved.txt", answer)
        assert (fake.work / "approved.txt").exists()
        assert asked[0]["kind"] == "approval" and asked[0]["action"] == "command"
        assert asked[0]["command"] == "touch approved.txt"
        assert asked[0]["modes"] == ["once", "session"]
        tools = of_type(payloads, "tool.activity")
        assert [t["status"] for t in tools] == ["started", "completed"]
        assert tools[0]["name"] == "execute"
        assert text_of(payloads) == "Tool finished."
        assert not codes(payloads) & {"acp_unknown_update"}

        payloads = await run_text(bridge, session_id, "TOOL:touch denied.txt", deny)
        assert not (fake.work / "denied.txt").exists()
        assert "canceled by the user" in text_of(payloads)
        payloads = await run_text(bridge, session_id, "TOOL:touch always.txt", allow("session"))
        assert (fake.work / "always.txt").exists()
    chosen = [
        r["result"]["outcome"].get("optionId")
        for r in fake.replies_of_bridge()
        if "outcome" in (r.get("result") or {})
    ]
    assert chosen == ["proceed_once", "cancel", "proceed_always"]
    fake.check_schema()


async def test_interrupt_slow_stream(fake: Fake) -> None:
    async with running_bridge("newline", env=fake.env) as bridge:
        session_id = await create(bridge, fake)
        run_id = await start(bridge, session_id, "SLOW")
        await bridge.event("text.delta", timeout=10)
        await bridge.result("run/interrupt", {"runId": run_id})
        payloads = await drive(bridge, run_id)
        assert payloads[-1]["type"] == "run.interrupted"
        assert payloads[-1].get("forced", False) is False
        # The session goes on.
        assert text_of(await run_text(bridge, session_id, "hi")) == HELLO
    assert len(fake.sent_by_bridge("session/cancel")) == 1
    fake.check_schema()


async def test_interrupt_answers_pending_permission_cancelled(fake: Fake) -> None:
    async with running_bridge("newline", env=fake.env) as bridge:
        session_id = await create(bridge, fake)
        run_id = await start(bridge, session_id, "TOOL:touch never.txt")
        await bridge.wait_for(lambda m: m.get("method") == "interaction/request", timeout=15)
        await bridge.result("run/interrupt", {"runId": run_id})
        payloads = await drive(bridge, run_id)
        assert payloads[-1]["type"] == "run.interrupted"
        settled = of_type(payloads, "interaction.settled")
        assert settled and settled[0]["status"] == "cancelled"
    assert not (fake.work / "never.txt").exists()
    outcomes = [
        r["result"]["outcome"]
        for r in fake.replies_of_bridge()
        if "outcome" in (r.get("result") or {})
    ]
    assert outcomes == [{"outcome": "cancelled"}]
    fake.check_schema()


async def test_updates_map_to_events_and_unknown_keeps_raw(fake: Fake) -> None:
    async with running_bridge("newline", env=fake.env) as bridge:
        session_id = await create(bridge, fake)
        assert (
            of_type(await run_text(bridge, session_id, "THINK"), "thinking.delta")[0]["text"]
            == "pondering"
        )
        plan = of_type(await run_text(bridge, session_id, "PLAN"), "plan.updated")[0]
        assert [s["status"] for s in plan["steps"]] == ["completed", "inProgress", "pending"]
        usage = of_type(await run_text(bridge, session_id, "USAGE"), "usage")[0]
        assert usage["context"] == {"usedTokens": 1200, "maxTokens": 200000}
        assert usage["cumulative"]["costUsd"] == 0.25
        assert "acp_mode_changed" in codes(await run_text(bridge, session_id, "MODE"))
        assert "acp_config_updated" in codes(await run_text(bridge, session_id, "CONFIG"))
        unknown_run = await start(bridge, session_id, "UNKNOWN")
        payloads = await drive(bridge, unknown_run)
        assert "acp_unknown_update" in codes(payloads)
        page = await bridge.result(
            "events/read", {"sessionId": session_id, "view": "raw", "limit": 1000}
        )
        unknown = [
            e["sequence"]
            for e in page["events"]
            if e["payload"].get("code") == "acp_unknown_update"
        ]
        raws = [r for r in page["raw"] if r["spans"][0][0] == unknown[0]]
        assert raws[0]["record"]["update"] == {"sessionUpdate": "_fake_weather", "sunny": True}
    fake.check_schema(off_schema="_fake_weather")


async def test_tool_calls_carry_the_tool_model_and_edits(fake: Fake) -> None:
    async with running_bridge("newline", env=fake.env) as bridge:
        session_id = await create(bridge, fake)
        path = str(fake.work / "a.txt")
        tools = of_type(await run_text(bridge, session_id, f"EDIT:{path}"), "tool.activity")
        assert tools[0] == {
            "type": "tool.activity",
            "toolCallId": "edit_1",
            "name": "edit",
            "status": "started",
            "input": {"file_path": path},
            "kind": "edit",
            "title": "Edit a.txt",
            "locations": [{"path": path, "line": 1}],
        }
        assert tools[1]["status"] == "completed"
        assert tools[1]["content"] == [
            {"type": "edit", "path": path, "oldText": "a\n", "newText": "b\n"}
        ]
        allowed = of_type(
            await run_text(bridge, session_id, "TOOL:touch t.txt", allow()), "tool.activity"
        )
        assert allowed[0]["kind"] == "execute" and allowed[0]["title"] == "touch t.txt"
        assert allowed[0]["content"][0]["type"] == "text"
    fake.check_schema()


async def test_fs_callbacks_only_when_enabled_and_confined(fake: Fake, tmp_path: Path) -> None:
    (fake.work / "in.txt").write_text("inside\n")
    (tmp_path / "secret.txt").write_text("outside\n")
    (fake.work / "link").symlink_to(tmp_path / "secret.txt")
    work = fake.work.resolve()
    async with running_bridge("newline", env=fake.env) as bridge:
        off = await create(bridge, fake)
        assert "error -32601" in text_of(await run_text(bridge, off, f"READ:{work}/in.txt"))
        on = await create(bridge, fake, clientFs=True)
        assert text_of(await run_text(bridge, on, f"READ:{work}/in.txt")) == "read: inside\n"
        assert "error -32602" in text_of(await run_text(bridge, on, f"READ:{work}/../secret.txt"))
        assert "error -32602" in text_of(await run_text(bridge, on, f"READ:{work}/link"))
        assert "error -32602" in text_of(await run_text(bridge, on, "READ:in.txt"))
        assert text_of(await run_text(bridge, on, f"WRITE:{work}/out.txt")) == "wrote"
        assert (fake.work / "out.txt").read_text() == "written\n"
        assert "error" in text_of(await run_text(bridge, on, f"WRITE:{tmp_path}/escape.txt"))
    assert not (tmp_path / "escape.txt").exists()
    caps = [m["params"]["clientCapabilities"] for m in fake.sent_by_bridge("initialize")]
    assert caps[-1]["fs"] == {"readTextFile": True, "writeTextFile": True}
    fake.check_schema()


async def test_terminal_callbacks(fake: Fake) -> None:
    async with running_bridge("newline", env=fake.env) as bridge:
        off = await create(bridge, fake)
        assert "error -32601" in text_of(await run_text(bridge, off, "TERM:echo hi"))
        on = await create(bridge, fake, clientTerminal=True)
        assert text_of(await run_text(bridge, on, "TERM:echo hello there")) == (
            "exit 0: hello there"
        )
        assert text_of(await run_text(bridge, on, "TERM:false")).strip() == "exit 1:"
    fake.check_schema()


async def test_unadvertised_callback_gets_method_not_found(fake: Fake) -> None:
    async with running_bridge("newline", env=fake.env) as bridge:
        session_id = await create(bridge, fake)
        payloads = await run_text(bridge, session_id, "CALL:fs/write_text_file")
        assert text_of(payloads) == "error -32601"
        payloads = await run_text(bridge, session_id, "CALL:_vendor/thing")
        assert text_of(payloads) == "error -32601"


async def test_elicitation_form_and_url(fake: Fake) -> None:
    async with running_bridge("newline", env=fake.env) as bridge:
        session_id = await create(bridge, fake)
        asked: list[Msg] = []

        def answer(params: Msg) -> Msg:
            asked.append(params["request"])
            return {"kind": "question", "choice": "blue"}

        payloads = await run_text(bridge, session_id, "ASK", answer)
        assert asked[0]["kind"] == "question" and asked[0]["prompt"] == "Which colour?"
        assert [c["id"] for c in asked[0]["choices"]] == ["red", "blue"]
        assert '"colour": "blue"' in text_of(payloads)
        payloads = await run_text(bridge, session_id, "ASKURL")
        assert "acp_elicitation_unsupported" in codes(payloads)
        assert '"decline"' in text_of(payloads)
    caps = fake.sent_by_bridge("initialize")[0]["params"]["clientCapabilities"]
    assert caps["elicitation"] == {"form": {}}
    fake.check_schema()


async def test_authenticate_and_auth_required(fake: Fake) -> None:
    fake.write(auth_required=True)
    async with running_bridge("newline", env=fake.env) as bridge:
        reply = await bridge.call("session/create", fake.params(), timeout=30)
        assert reply["error"]["data"]["code"] == "provider_auth_required"
        reply = await bridge.call("session/create", fake.params(authMethod="nope"), timeout=30)
        assert reply["error"]["data"]["code"] == "invalid_option"
        session_id = await create(bridge, fake, authMethod="gemini-api-key")
        assert text_of(await run_text(bridge, session_id, "hi")) == HELLO
    assert fake.sent_by_bridge("authenticate")[0]["params"] == {"methodId": "gemini-api-key"}
    fake.check_schema()


async def test_mode_and_model_options(fake: Fake) -> None:
    async with running_bridge("newline", env=fake.env) as bridge:
        session_id = await create(bridge, fake, mode="yolo", model="fast")
        assert text_of(await run_text(bridge, session_id, "hi")) == HELLO
        reply = await bridge.call("session/create", fake.params(mode="nosuch"), timeout=30)
        assert reply["error"]["data"]["code"] == "invalid_option"
    assert fake.sent_by_bridge("session/set_mode")[0]["params"]["modeId"] == "yolo"
    assert fake.sent_by_bridge("session/set_config_option")[0]["params"]["value"] == "fast"
    fake.check_schema()


async def test_agent_crash_fails_the_run(fake: Fake) -> None:
    async with running_bridge("newline", env=fake.env) as bridge:
        session_id = await create(bridge, fake)
        payloads = await run_text(bridge, session_id, "CRASH")
        assert payloads[-1]["type"] == "run.failed"
        assert payloads[-1]["error"]["code"] == "provider_crashed"


async def test_missing_executable_is_unavailable(fake: Fake, tmp_path: Path) -> None:
    config = tmp_path / "missing.toml"
    config.write_text('[acp.agents.gone]\ncommand = ["/nonexistent/agent"]\n')
    async with running_bridge("newline", env={"AGENT_BRIDGE_CONFIG": str(config)}) as bridge:
        reply = await bridge.call("session/create", {"provider": "gone"}, timeout=30)
        assert reply["error"]["data"]["code"] == "provider_unavailable"
        listed = await bridge.result("providers/list", {"probe": True}, timeout=40)
        gone = next(d for d in listed["providers"] if d["id"] == "gone")
        assert gone["availability"]["status"] == "unavailable"


async def test_resume_in_a_fresh_bridge_with_load(fake: Fake, tmp_path: Path) -> None:
    state = tmp_path / "bridge-state"
    args = ("--state-dir", str(state))
    async with running_bridge("newline", *args, env=fake.env) as bridge:
        session_id = await create(bridge, fake)
        assert text_of(await run_text(bridge, session_id, "first")) == HELLO
        await bridge.result("session/close", {"sessionId": session_id})
    async with running_bridge("newline", *args, env=fake.env) as bridge:
        await bridge.result("session/resume", {"sessionId": session_id}, timeout=30)
        payloads = await run_text(bridge, session_id, "second")
        # The load replayed the first turn; none of it came back as new events.
        assert text_of(payloads) == HELLO
    loads = fake.sent_by_bridge("session/load")
    assert len(loads) == 1 and loads[0]["params"]["cwd"] == str(fake.work.resolve())
    fake.check_schema()


async def test_resume_prefers_session_resume(fake: Fake, tmp_path: Path) -> None:
    fake.write(capabilities={"loadSession": True, "sessionCapabilities": {"resume": {}}})
    state = tmp_path / "bridge-state"
    args = ("--state-dir", str(state))
    async with running_bridge("newline", *args, env=fake.env) as bridge:
        session_id = await create(bridge, fake)
        await run_text(bridge, session_id, "first")
        await bridge.result("session/close", {"sessionId": session_id})
    async with running_bridge("newline", *args, env=fake.env) as bridge:
        await bridge.result("session/resume", {"sessionId": session_id}, timeout=30)
        assert text_of(await run_text(bridge, session_id, "second")) == HELLO
    assert fake.sent_by_bridge("session/resume") and not fake.sent_by_bridge("session/load")
    fake.check_schema()


async def test_resume_refused_when_the_agent_cannot(fake: Fake, tmp_path: Path) -> None:
    """An agent advertising neither load nor resume: known after the first session, the
    descriptor says so and a resume is refused ``unsupported``."""
    fake.write(capabilities={"loadSession": False})
    state = tmp_path / "bridge-state"
    args = ("--state-dir", str(state))
    async with running_bridge("newline", *args, env=fake.env) as bridge:
        session_id = await create(bridge, fake)
        await bridge.result("session/close", {"sessionId": session_id})
        listed = await bridge.result("providers/list", {"probe": False})
        d = next(x for x in listed["providers"] if x["id"] == "fake")
        assert d["capabilities"]["recovery"]["resume"] is False
        reply = await bridge.call("session/resume", {"sessionId": session_id}, timeout=30)
        assert reply["error"]["data"]["code"] == "unsupported"


async def test_gemini_like_load_defect_is_classified(fake: Fake, tmp_path: Path) -> None:
    """The stand-in's emulation of Gemini 0.61.0's fresh-process load defect: a configured
    agent that claims loadSession but fails the load gets ``recovery_invalid``."""
    fake.write(load_defect=True)
    state = tmp_path / "bridge-state"
    args = ("--state-dir", str(state))
    async with running_bridge("newline", *args, env=fake.env) as bridge:
        session_id = await create(bridge, fake)
        await bridge.result("session/close", {"sessionId": session_id})
    async with running_bridge("newline", *args, env=fake.env) as bridge:
        reply = await bridge.call("session/resume", {"sessionId": session_id}, timeout=30)
        assert reply["error"]["data"]["code"] == "recovery_invalid"


async def test_gemini_resume_is_refused_by_descriptor(tmp_path: Path) -> None:
    """The built-in gemini declares resume unsupported (its upstream defect): a closed
    gemini session cannot be resumed and the refusal is classified."""
    fake = Fake(tmp_path, agent_id="x")
    exe = tmp_path / "gemini"
    exe.write_text(f'#!/bin/sh\nexec {sys.executable} {FAKE} --script {fake.script_path} "$@"\n')
    exe.chmod(0o755)
    env = {"AGENT_BRIDGE_GEMINI_PATH": str(exe)}
    async with running_bridge("newline", env=env) as bridge:
        result = await bridge.result(
            "session/create", {"provider": "gemini", "workspace": str(fake.work)}, timeout=30
        )
        session_id = result["session"]["sessionId"]
        assert text_of(await run_text(bridge, session_id, "hi")) == HELLO
        await bridge.result("session/close", {"sessionId": session_id})
        reply = await bridge.call("session/resume", {"sessionId": session_id}, timeout=30)
        assert reply["error"]["data"]["code"] == "unsupported"
    assert os.path.exists(fake.log)


# --------------------------------------------------------------------------- rich input

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63f8cfc0f01f0005000201a0a1c1e30000000049454e44ae426082"
)


def _rich_input(work: Path) -> Msg:
    (work / "notes.py").write_text("a = 1\nb = 2\nc = 3\n")
    return {
        "content": [
            {"type": "text", "text": "look"},
            {"type": "image", "mimeType": "image/png", "data": base64.b64encode(PNG).decode()},
            {"type": "file", "path": "notes.py", "startLine": 2, "endLine": 3},
            {"type": "resource", "text": "x = 9", "uri": "untitled:1", "mimeType": "text/x-python"},
        ]
    }


def test_prompt_blocks_and_input_capabilities_follow_the_agent() -> None:
    none = p.input_capabilities(p.AgentInfo.from_result({"agentCapabilities": {}}))
    assert none.kinds == ("text", "file", "command") and none.image is None
    assert p.input_capabilities(None) == none  # not asked yet: ACP's baseline
    both = p.input_capabilities(p.AgentInfo.from_result({"agentCapabilities": GEMINI_LIKE}))
    assert both.kinds == ("text", "image", "file", "resource", "command")
    assert both.image is not None and "image/png" in both.image.mime_types
    provider = AcpProvider(spec_from_entry("x", {"command": ["a"]}))
    assert provider.describe().capabilities.input == none
    provider.learned(p.AgentInfo.from_result({"agentCapabilities": GEMINI_LIKE}))
    assert provider.describe().capabilities.input == both


GEMINI_LIKE: Msg = {"promptCapabilities": {"image": True, "embeddedContext": True}}


async def test_rich_input_reaches_the_agent_as_acp_blocks(fake: Fake) -> None:
    async with running_bridge("newline", env=fake.env) as bridge:
        session_id = await create(bridge, fake)
        listed = await bridge.result("providers/list", {"probe": False})
        d = next(x for x in listed["providers"] if x["id"] == "fake")
        assert d["capabilities"]["input"]["kinds"] == [
            "text",
            "image",
            "file",
            "resource",
            "command",
        ]
        result = await bridge.result(
            "run/start", {"sessionId": session_id, "input": _rich_input(fake.work)}
        )
        events = await drive(bridge, result["runId"])
        assert events[-1]["type"] == "run.completed"
    (prompt,) = fake.sent_by_bridge("session/prompt")
    real = (fake.work / "notes.py").resolve()
    assert prompt["params"]["prompt"] == [
        {"type": "text", "text": "look"},
        {"type": "image", "data": base64.b64encode(PNG).decode(), "mimeType": "image/png"},
        {"type": "resource_link", "uri": real.as_uri(), "name": "notes.py"},
        {"type": "text", "text": "(lines 2-3 of notes.py)"},
        {
            "type": "resource",
            "resource": {"uri": "untitled:1", "text": "x = 9", "mimeType": "text/x-python"},
        },
    ]
    fake.check_schema()


async def test_an_agent_is_never_sent_what_it_did_not_advertise(tmp_path: Path) -> None:
    fake = Fake(tmp_path, capabilities={"loadSession": True})  # no promptCapabilities
    async with running_bridge("newline", env=fake.env) as bridge:
        session_id = await create(bridge, fake)
        rich = _rich_input(fake.work)
        text, image, file, resource = rich["content"]
        for block, kind in ((image, "image"), (resource, "resource")):
            input = {"content": [text, block]}
            reply = await bridge.call("run/start", {"sessionId": session_id, "input": input})
            error = reply["error"]["data"]
            assert error["code"] == "unsupported", error
            assert error["details"]["field"] == "input.content.1"
            assert kind in error["details"]["reason"]
        assert fake.sent_by_bridge("session/prompt") == []  # nothing started
        # What it takes (text, and a file as a resource_link, ACP's baseline) goes through.
        ok = {"content": [text, file]}
        result = await bridge.result("run/start", {"sessionId": session_id, "input": ok})
        events = await drive(bridge, result["runId"])
        assert events[-1]["type"] == "run.completed"
    (prompt,) = fake.sent_by_bridge("session/prompt")
    assert [b["type"] for b in prompt["params"]["prompt"]] == ["text", "resource_link", "text"]
    fake.check_schema()


async def test_the_agents_commands_reach_the_host_and_a_command_block_invokes_one(
    fake: Fake,
) -> None:
    async with running_bridge("newline", env=fake.env) as bridge:
        session_id = await create(bridge, fake)
        before = await bridge.result("session/commands", {"sessionId": session_id})
        assert before == {"commands": [], "known": False}  # the stand-in names them later
        payloads = await run_text(bridge, session_id, "say hi")
        listed = [{"name": "help", "description": "Help"}]
        assert of_type(payloads, "commands.updated") == [
            {"type": "commands.updated", "commands": listed}
        ]
        after = await bridge.result("session/commands", {"sessionId": session_id})
        assert after == {"commands": listed, "known": True}
        command = {"type": "command", "name": "help", "arguments": "tools"}
        result = await bridge.result(
            "run/start", {"sessionId": session_id, "input": {"content": [command]}}
        )
        events = await drive(bridge, result["runId"])
        assert events[0]["content"] == [command]  # run.started records what was asked
        assert events[-1]["type"] == "run.completed"
        for bad in ("/help", "", "two  spaces"):
            reply = await bridge.call(
                "run/start",
                {"sessionId": session_id, "input": {"content": [{**command, "name": bad}]}},
                check=False,
            )
            assert reply["error"]["code"] == -32602, bad
        missing = await bridge.call("session/commands", {"sessionId": "ses_nope"})
        assert missing["error"]["data"]["code"] == "session_not_found"
    prompts = fake.sent_by_bridge("session/prompt")
    assert prompts[-1]["params"]["prompt"] == [{"type": "text", "text": "/help tools"}]
    fake.check_schema()


async def test_model_and_mode_are_read_switched_and_followed(fake: Fake) -> None:
    async with running_bridge("newline", env=fake.env) as bridge:
        session_id = await create(bridge, fake)
        settings = await bridge.result("session/settings", {"sessionId": session_id})
        assert settings == {
            "model": {
                "current": "auto",
                "available": [{"id": "auto", "name": "Auto"}, {"id": "fast", "name": "Fast"}],
            },
            "mode": {
                "current": "default",
                "available": [{"id": "default", "name": "Default"}, {"id": "yolo", "name": "YOLO"}],
            },
        }
        bad = await bridge.call(
            "session/configure", {"sessionId": session_id, "mode": "turbo"}, check=False
        )
        assert bad["error"]["data"]["code"] == "invalid_params"
        assert bad["error"]["data"]["details"]["field"] == "mode"
        switched = await bridge.result(
            "session/configure", {"sessionId": session_id, "model": "fast", "mode": "yolo"}
        )
        assert switched["model"]["current"] == "fast" and switched["mode"]["current"] == "yolo"
        event = await bridge.event("settings.updated")
        assert event["payload"] == {"type": "settings.updated", "model": "fast", "mode": "yolo"}
        assert event.get("runId") is None  # between runs: a session event
        await bridge.result("session/configure", {"sessionId": session_id, "mode": "default"})
        # the agent switching its own mode (current_mode_update) is followed, in the run
        payloads = await run_text(bridge, session_id, "MODE")
        assert of_type(payloads, "settings.updated") == [
            {"type": "settings.updated", "model": "fast", "mode": "yolo"}
        ]
        now = await bridge.result("session/settings", {"sessionId": session_id})
        assert now["mode"]["current"] == "yolo"
    assert [m["params"]["modeId"] for m in fake.sent_by_bridge("session/set_mode")] == [
        "yolo",
        "default",
    ]
    (model,) = fake.sent_by_bridge("session/set_config_option")
    assert model["params"]["configId"] == "model" and model["params"]["value"] == "fast"
    fake.check_schema()


# --------------------------------------------------------------------------- a misbehaving agent


@pytest.mark.parametrize("agent_session_id", ["s" * 100_000, "ses_1\n\x1b[31mforged"])
async def test_a_session_id_that_cannot_be_kept_is_refused(
    fake: Fake, tmp_path: Path, agent_session_id: str
) -> None:
    """A ``sessionId`` is the session's identity in the recovery record and in every
    later request: one over :data:`protocol.MAX_SESSION_ID` characters or not printable
    fails the session ``provider_contract``, and is neither journaled nor logged (a
    100,000-character one was kept, journaled and sent back with every prompt)."""
    fake.write(session_id=agent_session_id)
    state = tmp_path / "bridge-state"
    log_file = tmp_path / "bridge.log"
    args = ("--state-dir", str(state), "--log-file", str(log_file), "--log-level", "debug")
    async with running_bridge("newline", *args, env=fake.env) as bridge:
        reply = await bridge.call("session/create", fake.params(), timeout=30)
        assert reply["error"]["data"]["code"] == "provider_contract"
        fake.write()  # an agent answering a UUID: the next session is fine
        session_id = await create(bridge, fake)
        assert text_of(await run_text(bridge, session_id, "hi")) == HELLO
    needle = agent_session_id[:1000].encode()
    kept = [f for f in state.rglob("*") if f.is_file() and needle in f.read_bytes()]
    assert kept == []
    assert needle not in log_file.read_bytes()
    assert not fake.sent_by_bridge("session/prompt")[0]["params"]["sessionId"].startswith("s" * 10)


async def test_a_recovery_record_with_an_unusable_session_id_is_invalid() -> None:
    """A record written before session ids were bounded is never sent to an agent."""
    provider = gemini_provider()
    for bad in ("s" * 1001, "a\nb", "", 7):
        opaque = {"agent": "gemini", "sessionId": bad}
        with pytest.raises(BridgeError) as err:
            await provider.resume_session(None, opaque)  # type: ignore[arg-type]
        assert err.value.error_code == "recovery_invalid"
        with pytest.raises(BridgeError) as err:
            await provider.fork_session(None, opaque, None, True)  # type: ignore[arg-type]
        assert err.value.error_code == "recovery_invalid"
    assert p.session_id_ok("s" * 1000) and not p.session_id_ok("s" * 1001)


FORGED = "x\n2026-12-02 17:00:00 ERROR agent_bridge: forged \x1b[31m" + "y" * 100_000


@pytest.mark.parametrize("how", ["error", "stop_reason"])
async def test_an_agent_s_text_cannot_forge_or_flood_the_log(
    fake: Fake, tmp_path: Path, how: str
) -> None:
    """A ``session/prompt`` answered with an error whose message holds a newline, an
    escape sequence and 100,000 characters (it reached the log as it was: a forged
    record on its own line, the escape byte), or with such a ``stopReason`` (a
    100,000-character line): the run fails classified, and the log shows the text
    escaped and cut."""
    if how == "error":
        fake.write(prompt_error={"code": -32603, "message": FORGED})
    else:
        fake.write(stop_reason=FORGED)
    log_file = tmp_path / "bridge.log"
    args = ("--log-file", str(log_file), "--log-level", "debug")
    async with running_bridge("newline", *args, env=fake.env) as bridge:
        session_id = await create(bridge, fake)
        payloads = await run_text(bridge, session_id, "SCRIPTED")
        expected = "provider_failed" if how == "error" else "provider_contract"
        assert payloads[-1]["error"]["code"] == expected
        assert "forged" not in json.dumps(payloads)
    lines = log_file.read_text().splitlines()
    assert any("forged" in line for line in lines)  # logged, escaped
    assert not [line for line in lines if line.startswith("2026-12-02 17:00:00")]
    assert "\x1b" not in log_file.read_text()
    assert max(len(line) for line in lines) < 3000


async def test_a_terminal_keeps_bounded_output_whatever_limit_the_agent_names(
    fake: Fake,
) -> None:
    """``terminal/create`` with an ``outputByteLimit`` of 10**15 and a command printing
    about 20 MB: the bridge keeps at most ``MAX_OUTPUT_LIMIT`` bytes (8 MiB) and says the output
    was truncated (it kept all of it in memory, and sent all of it back, for as long as
    the agent wanted: any command's whole output)."""
    fake.write(output_byte_limit=10**15)
    async with running_bridge("newline", env=fake.env) as bridge:
        session_id = await create(bridge, fake, clientTerminal=True)
        said = text_of(await run_text(bridge, session_id, "TERM:seq 1 2800000", timeout=50))
    size = int(said.split(": ")[1].split(" bytes")[0])
    assert said.endswith(", truncated True") and 0 < size <= 8 * 1024 * 1024, said


async def test_fs_callbacks_refuse_what_is_not_a_regular_file(fake: Fake) -> None:
    """A named pipe in the workspace: ``fs/read_text_file`` (and ``fs/write_text_file``)
    of it opened it on the bridge's event loop and waited for a writer (a reader) for
    ever -- every session of the bridge stopped, and the bridge no longer answered
    anything.  Now each is refused at once, and the bridge goes on."""
    fifo = fake.work / "pipe"
    os.mkfifo(fifo)
    work = fake.work.resolve()
    async with running_bridge("newline", env=fake.env) as bridge:
        on = await create(bridge, fake, clientFs=True)
        for what in ("READ", "WRITE"):
            said = text_of(await run_text(bridge, on, f"{what}:{work}/pipe", timeout=10))
            assert said.startswith("error "), said
        assert "error -32002" in text_of(await run_text(bridge, on, f"READ:{work}"))
        assert text_of(await run_text(bridge, on, "hi")) == HELLO
    assert fifo.exists() and not fifo.is_file()


async def test_a_prompt_answer_over_the_message_limit_fails_the_run_at_once(fake: Fake) -> None:
    """A ``session/prompt`` answer over the 16 MiB message limit (a 17 MiB ``_meta``)
    was skipped by the framer, and the run waited for its answer for ever (until an
    interrupt, then the agent stopped).  Now the start of the frame names the request it
    answers, which fails at once; the agent is not sent an error for its own answer, and
    the session goes on."""
    fake.write(meta_bytes=17 * 1024 * 1024)
    async with running_bridge("newline", env=fake.env) as bridge:
        session_id = await create(bridge, fake)
        payloads = await run_text(bridge, session_id, "SCRIPTED", timeout=15)
        assert payloads[-1]["type"] == "run.failed"
        assert payloads[-1]["error"]["code"] == "provider_failed"
        fake.write()
        assert text_of(await run_text(bridge, session_id, "hi")) == HELLO
    assert not [r for r in fake.replies_of_bridge() if "error" in r]


async def test_a_run_whose_agent_speaks_of_another_session_says_so(fake: Fake) -> None:
    """An agent that streams a turn under another ``sessionId`` (and asks permission
    for it): none of it is the run's, and the run said nothing of it -- it completed as
    if the agent had answered with nothing.  Now one ``acp_other_session`` diagnostic
    tells the host; the other session's text is still not shown, its permission request
    answered cancelled without asking."""
    chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "lost"}}
    lines: list[str] = []
    for i in range(3):
        update = {"sessionId": "another", "update": chunk}
        lines.append(json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": update}))
        ask = {"sessionId": "another", "options": [], "toolCall": {"toolCallId": "x"}}
        request = {"jsonrpc": "2.0", "id": 900 + i, "method": "session/request_permission"}
        lines.append(json.dumps({**request, "params": ask}))
    fake.write(raw_lines=lines)
    async with running_bridge("newline", env=fake.env) as bridge:
        session_id = await create(bridge, fake)
        payloads = await run_text(bridge, session_id, "SCRIPTED")
        assert payloads[-1] == {"type": "run.completed", "stopReason": "end_turn"}
        assert "lost" not in text_of(payloads)
        said = [d for d in of_type(payloads, "diagnostic") if d["code"] == "acp_other_session"]
        assert len(said) == 1
        assert not of_type(payloads, "interaction.requested")
        again = await run_text(bridge, session_id, "hi")
        assert text_of(again) == HELLO and "acp_other_session" not in codes(again)
    answers = [r for r in fake.replies_of_bridge() if r.get("id") in (900, 901, 902)]
    assert [a.get("result") for a in answers] == [{"outcome": {"outcome": "cancelled"}}] * 3


async def test_a_permission_request_with_nothing_to_allow_with_is_refused_unasked(
    fake: Fake,
) -> None:
    """``session/request_permission`` offering only a reject option, or no option: the
    host was asked (``modes: ["once"]``), and its "allow" went back as the reject option
    (or ``cancelled``) -- the user's answer silently turned round.  Now it is refused
    without asking, and one ``acp_permission_cannot_allow`` warning says so."""
    only_reject = [{"optionId": "no", "name": "No", "kind": "reject_once"}]
    lines = []
    for i, options in enumerate((only_reject, [], only_reject)):
        call = {"toolCallId": f"t{i}", "title": "rm -rf /", "kind": "execute"}
        params = {"sessionId": "$SID", "options": options, "toolCall": call}
        request = {"jsonrpc": "2.0", "id": 800 + i, "method": "session/request_permission"}
        lines.append(json.dumps({**request, "params": params}))
    fake.write(raw_lines=lines)
    async with running_bridge("newline", env=fake.env) as bridge:
        session_id = await create(bridge, fake)
        payloads = await run_text(bridge, session_id, "SCRIPTED", allow())
        assert payloads[-1] == {"type": "run.completed", "stopReason": "end_turn"}
        assert not of_type(payloads, "interaction.requested")
        said = [d for d in of_type(payloads, "diagnostic") if "cannot_allow" in d["code"]]
        assert len(said) == 1
    answers = [r for r in fake.replies_of_bridge() if r.get("id") in (800, 801, 802)]
    no = {"outcome": {"outcome": "selected", "optionId": "no"}}
    assert [a.get("result") for a in answers] == [no, {"outcome": {"outcome": "cancelled"}}, no]


async def test_an_agent_speaking_another_protocol_version_is_not_available(fake: Fake) -> None:
    """An agent answering ``initialize`` with protocol version 0: ``providers/list``
    said it was available, and every ``session/create`` then failed
    ``provider_unavailable``.  Now the probe says it is not, and why."""
    fake.write(protocol_version=0)
    async with running_bridge("newline", env=fake.env) as bridge:
        listed = await bridge.result("providers/list", {"probe": True}, timeout=40)
        found = next(d for d in listed["providers"] if d["id"] == "fake")
        assert found["availability"]["status"] == "unavailable"
        assert "protocol version" in found["availability"]["reason"]
        reply = await bridge.call("session/create", fake.params(), timeout=30)
        assert reply["error"]["data"]["code"] == "provider_unavailable"


async def test_an_agent_offering_a_huge_model_list_is_kept_bounded(fake: Fake) -> None:
    """``session/new`` offering 250,000 models (a 10 MB answer): each session kept all
    of them (+50 MB of the bridge's memory a session), ``session/settings`` answered
    11.8 MB and the provider's descriptor 3.9 MB.  Now the first ``MAX_SETTING_VALUES``
    (1,000) are kept and offered; a model among them can still be chosen."""
    fake.write(models=250_000)
    async with running_bridge("newline", env=fake.env) as bridge:
        session_id = await create(bridge, fake)
        settings = await bridge.result("session/settings", {"sessionId": session_id})
        available = [v["id"] for v in settings["model"]["available"]]
        assert available == [f"model-{i}" for i in range(1000)]
        listed = await bridge.result("providers/list", {})
        d = next(x for x in listed["providers"] if x["id"] == "fake")
        model = next(o for o in d["options"] if o["name"] == "model")
        assert len(model["values"]) == 1000
        switched = await bridge.result(
            "session/configure", {"sessionId": session_id, "model": "model-999"}
        )
        assert switched["model"]["current"] == "model-999"
        late = await bridge.call(
            "session/configure", {"sessionId": session_id, "model": "model-1000"}, check=False
        )
        assert late["error"]["data"]["code"] == "invalid_params"


def test_modes_and_values_out_of_bounds_are_not_kept() -> None:
    modes = {
        "currentModeId": "m" * 1001,
        "availableModes": [{"id": "m" * 1001}, {"id": ""}, {"id": "ok", "name": "n" * 500}],
    }
    setting = p.mode_setting(modes)
    assert setting is not None and setting.current is None
    assert [(v.id, len(v.name)) for v in setting.available] == [("ok", 200)]
    assert p.mode_ids({"availableModes": [{"id": str(i)} for i in range(5000)]}) == tuple(
        str(i) for i in range(1000)
    )


async def test_another_session_s_settings_and_commands_are_not_this_session_s(
    fake: Fake,
) -> None:
    """A ``current_mode_update`` and an ``available_commands_update`` naming another
    ``sessionId`` changed this session's mode and commands (and told the host so with
    ``settings.updated``); now they are not the session's."""
    other = [
        {"sessionUpdate": "current_mode_update", "currentModeId": "yolo"},
        {"sessionUpdate": "available_commands_update", "availableCommands": [{"name": "evil"}]},
    ]
    lines = [
        json.dumps(
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {"sessionId": "another", "update": update},
            }
        )
        for update in other
    ]
    fake.write(raw_lines=lines)
    async with running_bridge("newline", env=fake.env) as bridge:
        session_id = await create(bridge, fake)
        payloads = await run_text(bridge, session_id, "SCRIPTED")
        assert not of_type(payloads, "settings.updated")
        settings = await bridge.result("session/settings", {"sessionId": session_id})
        assert settings["mode"]["current"] == "default"
        commands = await bridge.result("session/commands", {"sessionId": session_id})
        assert [c["name"] for c in commands["commands"]] == ["help"]
