"""The ACP adapter end to end with the real, pinned ACP agents
(scripts/install-provider-clis.sh), each against a stand-in model server on 127.0.0.1:

* Gemini CLI (``gemini --acp``, the built-in ``gemini`` provider) against the Gemini API
  stand-in (tests/standins/gemini_server.py);
* claude-agent-acp (Claude Code underneath) against the Anthropic stand-in;
* codex-acp against the Responses stand-in.

The agents run with a private HOME and TMPDIR and only the variables that point them at
their stand-in.  Each runs behind a transparent tap (tests/standins/acp_tap.py) that logs
every message both ways, and at the end of each test every message — what the bridge
sent and what the real agent sent — is validated against ACP's schema.json.

Without a CLI these tests are skipped loudly; in CI a missing CLI fails them.
"""

from __future__ import annotations

import base64
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp_schema import AcpSchema, read_transcript
from bridge_client import allow, deny, drive, of_type, start, text_of
from conftest import running_bridge
from provider_clis import pinned, require_cli
from standins.gemini_server import GeminiStandIn

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = ROOT / "tests" / "data" / "acp" / "gemini-settings.json"
TAP = ROOT / "tests" / "standins" / "acp_tap.py"


def tapped(log: Path, argv: list[str]) -> list[str]:
    """``argv`` behind the tap that logs every ACP message to ``log``."""
    return [sys.executable, str(TAP), "--log", str(log), "--", *argv]


def check_schema(log: Path) -> None:
    """Every message the bridge and the real agent exchanged fits ACP's schema.json."""
    records = read_transcript(log)
    assert records, "the tap logged nothing"
    problems = AcpSchema().check_transcript(records)
    assert problems == [], problems


HELLO = "Hi! I am the stand-in model."

Msg = dict[str, Any]


# --------------------------------------------------------------------------- Gemini CLI


class Gemini:
    def __init__(self, base: Path, server: GeminiStandIn, cli: str) -> None:
        self.base = base
        self.server = server
        self.real_cli = cli
        self.log = base / "acp.log"
        # The built-in finds its executable through AGENT_BRIDGE_GEMINI_PATH: one file,
        # so the tap goes into a wrapper script.
        self.cli = str(base / "gemini")
        Path(self.cli).write_text(
            "#!/bin/sh\nexec "
            + " ".join(json.dumps(a) for a in tapped(self.log, [cli]))
            + ' "$@"\n'
        )
        Path(self.cli).chmod(0o755)
        self.home = base / "home"
        self.work = base / "work"
        for d in (self.home / ".gemini", self.work, base / "tmp"):
            d.mkdir(parents=True, exist_ok=True)
        shutil.copy(SETTINGS, self.home / ".gemini" / "settings.json")

    @property
    def env(self) -> dict[str, str]:
        return {
            "AGENT_BRIDGE_GEMINI_PATH": self.cli,
            "HOME": str(self.home),
            "TMPDIR": str(self.base / "tmp"),
            "GEMINI_CLI_HOME": str(self.home),
            "GEMINI_API_KEY": "dummy",
            "GOOGLE_GEMINI_BASE_URL": self.server.base_url,
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
        }

    def params(self, provider: str = "gemini", **options: Any) -> Msg:
        return {"provider": provider, "workspace": str(self.work), "options": options}


@pytest.fixture
def gemini(tmp_path: Path) -> Iterator[Gemini]:
    cli = require_cli("gemini")
    with GeminiStandIn() as server:
        g = Gemini(tmp_path, server, cli)
        yield g
        # Only the model endpoints were asked, only through the stand-in.
        assert not server.of_kind("other"), [r.path for r in server.of_kind("other")]
        if g.log.exists():  # (a test skipped before starting the agent logged nothing)
            check_schema(g.log)


async def _create(bridge: Any, g: Gemini, provider: str = "gemini", **options: Any) -> str:
    result = await bridge.result("session/create", g.params(provider, **options), timeout=60)
    session_id: str = result["session"]["sessionId"]
    return session_id


async def test_gemini_text_and_descriptor(gemini: Gemini) -> None:
    g = gemini
    async with running_bridge("newline", env=g.env) as bridge:
        listed = await bridge.result("providers/list", {"probe": True}, timeout=60)
        d = next(x for x in listed["providers"] if x["id"] == "gemini")
        assert d["availability"]["status"] == "available"
        if pinned("0.61.0"):
            assert d["availability"]["version"] == "0.61.0"
        assert d["capabilities"]["recovery"]["resume"] is False  # the upstream defect
        auth = next(o for o in d["options"] if o["name"] == "authMethod")
        assert "gemini-api-key" in auth["values"]
        session_id = await _create(bridge, g)
        events = await drive(bridge, await start(bridge, session_id, "say hi"), timeout=60)
        assert events[-1] == {"type": "run.completed", "stopReason": "end_turn"}
        assert text_of(events) == HELLO
        assert len(of_type(events, "text.delta")) >= 2
        # After session/new, the modes Gemini offered are the mode option's values.
        listed = await bridge.result("providers/list", {"probe": False})
        d = next(x for x in listed["providers"] if x["id"] == "gemini")
        mode = next(o for o in d["options"] if o["name"] == "mode")
        assert "default" in mode["values"] and "yolo" in mode["values"]
    assert g.server.of_kind("router"), "the router call was answered"


async def test_gemini_shell_tool_allowed_and_denied(gemini: Gemini) -> None:
    g = gemini
    async with running_bridge("newline", env=g.env) as bridge:
        session_id = await _create(bridge, g)
        events = await drive(
            bridge, await start(bridge, session_id, "TOOL:touch approved.txt"), allow(), timeout=60
        )
        assert events[-1]["type"] == "run.completed"
        asked = of_type(events, "interaction.requested")[0]["request"]
        assert asked["action"] == "command" and asked["command"] == "touch approved.txt"
        assert asked["modes"] == ["once", "session"]
        tools = of_type(events, "tool.activity")
        assert [t["status"] for t in tools] == ["started", "completed"]
        assert tools[0]["kind"] == "execute" and tools[0]["title"] == "touch approved.txt"
        assert (g.work / "approved.txt").exists()
        assert text_of(events).startswith("Tool finished.")

        events = await drive(
            bridge, await start(bridge, session_id, "TOOL:touch denied.txt"), deny, timeout=60
        )
        assert events[-1]["type"] == "run.completed"
        assert not (g.work / "denied.txt").exists()
        assert "cancel" in text_of(events)


async def test_gemini_interrupt_slow_stream(gemini: Gemini) -> None:
    g = gemini
    async with running_bridge("newline", env=g.env) as bridge:
        session_id = await _create(bridge, g)
        run_id = await start(bridge, session_id, "SLOW")
        first = await bridge.event("text.delta", timeout=60)
        assert first["payload"]["text"] == "word0"
        with anyio.fail_after(20):
            await bridge.result("run/interrupt", {"runId": run_id})
            events = await drive(bridge, run_id, timeout=20)
        assert events[-1]["type"] == "run.interrupted"
        assert events[-1].get("forced", False) is False  # the agent said cancelled
        # The session goes on.
        events = await drive(bridge, await start(bridge, session_id, "say hi"), timeout=60)
        assert text_of(events) == HELLO


async def test_gemini_resume_in_a_fresh_bridge_is_refused(gemini: Gemini, tmp_path: Path) -> None:
    """Gemini 0.61.0 cannot load a session in a new process (upstream defect, see
    docs/providers/acp.md): the built-in declares it and the refusal is classified."""
    g = gemini
    args = ("--state-dir", str(tmp_path / "bridge-state"))
    async with running_bridge("newline", *args, env=g.env) as bridge:
        session_id = await _create(bridge, g)
        await drive(bridge, await start(bridge, session_id, "say hi"), timeout=60)
        await bridge.result("session/close", {"sessionId": session_id}, timeout=30)
    async with running_bridge("newline", *args, env=g.env) as bridge:
        reply = await bridge.call("session/resume", {"sessionId": session_id}, timeout=60)
        assert reply["error"]["data"]["code"] == "unsupported"


async def test_gemini_load_defect_is_still_there(gemini: Gemini, tmp_path: Path) -> None:
    """Pins the upstream defect itself: as a generic ``acp`` command Gemini is recognised
    by its ``initialize`` and its profile refuses the resume (``unsupported``); a
    configured entry that overrides the profile (``resume = true``) tries the
    ``session/load`` in a fresh process, which fails and is classified
    ``recovery_invalid`` when the new process cannot find the session (Gemini writes its
    session file lazily, so a load sometimes finds it: that outcome is let pass).  The
    profile's refusal is the part that must hold whatever the race does."""
    g = gemini
    if not pinned("0.61.0"):
        pytest.skip("the defect is pinned for 0.61.0 only")
    env_names = [
        "GEMINI_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
        "GEMINI_CLI_HOME",
        "GEMINI_CLI_TRUST_WORKSPACE",
    ]
    command = tapped(g.log, [g.real_cli, "--acp"])
    config = tmp_path / "config.toml"
    write_config(config, "gem", command, env_names, "resume = true\n")
    env = {**g.env, "AGENT_BRIDGE_CONFIG": str(config)}
    for provider, options, code in (
        ("acp", {"command": command, "passEnv": env_names}, "unsupported"),
        ("gem", {}, "recovery_invalid"),
    ):
        args = ("--state-dir", str(tmp_path / f"bridge-state-{provider}"))
        async with running_bridge("newline", *args, env=env) as bridge:
            session_id = await _create(bridge, g, provider, **options)
            await drive(bridge, await start(bridge, session_id, "say hi"), timeout=60)
            await bridge.result("session/close", {"sessionId": session_id}, timeout=30)
        async with running_bridge("newline", *args, env=env) as bridge:
            reply = await bridge.call("session/resume", {"sessionId": session_id}, timeout=60)
        assert json.dumps(reply).find("No previous sessions") == -1  # no upstream prose
        if provider == "gem" and "result" in reply:
            # Gemini writes its session file lazily: when the first process had written
            # it before it was stopped, the load in the new process finds it (seen in a
            # full CI run; the defect is a race upstream, not a sure failure)
            continue
        assert reply.get("error", {}).get("data", {}).get("code") == code, (provider, reply)


# --------------------------------------------------------------------------- configured agents


def write_config(
    path: Path, agent_id: str, command: list[str], pass_env: list[str], extra: str = ""
) -> None:
    path.write_text(
        f"[acp.agents.{agent_id}]\n"
        f'displayName = "{agent_id}"\n'
        f"command = {json.dumps(command)}\n"
        f"passEnv = {json.dumps(pass_env)}\n" + extra
    )


class ClaudeAcp:
    def __init__(self, base: Path, server: Any, cli: str) -> None:
        self.base = base
        self.server = server
        self.work = base / "work"
        for name in ("home", "home/.claude", "tmp", "work"):
            (base / name).mkdir(parents=True, exist_ok=True)
        self.config = base / "config.toml"
        self.log = base / "acp.log"
        write_config(
            self.config,
            "claude-acp",
            tapped(self.log, [cli]),
            [
                "ANTHROPIC_BASE_URL",
                "ANTHROPIC_API_KEY",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
                "CLAUDE_CONFIG_DIR",
                "CLAUDE_CODE_MAX_RETRIES",
            ],
        )

    @property
    def env(self) -> dict[str, str]:
        return {
            "AGENT_BRIDGE_CONFIG": str(self.config),
            "HOME": str(self.base / "home"),
            "TMPDIR": str(self.base / "tmp"),
            "CLAUDE_CONFIG_DIR": str(self.base / "home" / ".claude"),
            "ANTHROPIC_BASE_URL": self.server.base_url,
            "ANTHROPIC_API_KEY": "dummy",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CODE_MAX_RETRIES": "0",
        }

    def params(self) -> Msg:
        return {"provider": "claude-acp", "workspace": str(self.work)}


@pytest.fixture
def claude_acp(tmp_path: Path) -> Iterator[ClaudeAcp]:
    from standins.anthropic_server import AnthropicStandIn, rules_responder

    cli = require_cli("claude-agent-acp")
    with AnthropicStandIn(responder=rules_responder(slow_words=200, slow_delay=0.2)) as server:
        c = ClaudeAcp(tmp_path, server, cli)
        yield c
        check_schema(c.log)


async def test_claude_agent_acp_end_to_end(claude_acp: ClaudeAcp, tmp_path: Path) -> None:
    c = claude_acp
    args = ("--state-dir", str(tmp_path / "bridge-state"))
    async with running_bridge("newline", *args, env=c.env) as bridge:
        listed = await bridge.result("providers/list", {"probe": True}, timeout=60)
        d = next(x for x in listed["providers"] if x["id"] == "claude-acp")
        assert d["availability"]["status"] == "available"
        assert d["capabilities"]["recovery"]["resume"] is True
        result = await bridge.result("session/create", c.params(), timeout=60)
        session_id = result["session"]["sessionId"]
        events = await drive(bridge, await start(bridge, session_id, "say hi"), timeout=60)
        assert events[-1]["type"] == "run.completed"
        assert text_of(events) == HELLO

        events = await drive(
            bridge, await start(bridge, session_id, "TOOL:touch approved.txt"), allow(), timeout=60
        )
        assert events[-1]["type"] == "run.completed"
        assert (c.work / "approved.txt").exists()
        asked = of_type(events, "interaction.requested")[0]["request"]
        assert asked["action"] == "command"
        tools = of_type(events, "tool.activity")
        assert tools[0]["kind"] == "execute"

        events = await drive(
            bridge, await start(bridge, session_id, "TOOL:touch denied.txt"), deny, timeout=60
        )
        assert events[-1]["type"] == "run.completed"
        assert not (c.work / "denied.txt").exists()
        await bridge.result("session/close", {"sessionId": session_id}, timeout=30)
    # A fresh bridge process resumes the session (session/resume: nothing replayed).
    async with running_bridge("newline", *args, env=c.env) as bridge:
        await bridge.result("session/resume", {"sessionId": session_id}, timeout=60)
        events = await drive(bridge, await start(bridge, session_id, "say hi"), timeout=60)
        assert events[-1]["type"] == "run.completed"
        assert text_of(events) == HELLO


@pytest.mark.parametrize("restart", [False, True], ids=["as-is", "profile"])
async def test_claude_agent_acp_interrupt(claude_acp: ClaudeAcp, restart: bool) -> None:
    """Interrupt works; afterwards claude-agent-acp 0.23.1 shifts turns by one (upstream
    agentclientprotocol/claude-agent-acp#551): the next prompt is answered at once with
    the cancelled turn's result. With the workaround off (the entry says
    ``restartAfterCancel = false``) the adapter sees that answer cannot be the prompt's
    (no update, no token used), says so in a diagnostic and asks again in a new agent
    process; with its profile's workaround (recognised by its ``initialize``, nothing
    configured) it starts the new process before the next prompt. Either way each run
    gets its own text."""
    c = claude_acp
    if not restart:
        c.config.write_text(c.config.read_text() + "restartAfterCancel = false\n")
    async with running_bridge("newline", env=c.env) as bridge:
        result = await bridge.result("session/create", c.params(), timeout=60)
        session_id = result["session"]["sessionId"]
        run_id = await start(bridge, session_id, "SLOW")
        await bridge.event("text.delta", timeout=60)
        with anyio.fail_after(20):
            await bridge.result("run/interrupt", {"runId": run_id})
            events = await drive(bridge, run_id, timeout=20)
        assert events[-1]["type"] == "run.interrupted"
        assert events[-1].get("forced", False) is False
        # (run/start waits for the agent's restart: generous under load)
        started = await bridge.result(
            "run/start", {"sessionId": session_id, "input": {"text": "ECHO:after"}}, timeout=60
        )
        after = await drive(bridge, started["runId"], timeout=90)
        later = await drive(bridge, await start(bridge, session_id, "ECHO:later"), timeout=60)
    assert after[-1]["type"] == later[-1]["type"] == "run.completed"
    assert text_of(after) == "after" and text_of(later) == "later"
    unattributed = [e for e in of_type(after, "diagnostic") if e["code"] == "acp_turn_unattributed"]
    assert len(unattributed) == (0 if restart else 1)


async def test_case_10_generic_acp_provider_attributes_each_turn_after_an_interrupt(
    claude_acp: ClaudeAcp,
) -> None:
    """Issue 30, item 10: the generic ``acp`` provider (the agent named by the ``command``
    option, no configuration entry, so no hint) driving the real claude-agent-acp against
    the Anthropic stand-in. Before the fix, after an interrupt the next run completed with
    no text and the run after it returned two turns' text ("afterlater"), and nothing
    said so. Now claude-agent-acp is recognised by its ``initialize`` (its profile, issue
    33) and the adapter continues the session in a new agent process before the next
    prompt, so every run gets its own text without a wasted round trip; the correlation
    rule itself (the diagnostic) is proven by ``test_claude_agent_acp_interrupt[as-is]``,
    where the entry turns the profile's workaround off."""
    c = claude_acp
    options = {
        "command": tapped(c.log, [require_cli("claude-agent-acp")]),
        "passEnv": [
            "ANTHROPIC_BASE_URL",
            "ANTHROPIC_API_KEY",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
            "CLAUDE_CONFIG_DIR",
            "CLAUDE_CODE_MAX_RETRIES",
        ],
    }
    env = {k: v for k, v in c.env.items() if k != "AGENT_BRIDGE_CONFIG"}
    async with running_bridge("newline", env=env) as bridge:
        params = {"provider": "acp", "workspace": str(c.work), "options": options}
        session_id = (await bridge.result("session/create", params, timeout=60))["session"][
            "sessionId"
        ]
        first = await drive(bridge, await start(bridge, session_id, "ECHO:first"), timeout=60)
        assert text_of(first) == "first"
        run_id = await start(bridge, session_id, "SLOW")
        await bridge.event("text.delta", timeout=60)
        with anyio.fail_after(20):
            await bridge.result("run/interrupt", {"runId": run_id})
            events = await drive(bridge, run_id, timeout=20)
        assert events[-1]["type"] == "run.interrupted"
        runs = []
        for word in ("after", "later", "last"):
            # (the first run/start waits for the agent's restart: generous under load)
            started = await bridge.result(
                "run/start",
                {"sessionId": session_id, "input": {"text": f"ECHO:{word}"}},
                timeout=90,
            )
            runs.append(await drive(bridge, started["runId"], timeout=90))
    assert [r[-1]["type"] for r in runs] == ["run.completed"] * 3
    assert [text_of(r) for r in runs] == ["after", "later", "last"]  # was ["", "afterlater", …]
    codes = [e["code"] for e in of_type(runs[0], "diagnostic")]
    assert "acp_turn_unattributed" not in codes, codes  # restarted before the prompt


class CodexAcp:
    """codex-acp with a private CODEX_HOME naming the Responses stand-in; the two lines
    at the top make it ask before running a command (without them it runs commands
    sandboxed without asking, and offline they fail for want of bubblewrap)."""

    ASKING = 'approval_policy = "untrusted"\nsandbox_mode = "danger-full-access"\n'

    def __init__(self, base: Path, server: Any, cli: str, *, asking: bool = True) -> None:
        from standins.responses_server import CODEX_OFFLINE_CONFIG

        self.base = base
        self.server = server
        self.work = base / "work"
        self.codex_home = base / "codex-home"
        for d in (base / "home", base / "tmp", self.work, self.codex_home):
            d.mkdir(parents=True, exist_ok=True)
        (self.codex_home / "config.toml").write_text(
            (self.ASKING if asking else "") + CODEX_OFFLINE_CONFIG
        )
        self.config = base / "config.toml"
        self.log = base / "acp.log"
        write_config(
            self.config,
            "codex-acp",
            tapped(self.log, [cli, "-c", f'model_providers.stub.base_url="{server.base_url}"']),
            ["CODEX_HOME", "STUB_API_KEY"],
        )

    @property
    def env(self) -> dict[str, str]:
        return {
            "AGENT_BRIDGE_CONFIG": str(self.config),
            "HOME": str(self.base / "home"),
            "TMPDIR": str(self.base / "tmp"),
            "CODEX_HOME": str(self.codex_home),
            "STUB_API_KEY": "dummy",
        }

    def params(self) -> Msg:
        return {"provider": "codex-acp", "workspace": str(self.work)}


@pytest.fixture
def codex_acp(tmp_path: Path) -> Iterator[CodexAcp]:
    from standins.responses_server import ResponsesStandIn

    cli = require_cli("codex-acp")
    with ResponsesStandIn() as server:
        c = CodexAcp(tmp_path, server, cli)
        yield c
        assert {r.path for r in server.requests} <= {"/v1/responses"}
        check_schema(c.log)


async def test_codex_acp_end_to_end(codex_acp: CodexAcp, tmp_path: Path) -> None:
    c = codex_acp
    args = ("--state-dir", str(tmp_path / "bridge-state"))
    async with running_bridge("newline", *args, env=c.env) as bridge:
        listed = await bridge.result("providers/list", {"probe": True}, timeout=60)
        d = next(x for x in listed["providers"] if x["id"] == "codex-acp")
        assert d["availability"]["status"] == "available"
        assert d["capabilities"]["recovery"]["resume"] is True
        result = await bridge.result("session/create", c.params(), timeout=60)
        session_id = result["session"]["sessionId"]
        events = await drive(bridge, await start(bridge, session_id, "say hi"), timeout=60)
        assert events[-1]["type"] == "run.completed"
        assert HELLO in text_of(events)  # after the stub model's metadata warning

        events = await drive(
            bridge, await start(bridge, session_id, "TOOL:touch approved.txt"), allow(), timeout=60
        )
        assert events[-1]["type"] == "run.completed"
        assert (c.work / "approved.txt").exists()
        tools = of_type(events, "tool.activity")
        assert tools and tools[0]["kind"] == "execute"

        events = await drive(
            bridge, await start(bridge, session_id, "TOOL:touch denied.txt"), deny, timeout=60
        )
        # codex-acp's reject option is "abort": it ends the turn itself, "cancelled".
        assert events[-1] == {"type": "run.completed", "stopReason": "cancelled"}
        assert not (c.work / "denied.txt").exists()

        run_id = await start(bridge, session_id, "SLOW")
        await bridge.event("text.delta", timeout=60)
        with anyio.fail_after(20):
            await bridge.result("run/interrupt", {"runId": run_id})
            events = await drive(bridge, run_id, timeout=20)
        assert events[-1]["type"] == "run.interrupted"
        await bridge.result("session/close", {"sessionId": session_id}, timeout=30)
    async with running_bridge("newline", *args, env=c.env) as bridge:
        await bridge.result("session/resume", {"sessionId": session_id}, timeout=60)
        events = await drive(bridge, await start(bridge, session_id, "say hi"), timeout=60)
        assert events[-1]["type"] == "run.completed"
        assert HELLO in text_of(events)


PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63f8cfc0f01f0005000201a0a1c1e30000000049454e44ae426082"
)


def _last_user_parts(body: Msg) -> list[Msg]:
    user = [c for c in body["contents"] if c.get("role", "user") == "user"][-1]
    parts: list[Msg] = user["parts"]
    return parts


async def test_gemini_receives_an_image_a_file_and_a_resource(gemini: Gemini) -> None:
    """Gemini advertises image and embeddedContext: an image, a file reference and an
    embedded resource reach it as ACP blocks, and the model stand-in sees the image's
    bytes as inline data and the file's and the resource's text.

    Gemini CLI 0.61.0 drops a prompt's images when the same prompt holds a file link or
    an embedded resource (its ``#resolvePrompt`` rebuilds such a prompt from the text
    and the files only): the third run shows it (the bridge sent the image, the tap's
    log has it); when an upgrade fixes it, this test says so."""
    g = gemini
    (g.work / "notes.txt").write_text("the marker line FILE-7731\n")
    data = base64.b64encode(PNG).decode()
    text = {"type": "text", "text": "say hi"}
    image = {"type": "image", "mimeType": "image/png", "data": data}
    file = {"type": "file", "path": "notes.txt"}
    resource = {"type": "resource", "text": "RESOURCE-4410", "uri": "untitled:1"}
    async with running_bridge("newline", env=g.env) as bridge:
        session_id = await _create(bridge, g)
        listed = await bridge.result("providers/list", {"probe": False})
        d = next(x for x in listed["providers"] if x["id"] == "gemini")
        kinds = ["text", "image", "file", "resource", "command"]
        assert d["capabilities"]["input"]["kinds"] == kinds
        # Gemini names its commands (available_commands_update) after session/new
        with anyio.fail_after(20):
            while not (
                commands := await bridge.result("session/commands", {"sessionId": session_id})
            )["known"]:
                await anyio.sleep(0.1)
        assert "memory" in {c["name"] for c in commands["commands"]}
        for content in ([text, image], [text, file, resource], [text, image, file]):
            result = await bridge.result(
                "run/start", {"sessionId": session_id, "input": {"content": content}}
            )
            events = await drive(bridge, result["runId"], timeout=60)
            assert events[-1] == {"type": "run.completed", "stopReason": "end_turn"}
    first, second, third = (_last_user_parts(r.body) for r in g.server.of_kind("stream"))
    assert [p["inlineData"] for p in first if "inlineData" in p] == [
        {"mimeType": "image/png", "data": data}
    ]
    texts = "\n".join(p.get("text", "") for p in second)
    assert "FILE-7731" in texts and "RESOURCE-4410" in texts
    sent = [r["msg"] for r in read_transcript(g.log) if r["msg"].get("method") == "session/prompt"]
    assert [b["type"] for b in sent[2]["params"]["prompt"]] == ["text", "image", "resource_link"]
    assert not [p for p in third if "inlineData" in p], "Gemini now keeps images beside files"
    assert "FILE-7731" in "\n".join(p.get("text", "") for p in third)


async def test_gemini_mode_is_read_and_switched_between_runs(gemini: Gemini) -> None:
    """The modes Gemini offers (session/new's ``modes``) are what ``session/settings``
    shows; ``session/configure`` switches it with ``session/set_mode`` between runs and
    every attached host is told (``settings.updated``)."""
    g = gemini
    async with running_bridge("newline", env=g.env) as bridge:
        session_id = await _create(bridge, g)
        settings = await bridge.result("session/settings", {"sessionId": session_id})
        modes = {m["id"] for m in settings["mode"]["available"]}
        assert {"default", "yolo"} <= modes and settings["mode"]["current"] == "default"
        switched = await bridge.result(
            "session/configure", {"sessionId": session_id, "mode": "yolo"}
        )
        assert switched["mode"]["current"] == "yolo"
        event = await bridge.event("settings.updated")
        assert event["payload"]["mode"] == "yolo"
        events = await drive(bridge, await start(bridge, session_id, "say hi"), timeout=60)
        assert events[-1] == {"type": "run.completed", "stopReason": "end_turn"}
    sent = [
        r["msg"] for r in read_transcript(g.log) if r["msg"].get("method") == "session/set_mode"
    ]
    assert [m["params"]["modeId"] for m in sent] == ["yolo"]
