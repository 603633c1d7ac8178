"""OpenCode, Qwen Code, fast-agent and Mistral Vibe end to end: the real, pinned agents
(scripts/install-provider-clis.sh; fast-agent and Mistral Vibe in their own Python >= 3.12 venvs,
scripts/install-python-agents.sh) as the built-in ``opencode``, ``qwen``,
``fast-agent`` and ``mistral-vibe`` providers, each against the Anthropic stand-in on 127.0.0.1
(tests/standins/anthropic_server.py).

For each agent: a text reply; a command approved (the file exists) and denied (it does
not); an interrupt, then two more runs with the right text each; a resume in a new
bridge process; every message both ways valid against ACP's schema (through the tap,
tests/standins/acp_tap.py); no agent process left once the bridge has gone.

Where the machine can build a network namespace (root, ``unshare``, ``ip``), the tests
run inside one that has only loopback, with a DNS logger (tests/netns_dns.py), and
``test_zero_dns_lookups`` fails on any lookup; elsewhere they run directly and that
test is skipped loudly.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp_schema import AcpSchema, read_transcript
from bridge_client import allow, deny, drive, of_type, start, text_of
from conftest import running_bridge
from loopback_netns import CAN_NETNS, INSIDE, run_inside, skip_unless_outer
from provider_clis import cli_env_name, find_cli, pinned, require_cli
from standins.anthropic_server import (
    AnthropicStandIn,
    Responder,
    ScriptItem,
    ToolUse,
    last_tool_result,
    last_user_text,
    rules_responder,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

HERE = Path(__file__).resolve().parent
TAP = HERE / "standins" / "acp_tap.py"
HELLO = "Hi! I am the stand-in model."
#: The agent tests run here unless they run inside the namespace (test_zero_dns_lookups).
outside_ns = pytest.mark.skipif(
    CAN_NETNS and not INSIDE,
    reason="run inside the loopback-only namespace by test_zero_dns_lookups",
)

Msg = dict[str, Any]


def responder(tool_name: str, strict: bool = False) -> Responder:
    """The stand-in's rules, with ``TOOL:<cmd>`` as the agent's own shell tool
    (``strict``: its input holds ``command`` only, for a tool whose schema allows no
    other property)."""
    rules = rules_responder(slow_words=200, slow_delay=0.2)

    def respond(body: dict[str, Any]) -> ScriptItem | None:
        prompt = last_user_text(body).strip()
        if prompt.startswith("TOOL:") and last_tool_result(body) is None:
            command = prompt[len("TOOL:") :].strip()
            if strict:
                return ToolUse(name=tool_name, input={"command": command})
            return ToolUse(command, name=tool_name)
        return rules(body)

    return respond


class Agent:
    """One real agent as a built-in provider: a private HOME, its stand-in, the tap."""

    def __init__(self, base: Path, provider: str, cli: str, server: AnthropicStandIn) -> None:
        self.base = base
        self.provider = provider
        self.server = server
        self.home = base / "home"
        self.work = base / "work"
        for d in (self.home, self.work, base / "tmp"):
            d.mkdir(parents=True, exist_ok=True)
        self.log = base / "acp.log"
        # The built-in finds its executable through AGENT_BRIDGE_<ID>_PATH: a wrapper
        # that puts the tap in front.
        self.cli = base / provider
        argv = [sys.executable, str(TAP), "--log", str(self.log), "--", cli]
        self.cli.write_text("#!/bin/sh\nexec " + " ".join(json.dumps(a) for a in argv) + ' "$@"\n')
        self.cli.chmod(0o755)
        self.env: dict[str, str] = {
            cli_env_name(provider): str(self.cli),
            "HOME": str(self.home),
            "TMPDIR": str(base / "tmp"),
            "AGENT_BRIDGE_CONFIG": "",
        }
        #: Messages the agent sends that are not ACP's (named upstream defects).
        self.off_schema: tuple[str, ...] = ()
        #: Session options the agent needs here.
        self.options: Msg = {}
        #: How the agent continues a session in a new process (it advertises which).
        self.resume_method = "session/resume"

    def params(self) -> Msg:
        return {"provider": self.provider, "workspace": str(self.work), "options": self.options}

    def check_schema(self) -> None:
        records = read_transcript(self.log)
        assert records, "the tap logged nothing"
        # The agent's own non-ACP requests (named in off_schema) and the bridge's
        # answers to them are left out; everything else must fit.
        theirs = {
            r["msg"].get("id")
            for r in records
            if r["dir"] == "<-" and r["msg"].get("method") in self.off_schema
        }
        kept = [
            r
            for r in records
            if not (
                (r["dir"] == "<-" and r["msg"].get("method") in self.off_schema)
                or (r["dir"] == "->" and "method" not in r["msg"] and r["msg"].get("id") in theirs)
            )
        ]
        answers = [
            r["msg"]
            for r in records
            if r["dir"] == "->" and "method" not in r["msg"] and r["msg"].get("id") in theirs
        ]
        assert all(m.get("error", {}).get("code") == -32601 for m in answers), answers
        problems = AcpSchema().check_transcript(kept)
        assert problems == [], problems

    def strays(self) -> list[int]:
        """Processes still running with this test's HOME (the agent and its children)."""
        marker = b"HOME=" + str(self.home).encode() + b"\0"
        out = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                try:
                    if marker in (entry / "environ").read_bytes():
                        out.append(int(entry.name))
                except OSError:
                    continue
        return out


def opencode(base: Path, server: AnthropicStandIn) -> Agent:
    a = Agent(base, "opencode", require_cli("opencode"), server)
    # OpenCode 1.18 installs @opencode-ai/plugin into its config directory in the
    # background at every start (nothing turns it off; offline it fails, logged as a
    # warning): npm's registry on loopback keeps that from looking a name up.
    (a.home / ".npmrc").write_text("registry=http://127.0.0.1:9/\n")
    a.env["OPENCODE_CONFIG_CONTENT"] = json.dumps(
        {
            "model": "stub/stub-model",
            "autoupdate": False,
            "share": "disabled",
            "provider": {
                "stub": {
                    "npm": "@ai-sdk/anthropic",
                    "name": "Stand-in",
                    "options": {"baseURL": server.base_url + "/v1", "apiKey": "dummy"},
                    "models": {"stub-model": {"name": "Stand-in model", "tool_call": True}},
                }
            },
            "permission": {"bash": "ask", "edit": "ask"},
        }
    )
    return a


def qwen(base: Path, server: AnthropicStandIn) -> Agent:
    a = Agent(base, "qwen", require_cli("qwen"), server)
    (a.home / ".qwen").mkdir()
    (a.home / ".qwen" / "settings.json").write_text(
        json.dumps(
            {
                "security": {"auth": {"selectedType": "anthropic"}},
                "privacy": {"usageStatisticsEnabled": False},
                "telemetry": {"enabled": False},
                "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
            }
        )
    )
    a.env.update(
        {
            "ANTHROPIC_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": "dummy",
            "ANTHROPIC_MODEL": "claude-stand-in",
        }
    )
    # Qwen Code 0.24.4 calls its own craft/drainMidTurnQueue after a tool call (not an
    # ACP method: answered -32601 by the bridge).
    a.off_schema = ("craft/drainMidTurnQueue",)
    return a


def fast_agent(base: Path, server: AnthropicStandIn) -> Agent:
    a = Agent(base, "fast-agent", require_cli("fast-agent"), server)
    # pydantic-settings' nested variables (fast-agent's Settings: env_nested_delimiter
    # "__"); the model string is provider.model.
    a.env.update(
        {
            "ANTHROPIC__BASE_URL": server.base_url,
            "ANTHROPIC__API_KEY": "dummy",
            "DEFAULT_MODEL": "anthropic.claude-sonnet-4-0",
        }
    )
    # fast-agent 0.10.48 asks permission for a command only when it runs through the
    # client's terminal (its local shell runtime runs commands without asking): the
    # bridge serves terminal/* for it.
    a.options = {"clientTerminal": True}
    return a


def mistral_vibe(base: Path, server: AnthropicStandIn) -> Agent:
    a = Agent(base, "mistral-vibe", require_cli("vibe-acp"), server)
    # ~/.vibe/config.toml: an Anthropic-style provider on the stand-in; telemetry,
    # update checks and GrowthBook experiments off (they would reach the network).
    (a.home / ".vibe").mkdir()
    (a.home / ".vibe" / "config.toml").write_text(
        'active_model = "stub"\n'
        "enable_telemetry = false\n"
        "enable_update_checks = false\n"
        "enable_auto_update = false\n"
        "enable_connectors = false\n"
        "[experiments]\nenable = false\n"
        "[[providers]]\n"
        'name = "stub"\n'
        f'api_base = "{server.base_url}"\n'
        'api_key_env_var = "ANTHROPIC_API_KEY"\n'
        'api_style = "anthropic"\n'
        "[[models]]\n"
        'name = "claude-stand-in"\nprovider = "stub"\nalias = "stub"\n'
    )
    # Not MISTRAL_API_KEY: with it, Vibe 3.0.2 fetches its managed configuration from
    # chat.mistral.ai and its connectors from api.mistral.ai at every session.
    a.env["ANTHROPIC_API_KEY"] = "dummy"
    # Vibe 3.0.2 advertises loadSession, not session/resume.
    a.resume_method = "session/load"
    return a


#: provider -> (how to set it up, its shell tool, the pinned version, strict tool input)
AGENTS = {
    "opencode": (opencode, "bash", "1.18.33", False),
    "qwen": (qwen, "run_shell_command", "0.24.4", False),
    "fast-agent": (fast_agent, "execute", "0.10.48", False),
    "mistral-vibe": (mistral_vibe, "bash", "3.0.2", True),
}
#: The executable each provider's CLI is found as (tests/provider_clis.py).
CLI_NAMES = {"mistral-vibe": "vibe-acp"}


@pytest.fixture(params=sorted(AGENTS))
def agent(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Agent]:
    make, tool, _version, strict = AGENTS[request.param]
    with AnthropicStandIn(responder=responder(tool, strict)) as server:
        a = make(tmp_path, server)
        yield a
        assert {r.path for r in server.requests} <= {"/v1/messages"}, [
            r.path for r in server.requests
        ]
        deadline = time.monotonic() + 10
        while a.strays() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert a.strays() == [], "agent processes left behind"
        if a.log.exists():
            a.check_schema()


async def _session(bridge: Any, a: Agent) -> str:
    result = await bridge.result("session/create", a.params(), timeout=90)
    session_id: str = result["session"]["sessionId"]
    return session_id


@outside_ns
async def test_descriptor_text_and_approvals(agent: Agent) -> None:
    a = agent
    async with running_bridge("newline", env=a.env) as bridge:
        session_id = await _session(bridge, a)
        # What the session's initialize taught the provider (no probe: a cold start of
        # these agents can outlast the probe's bound on a busy machine).
        listed = await bridge.result("providers/list", {"probe": False}, timeout=30)
        d = next(x for x in listed["providers"] if x["id"] == a.provider)
        if pinned(AGENTS[a.provider][2]):
            assert d["maturity"] == "verified"
        assert d["capabilities"]["recovery"]["resume"] is True
        events = await drive(bridge, await start(bridge, session_id, "say hi"), timeout=90)
        assert events[-1] == {"type": "run.completed", "stopReason": "end_turn"}
        assert text_of(events) == HELLO

        events = await drive(
            bridge,
            await start(bridge, session_id, "TOOL:touch approved.txt"),
            allow(),
            timeout=90,
        )
        assert events[-1]["type"] == "run.completed", events[-1]
        asked = of_type(events, "interaction.requested")[0]["request"]
        assert asked["action"] == "command"
        assert "touch approved.txt" in json.dumps(asked)
        assert of_type(events, "tool.activity")[0]["kind"] == "execute"
        assert (a.work / "approved.txt").exists()

        events = await drive(
            bridge, await start(bridge, session_id, "TOOL:touch denied.txt"), deny, timeout=90
        )
        assert events[-1]["type"] in ("run.completed", "run.failed"), events[-1]
        assert of_type(events, "interaction.requested")
        assert not (a.work / "denied.txt").exists()


@outside_ns
@pytest.mark.parametrize("agent", ["fast-agent", "mistral-vibe"], indirect=True)
async def test_probe(agent: Agent) -> None:
    """``providers/list`` with ``probe`` finds the agent available at its version (inside
    the namespace: without a lookup).  OpenCode and Qwen Code are left out: a cold start
    of theirs can outlast the probe's bound on a busy machine."""
    a = agent
    async with running_bridge("newline", env=a.env) as bridge:
        listed = await bridge.result("providers/list", {"probe": True}, timeout=60)
    d = next(x for x in listed["providers"] if x["id"] == a.provider)
    assert d["availability"]["status"] == "available", d["availability"]
    if pinned(AGENTS[a.provider][2]):
        assert d["availability"]["version"] == AGENTS[a.provider][2]
        assert d["maturity"] == "verified"


@outside_ns
async def test_interrupt_then_two_runs_and_resume_in_a_new_bridge(
    agent: Agent, tmp_path: Path
) -> None:
    a = agent
    args = ("--state-dir", str(tmp_path / "bridge-state"))
    async with running_bridge("newline", *args, env=a.env) as bridge:
        session_id = await _session(bridge, a)
        run_id = await start(bridge, session_id, "SLOW")
        await bridge.event("text.delta", timeout=90)
        with anyio.fail_after(30):
            await bridge.result("run/interrupt", {"runId": run_id})
            events = await drive(bridge, run_id, timeout=30)
        assert events[-1]["type"] == "run.interrupted"
        for word in ("after", "later"):
            started = await bridge.result(
                "run/start",
                {"sessionId": session_id, "input": {"text": f"ECHO:{word}"}},
                timeout=90,
            )
            events = await drive(bridge, started["runId"], timeout=90)
            assert events[-1]["type"] == "run.completed"
            assert text_of(events) == word
        await bridge.result("session/close", {"sessionId": session_id}, timeout=30)
    async with running_bridge("newline", *args, env=a.env) as bridge:
        await bridge.result("session/resume", {"sessionId": session_id}, timeout=90)
        events = await drive(bridge, await start(bridge, session_id, "say hi"), timeout=90)
        assert events[-1]["type"] == "run.completed"
        assert text_of(events) == HELLO
    resumed = [
        r["msg"]
        for r in read_transcript(a.log)
        if r["dir"] == "->" and r["msg"].get("method") == a.resume_method
    ]
    assert len(resumed) == 1


@pytest.mark.timeout(960)
def test_zero_dns_lookups(tmp_path: Path) -> None:
    """The tests above, inside a network namespace with only loopback and a DNS logger:
    they pass, and neither the probes nor the sessions look any name up."""
    skip_unless_outer()
    for name in AGENTS:
        require_cli(CLI_NAMES.get(name, name))
    env = dict(os.environ)
    for name in AGENTS:
        env[cli_env_name(name)] = find_cli(CLI_NAMES.get(name, name)) or ""
    select = os.environ.get("AGENT_BRIDGE_NETNS_SELECT", "not zero_dns")
    log = tmp_path / "dns.json"
    run_inside(str(Path(__file__)), select, log, env, timeout=900, no_skips=True)
