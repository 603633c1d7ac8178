"""The Codex adapter end to end: the real bridge drives the real, pinned `codex` CLI
(scripts/install-provider-clis.sh), whose model provider is the Responses stand-in on
127.0.0.1 (tests/standins/responses_server.py).  Nothing leaves loopback: the private
CODEX_HOME's config.toml names the stand-in and turns off plugin sync and analytics.

Without the CLI these tests are skipped loudly; in CI (AGENT_BRIDGE_REQUIRE_CLIS=1) a
missing CLI fails them.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from bridge_client import allow, deny, drive, of_type, start, text_of
from conftest import running_bridge
from provider_clis import pinned, require_cli
from standins.responses_server import (
    CODEX_OFFLINE_CONFIG as CONFIG,
)
from standins.responses_server import ResponsesStandIn, reply, text

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

Msg = dict[str, Any]


class Setup:
    def __init__(self, base: Path, server: ResponsesStandIn, codex: str) -> None:
        self.base = base
        self.server = server
        self.codex = codex
        self.work = base / "work"
        self.codex_home = base / "codex-home"

    @property
    def env(self) -> dict[str, str]:
        return {
            "AGENT_BRIDGE_CODEX_PATH": self.codex,
            "HOME": str(self.base / "home"),
            "TMPDIR": str(self.base / "tmp"),
            "STUB_API_KEY": "dummy-key",
        }

    def options(self) -> Msg:
        return {
            "codexHome": str(self.codex_home),
            "approvalPolicy": "untrusted",
            "sandbox": "workspace-write",
            "config": [f'model_providers.stub.base_url="{self.server.base_url}"'],
        }

    def session_params(self) -> Msg:
        return {"provider": "codex", "workspace": str(self.work), "options": self.options()}


@contextmanager
def codex_setup(tmp_path: Path, **standin: Any) -> Iterator[Setup]:
    """Yields the real codex's :class:`Setup` in ``tmp_path`` (its home, workspace,
    temporary folder and ``CODEX_HOME`` with :data:`CONFIG`) against a Responses stand-in
    made with ``standin`` (e.g. its ``fallback``), which stops on leaving."""
    codex = require_cli("codex")
    for name in ("home", "work", "tmp", "codex-home"):
        (tmp_path / name).mkdir()
    (tmp_path / "codex-home" / "config.toml").write_text(CONFIG)
    with ResponsesStandIn(**standin) as server:
        yield Setup(tmp_path, server, codex)


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    with codex_setup(tmp_path) as s:
        yield s
        server = s.server
        assert server.errors == []
        # Only the model endpoint was used, and only through the stand-in.
        assert {r.path for r in server.requests} <= {"/v1/responses"}


async def create(bridge: Any, s: Setup) -> str:
    result = await bridge.result("session/create", s.session_params(), timeout=30)
    session_id: str = result["session"]["sessionId"]
    return session_id


async def test_real_codex_streams_text_and_reports_itself(setup: Setup) -> None:
    s = setup
    env = {**s.env, "CODEX_HOME": str(s.codex_home)}
    async with running_bridge("newline", env=env) as bridge:
        listed = await bridge.result("providers/list", {"probe": True}, timeout=30)
        codex = next(p for p in listed["providers"] if p["id"] == "codex")
        assert codex["availability"]["status"] == "available"
        version = codex["availability"]["version"]
        assert version == (pinned("0.171.0") or version)
        # The stub provider needs no OpenAI login and has no account: not guessed.
        assert codex["availability"].get("authentication", "unknown") == "unknown"
        s.server.script(reply(text("Hello from the script", deltas=3)))
        session = await create(bridge, s)
        events = await drive(bridge, await start(bridge, session, "say hi"), timeout=30)
        assert events[-1]["type"] == "run.completed"
        assert text_of(events) == "Hello from the script"
        assert len(of_type(events, "text.delta")) >= 2  # streamed, not one block
        usage = of_type(events, "usage")[-1]
        assert usage["context"]["usedTokens"] > 0 and usage["cumulative"]["inputTokens"] > 0
        await bridge.result("session/close", {"sessionId": session}, timeout=20)
    assert s.server.response_bodies()[-1]["model"] == "stub-model"


PNG_B64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def _parts(body: Msg) -> list[Msg]:
    """Every content part of the user messages of a Responses request."""
    out: list[Msg] = []
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, list):
                out += [c for c in content if isinstance(c, dict)]
    return out


async def test_real_codex_receives_images_files_and_resources(setup: Setup) -> None:
    """Run input blocks reach the real Codex's model request: an inline image as an
    input_image with its data URL, a workspace image (localImage) as an input_image, the
    file reference and the embedded resource as text."""
    import os

    s = setup
    (s.work / "shot.png").write_bytes(base64.b64decode(PNG_B64))
    (s.work / "main.py").write_text("print('hi')\n")
    content = [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image", "mimeType": "image/png", "data": PNG_B64},
        {"type": "image", "path": "shot.png"},
        {"type": "file", "path": "main.py", "startLine": 1, "endLine": 1},
        {"type": "resource", "text": "x = 1", "uri": "untitled:1"},
    ]
    env = {**s.env, "CODEX_HOME": str(s.codex_home)}
    async with running_bridge("newline", env=env) as bridge:
        s.server.script(reply(text("I see it.")))
        session = await create(bridge, s)
        await bridge.result("run/start", {"sessionId": session, "input": {"content": content}})
        assert (await bridge.terminal(timeout=30))["payload"]["type"] == "run.completed"
        await bridge.result("session/close", {"sessionId": session}, timeout=20)
    parts = _parts(s.server.response_bodies()[-1])
    images = [p["image_url"] for p in parts if p.get("type") == "input_image"]
    assert len(images) == 2, parts
    assert f"data:image/png;base64,{PNG_B64}" in images
    assert all(i.startswith("data:image/") for i in images)
    texts = "\n".join(p.get("text", "") for p in parts if p.get("type") == "input_text")
    assert "What is in this picture?" in texts
    assert f"@{os.path.realpath(s.work / 'main.py')} (lines 1-1)" in texts
    assert '<context ref="untitled:1">\nx = 1\n</context>' in texts


async def test_real_codex_command_approved_and_declined(setup: Setup) -> None:
    s = setup
    async with running_bridge("newline", env=s.env) as bridge:
        session = await create(bridge, s)
        events = await drive(
            bridge, await start(bridge, session, "TOOL:touch approved.txt"), allow(), timeout=30
        )
        assert events[-1]["type"] == "run.completed"
        asked = of_type(events, "interaction.requested")[0]["request"]
        assert asked["action"] == "command" and "touch approved.txt" in asked["command"]
        tools = of_type(events, "tool.activity")
        assert tools[0]["status"] == "started" and tools[-1]["status"] == "completed"
        assert tools[-1]["exitCode"] == 0
        assert (s.work / "approved.txt").exists()
        assert "Process exited with code 0" in s.server.function_call_outputs()[-1]["output"]

        events = await drive(
            bridge, await start(bridge, session, "TOOL:touch declined.txt"), deny, timeout=30
        )
        assert events[-1]["type"] == "run.completed"
        assert of_type(events, "tool.activity")[-1]["status"] == "failed"
        assert not (s.work / "declined.txt").exists()
        assert "rejected by user" in s.server.function_call_outputs()[-1]["output"]


async def test_real_codex_interrupt_of_a_slow_stream(setup: Setup) -> None:
    s = setup
    async with running_bridge("newline", env=s.env) as bridge:
        session = await create(bridge, s)
        run = await start(bridge, session, "SLOW")
        interrupted_at: list[float] = []

        async def on_event(payload: Msg) -> None:
            if payload["type"] == "text.delta" and not interrupted_at:
                interrupted_at.append(time.monotonic())
                await bridge.result("run/interrupt", {"runId": run})

        events = await drive(bridge, run, on_event=on_event, timeout=30)
        assert events[-1]["type"] == "run.interrupted"
        assert events[-1].get("forced", False) is False
        assert time.monotonic() - interrupted_at[0] < 3
        assert "word39" not in text_of(events)
        # The model stream was dropped, and the session goes on.
        deadline = time.monotonic() + 5
        while not s.server.response_requests()[-1].disconnected:
            assert time.monotonic() < deadline, "the interrupted stream was not dropped"
            time.sleep(0.05)
        events = await drive(bridge, await start(bridge, session, "hello"), timeout=30)
        assert events[-1]["type"] == "run.completed"


async def test_real_codex_resume_in_a_fresh_bridge(setup: Setup) -> None:
    s = setup
    async with running_bridge("newline", env=s.env) as bridge:
        session = await create(bridge, s)
        events = await drive(
            bridge, await start(bridge, session, "remember the word banana"), timeout=30
        )
        assert events[-1]["type"] == "run.completed"
        record = (await bridge.result("session/export", {"sessionId": session}))["record"]
    opaque = record["opaque"]
    assert opaque["codexHome"] == str(s.codex_home) and opaque["sandbox"] == "workspace-write"
    assert json.loads(json.dumps(record)) == record  # plain JSON, as a host would store it
    async with running_bridge("content-length", env=s.env) as bridge:
        resumed = await bridge.result(
            "session/resume",
            {"record": record, "options": {"config": s.options()["config"]}},
            timeout=30,
        )
        session = resumed["session"]["sessionId"]
        events = await drive(bridge, await start(bridge, session, "after resume"), timeout=30)
        assert events[-1]["type"] == "run.completed"
    body = s.server.response_bodies()[-1]
    users = [
        "".join(c.get("text", "") for c in item.get("content", []))
        for item in body["input"]
        if item.get("role") == "user"
    ]
    assert "remember the word banana" in users and users[-1] == "after resume"
    assistant = [i for i in body["input"] if i.get("role") == "assistant"]
    assert assistant, "the earlier reply was not in the resumed history"


async def test_real_codex_failures_are_diagnosed(setup: Setup) -> None:
    s = setup
    async with running_bridge("newline", env=s.env) as bridge:
        # --strict-config: a config codex cannot read fails the session instead of
        # codex silently falling back to its defaults (and their network endpoints).
        bad_home = s.base / "codex-home-bad"
        bad_home.mkdir()
        (bad_home / "config.toml").write_text(CONFIG + "no_such_key_xyz = 1\n")
        params = s.session_params()
        params["options"]["codexHome"] = str(bad_home)
        reply = await bridge.call("session/create", params, timeout=30)
        assert reply["error"]["data"]["code"] == "provider_unavailable"
        # A model error that is not retried (HTTP 400) fails the run, classified, with
        # no upstream text in the events.
        session = await create(bridge, s)
        events = await drive(bridge, await start(bridge, session, "FAIL:quota gone"), timeout=30)
        assert events[-1]["type"] == "run.failed"
        assert events[-1]["error"]["code"] == "provider_failed"
        assert "quota gone" not in json.dumps(events[1:])  # [0] is run.started
        # The session is still usable.
        events = await drive(bridge, await start(bridge, session, "hello"), timeout=30)
        assert events[-1]["type"] == "run.completed"
    assert b"no_such_key_xyz" in bridge.stderr  # the reason is in the bridge's log


async def test_real_codex_model_and_mode_switch_between_runs(setup: Setup) -> None:
    """``session/settings`` shows the real Codex's model catalogue (``model/list``) and
    its approval presets; ``session/configure`` switches the model and the mode, which
    the next ``turn/start`` carries: the stand-in's next request names the chosen model
    and the command that needed an approval before now runs without one."""
    s = setup
    async with running_bridge("newline", env=s.env) as bridge:
        session = await create(bridge, s)
        deadline = time.monotonic() + 10
        while True:  # model/list is read in the background
            settings = await bridge.result("session/settings", {"sessionId": session})
            if settings["model"].get("available") or time.monotonic() > deadline:
                break
            await anyio.sleep(0.05)
        assert settings["model"]["current"] == "stub-model"
        assert settings["model"]["available"], settings  # model/list's catalogue
        assert {m["id"] for m in settings["mode"]["available"]} == {
            "read-only",
            "auto",
            "full-access",
        }
        assert settings["mode"].get("current") is None  # untrusted is none of the presets
        events = await drive(bridge, await start(bridge, session, "TOOL:touch a.txt"), allow())
        assert events[-1]["type"] == "run.completed"
        assert of_type(events, "interaction.requested")  # untrusted: asked
        bad = await bridge.call(
            "session/configure", {"sessionId": session, "mode": "reckless"}, check=False
        )
        assert bad["error"]["data"]["code"] == "invalid_params"
        switched = await bridge.result(
            "session/configure",
            {"sessionId": session, "model": "stand-in-2", "mode": "full-access"},
        )
        assert switched["model"]["current"] == "stand-in-2"
        assert switched["mode"]["current"] == "full-access"
        update = await bridge.event("settings.updated")
        assert update["payload"]["model"] == "stand-in-2"
        assert update["payload"]["mode"] == "full-access"
        events = await drive(bridge, await start(bridge, session, "TOOL:touch b.txt"), deny)
        assert events[-1]["type"] == "run.completed"
        assert not of_type(events, "interaction.requested")  # never asks now
        # The real Codex answers the turn's overrides with thread/settings/updated; it
        # names what session/configure chose already, so nothing is reported twice (a
        # misread of its shape would show as a second settings.updated or a diagnostic).
        assert of_type(events, "settings.updated") == []
        assert not [d for d in of_type(events, "diagnostic") if "unexpected" in d["code"]]
        assert (s.work / "b.txt").exists()
        record = (await bridge.result("session/export", {"sessionId": session}))["record"]
        assert record["opaque"]["model"] == "stand-in-2"
        assert record["opaque"]["approvalPolicy"] == "never"
    models = [body["model"] for body in s.server.response_bodies()]
    assert models[0] == "stub-model" and models[-1] == "stand-in-2", models


async def test_real_codex_reroute_is_a_diagnostic_not_a_settings_change(setup: Setup) -> None:
    """When the model endpoint answers from another model (its ``OpenAI-Model`` header),
    the real Codex reports ``model/rerouted`` for that turn and keeps the thread's model
    (no ``thread/settings/updated``): the host gets the ``codex_model_rerouted``
    diagnostic and no ``settings.updated``; the next request asks for the same model."""
    s = setup
    s.server.script(
        reply(text("rerouted"), headers={"OpenAI-Model": "stand-in-safer"}), reply(text("next"))
    )
    async with running_bridge("newline", env=s.env) as bridge:
        session = await create(bridge, s)
        events = await drive(bridge, await start(bridge, session, "one"))
        assert events[-1]["type"] == "run.completed"
        assert "codex_model_rerouted" in {d["code"] for d in of_type(events, "diagnostic")}
        assert of_type(events, "settings.updated") == []
        settings = await bridge.result("session/settings", {"sessionId": session})
        assert settings["model"]["current"] == "stub-model"
        events = await drive(bridge, await start(bridge, session, "two"))
        assert events[-1]["type"] == "run.completed" and text_of(events) == "next"
    assert [body["model"] for body in s.server.response_bodies()] == ["stub-model"] * 2


def _skill(home: Path, name: str, body: str) -> None:
    folder = home / "skills" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: The {name} skill of the test\n---\n{body}\n"
    )


async def test_real_codex_skills_are_commands(setup: Setup) -> None:
    """The real Codex's skills (``skills/list``) are the session's commands; a command
    block invokes one as Codex's TUI does (``$name`` and a skill item), so the skill's
    instructions reach the model; a skill added meanwhile (``skills/changed``) is
    reported as ``commands.updated``; a name that is no skill is refused."""
    s = setup
    _skill(s.codex_home, "greet", "GREET-SKILL-BODY: answer with a greeting.")
    async with running_bridge("newline", env=s.env) as bridge:
        session = await create(bridge, s)
        listed = await bridge.result("session/commands", {"sessionId": session})
        assert listed["known"] is True
        names = {c["name"]: c for c in listed["commands"]}
        assert names["greet"]["description"] == "The greet skill of the test"
        command = [{"type": "command", "name": "greet", "arguments": "the team"}]
        reply = await bridge.result(
            "run/start", {"sessionId": session, "input": {"content": command}}
        )
        events = await drive(bridge, reply["runId"], timeout=30)
        assert events[-1]["type"] == "run.completed"
        request = json.dumps(s.server.response_bodies()[-1]["input"])
        assert "$greet the team" in request
        assert "GREET-SKILL-BODY" in request  # Codex injected the skill's instructions

        # a name the session's commands do not hold: refused before a run starts
        unknown = [{"type": "command", "name": "no-such-skill"}]
        refused = await bridge.call(
            "run/start", {"sessionId": session, "input": {"content": unknown}}, 30
        )
        error = refused["error"]["data"]
        assert error["code"] == "invalid_params", error
        assert "no-such-skill" in error["details"]["reason"]
        assert "no-such-skill" not in json.dumps(s.server.response_bodies())  # never sent

        _skill(s.codex_home, "farewell", "Say goodbye.")
        deadline = time.monotonic() + 15
        while True:
            listed = await bridge.result("session/commands", {"sessionId": session})
            if "farewell" in {c["name"] for c in listed["commands"]}:
                break
            assert time.monotonic() < deadline, "skills/changed was not followed"
            await anyio.sleep(0.1)
        events = await drive(bridge, await start(bridge, session, "hello"), timeout=30)
        assert events[-1]["type"] == "run.completed"
        updated = of_type(events, "commands.updated")
        assert updated and "farewell" in {c["name"] for c in updated[-1]["commands"]}


def _agent_responder(namespace: str = "multi_agent_v1") -> Any:
    """The model for a run where the main agent spawns a subagent (Codex's multi-agent
    ``spawn_agent`` tool), the subagent runs a command and answers, and the main agent
    waits for it (``wait_agent``) and answers: each request answered by what it holds."""
    from standins.responses_server import _input_items, last_user_text, reply, tool_call

    def respond(body: Msg) -> Msg:
        items = _input_items(body)
        outputs = {
            i.get("call_id"): i.get("output")
            for i in items
            if i.get("type") == "function_call_output"
        }
        user = last_user_text(body)
        if user.startswith("CHILD-TASK"):  # the subagent's own thread
            if "child-cmd" in outputs:
                return reply(text("child finished"))
            return reply(tool_call("echo child-ran", call_id="child-cmd"))
        if "wait-1" in outputs:
            return reply(text("ALL DONE"))
        if "spawn-1" in outputs:
            spawned = outputs["spawn-1"]
            agent = json.loads(spawned if isinstance(spawned, str) else json.dumps(spawned))
            call = tool_call(
                "",
                name="wait_agent",
                arguments={"targets": [agent["agent_id"]], "timeout_ms": 20000},
                call_id="wait-1",
            )
            return reply({**call, "namespace": namespace})
        if user.strip() == "SPAWN":
            call = tool_call(
                "", name="spawn_agent", arguments={"message": "CHILD-TASK"}, call_id="spawn-1"
            )
            return reply({**call, "namespace": namespace})
        return reply(text("?"))

    return respond


async def test_real_codex_agent_thread_is_a_subagent(tmp_path: Path) -> None:
    """The real Codex spawns an agent thread (its multi-agent tools, driven by the
    stand-in): the spawnAgent call is the subagent's tool call (started running, usage,
    completed with the child's answer), the child's command and its approval carry the
    spawn call as parentToolCallId, the child's words are not the run's reply, and the
    wait call is an ordinary tool call."""
    with codex_setup(tmp_path, fallback=_agent_responder()) as s:
        async with running_bridge("newline", env=s.env) as bridge:
            session = await create(bridge, s)
            asked: list[Msg] = []

            def answer(params: Msg) -> Msg:
                asked.append(params["request"])
                return {"kind": "approval", "decision": "allow", "mode": "once"}

            events = await drive(bridge, await start(bridge, session, "SPAWN"), answer, timeout=45)
        assert s.server.errors == []
    assert events[-1]["type"] == "run.completed", events[-1]
    assert text_of(events) == "ALL DONE"  # "child finished" is not the run's reply
    tools = of_type(events, "tool.activity")
    spawn = [t for t in tools if t["toolCallId"] == "spawn-1"]
    assert spawn[0]["status"] == "started" and spawn[0]["name"] == "spawnAgent"
    assert spawn[0]["subagent"] == {"description": "CHILD-TASK", "status": "running"}
    assert spawn[-1]["status"] == "completed" and spawn[-1]["output"] == "child finished"
    assert spawn[-1]["subagent"]["status"] == "completed"
    usage = spawn[-1]["subagent"]["usage"]
    assert usage["toolUses"] == 1 and usage["totalTokens"] > 0 and usage["durationMs"] >= 0
    child = [t for t in tools if t["toolCallId"] == "child-cmd"]
    assert child[0]["status"] == "started" and child[-1]["status"] == "completed"
    assert {t.get("parentToolCallId") for t in child} == {"spawn-1"}
    assert "parentToolCallId" not in spawn[0]
    assert [a.get("parentToolCallId") for a in asked] == ["spawn-1"]  # the child asked
    wait = [t for t in tools if t["toolCallId"] == "wait-1"]
    assert wait[0]["name"] == "wait" and wait[-1]["status"] == "completed"
    assert "child finished" in wait[-1]["output"]
    assert "parentToolCallId" not in wait[0]
    assert "codex_stray_frame" not in {e.get("code") for e in of_type(events, "diagnostic")}


def _outliving_responder() -> Any:
    """The model for runs where the main agent spawns an agent and ends its turn without
    waiting: the agent's command (which needs an approval) comes 3 s later, after the
    spawning run ended; the main agent's next turn streams slowly (so the agent's held
    approval is answered while it runs)."""
    from standins.responses_server import _input_items, last_user_text, reply, tool_call

    def respond(body: Msg) -> Msg:
        items = _input_items(body)
        outputs = {
            i.get("call_id"): i.get("output")
            for i in items
            if i.get("type") == "function_call_output"
        }
        user = last_user_text(body)
        if user.startswith("CHILD-TASK"):
            if "child-cmd" in outputs:
                return reply(text("child finished"))
            return reply(tool_call("touch child.txt", call_id="child-cmd", delay=3.0))
        if user.strip() == "SPAWN" and "spawn-1" not in outputs:
            call = tool_call(
                "", name="spawn_agent", arguments={"message": "CHILD-TASK"}, call_id="spawn-1"
            )
            return reply({**call, "namespace": "multi_agent_v1"})
        if user.strip() == "SPAWN":
            return reply(text("PARENT DONE"))
        return reply(text("the second turn goes slowly on", deltas=6, delay=0.5))

    return respond


async def test_real_codex_agent_outliving_its_run_goes_on_in_the_next(tmp_path: Path) -> None:
    """The real Codex's agent thread outlives the run that spawned it: at that run's end
    its spawn call ends ``completed`` with the subagent still ``running`` (not
    ``failed``); what the agent does between runs is not dropped: its command and the
    approval it asks are held and come in the next run, under the spawn call, and the
    approval answered there lets the command run."""
    with codex_setup(tmp_path, fallback=_outliving_responder()) as s:
        async with running_bridge("newline", env=s.env) as bridge:
            session = await create(bridge, s)
            first = await drive(bridge, await start(bridge, session, "SPAWN"), timeout=45)
            assert first[-1]["type"] == "run.completed" and text_of(first) == "PARENT DONE"
            spawn = [t for t in of_type(first, "tool.activity") if t["toolCallId"] == "spawn-1"]
            assert [t["status"] for t in spawn] == ["started", "completed"]
            assert spawn[-1]["subagent"]["status"] == "running"
            assert of_type(first, "interaction.requested") == []
            with anyio.fail_after(30):  # the agent asked its model
                while "CHILD-TASK" not in json.dumps(s.server.response_bodies()):
                    await anyio.sleep(0.1)
            # its reply (the command) takes 3 s: then the approval is with the bridge
            await anyio.sleep(5)
            assert not (s.work / "child.txt").exists()
            asked: list[Msg] = []

            def answer(params: Msg) -> Msg:
                asked.append(params["request"])
                return {"kind": "approval", "decision": "allow", "mode": "once"}

            second = await drive(bridge, await start(bridge, session, "go on"), answer, timeout=45)
        assert s.server.errors == []
    assert second[-1]["type"] == "run.completed"
    assert [a.get("parentToolCallId") for a in asked] == ["spawn-1"]
    child = [t for t in of_type(second, "tool.activity") if t["toolCallId"] == "child-cmd"]
    assert child and child[0]["status"] == "started"
    assert {t.get("parentToolCallId") for t in child} == {"spawn-1"}
    assert (s.work / "child.txt").exists()  # approved in the next run, it ran


async def test_real_codex_limits_not_available_without_a_chatgpt_login(setup: Setup) -> None:
    """provider/limits asks the live session's real Codex (account/rateLimits/read); with
    a key-authenticated model provider Codex refuses the read ("authentication
    required"), which is 'not available': the answer is what the bridge knows, no
    error, and the refusal is logged, not retried."""
    s = setup
    env = {**s.env, "CODEX_HOME": str(s.codex_home)}
    async with running_bridge("newline", "--log-level", "info", env=env) as bridge:
        for _ in range(2):  # no session yet: a short-lived app-server asked, once
            limits = await bridge.result("provider/limits", {"provider": "codex"}, timeout=20)
            assert limits["provider"] == "codex" and limits.get("meters", []) == []
        log = bytes(bridge.stderr).decode("utf-8", "replace")
        assert log.count("rate limits are not available here") == 1, log[-2000:]
        await create(bridge, s)
        for _ in range(2):  # the live session's app-server, once
            limits = await bridge.result("provider/limits", {"provider": "codex"}, timeout=20)
            assert limits["provider"] == "codex" and limits.get("meters", []) == []
        log = bytes(bridge.stderr).decode("utf-8", "replace")
    assert log.count("rate limits are not available here") == 2, log[-2000:]
    assert "authentication required" in log


def _v2_responder() -> Any:
    """The model for multi-agent v2 (``collaboration`` namespace): the main agent spawns
    ``helper`` (``spawn_agent`` with a task name), the helper runs a command and answers,
    the main agent waits (short sleeps) until the helper's answer reaches it, then
    answers."""
    from standins.responses_server import _input_items, reply, tool_call

    def respond(body: Msg) -> Msg:
        items = _input_items(body)
        outputs = {i.get("call_id") for i in items if i.get("type") == "function_call_output"}
        to_helper = any(
            i.get("type") == "agent_message" and str(i.get("recipient", "")).endswith("/helper")
            for i in items
        )
        if to_helper:  # the helper's own thread
            if "child-cmd" in outputs:
                return reply(text("helper finished"))
            return reply(tool_call("echo helper-ran", call_id="child-cmd"))
        answered = any(
            i.get("type") == "agent_message" and str(i.get("author", "")).endswith("/helper")
            for i in items
        )
        pauses = sum(1 for o in outputs if str(o).startswith("pause-"))
        if answered or pauses >= 20:
            return reply(text("ALL DONE"))
        if "spawn-2" in outputs:  # wait for the helper's answer within the turn
            return reply(tool_call("sleep 0.5", call_id=f"pause-{pauses}"))
        call = tool_call(
            "",
            name="spawn_agent",
            arguments={"task_name": "helper", "message": "CHILD-TASK"},
            call_id="spawn-2",
        )
        return reply({**call, "namespace": "collaboration"})

    return respond


async def test_real_codex_multi_agent_v2_subagent(tmp_path: Path) -> None:
    """With multi-agent v2 a spawn is a subAgentActivity item, not a collab call: the same
    tree (the spawn's tool call runs the helper, the helper's command carries its id)."""
    with codex_setup(tmp_path, fallback=_v2_responder()) as s:
        params = s.session_params()
        params["options"]["config"].append("features.multi_agent_v2=true")
        params["options"]["approvalPolicy"] = "never"
        async with running_bridge("newline", env=s.env) as bridge:
            created = await bridge.result("session/create", params, timeout=30)
            session = created["session"]["sessionId"]
            events = await drive(bridge, await start(bridge, session, "SPAWN"), timeout=45)
        assert s.server.errors == []
    assert events[-1]["type"] == "run.completed", events[-1]
    assert "helper finished" not in text_of(events)
    tools = of_type(events, "tool.activity")
    spawn = [t for t in tools if t["toolCallId"] == "spawn-2"]
    assert spawn[0]["status"] == "started" and spawn[0]["name"] == "spawnAgent"
    assert spawn[0]["subagent"] == {"description": "/root/helper", "status": "running"}
    assert spawn[-1]["status"] == "completed" and spawn[-1]["output"] == "helper finished"
    assert spawn[-1]["subagent"]["usage"]["toolUses"] == 1
    child = [t for t in tools if t["toolCallId"] == "child-cmd"]
    assert child and {t.get("parentToolCallId") for t in child} == {"spawn-2"}
    assert child[-1]["status"] == "completed"
    codes = {e.get("code") for e in of_type(events, "diagnostic")}
    assert "codex_stray_frame" not in codes and "codex_unmapped_item" not in codes
