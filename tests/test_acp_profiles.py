"""Agent profiles (adapters/acp/profiles.py): a known agent is recognised by its
``initialize`` answer and gets the same descriptor corrections, workarounds and quiet
environment however it was configured — the built-in provider, an ``[acp.agents.<id>]``
entry, or the generic ``acp`` provider with a ``command``.

The agent is the project's ACP stand-in (tests/standins/fake_acp.py, a real child over
real pipes, through a real bridge process) answering ``initialize`` as Gemini CLI 0.61.0
or claude-agent-acp 0.23.1 would; the real agents are driven in tests/test_acp_e2e.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from bridge_client import drive, start, text_of
from conftest import running_bridge
from test_acp_adapter import FAKE, HELLO, Fake, run_text

from agent_bridge.adapters.acp import protocol as p
from agent_bridge.adapters.acp.launch import Hints, child_env, spec_from_entry
from agent_bridge.adapters.acp.profiles import (
    PROFILES,
    QUIET_ENV,
    effective_hints,
    maturity_for,
    profile_for,
)
from agent_bridge.adapters.acp.provider import AcpProvider

pytestmark = pytest.mark.timeout(90)

GEMINI = {"name": "gemini-cli", "title": "Gemini CLI", "version": "0.61.0"}
CLAUDE = {"name": "@zed-industries/claude-agent-acp", "title": "Claude Agent", "version": "0.23.1"}
CLAUDE_CAPS = {"loadSession": True, "sessionCapabilities": {"resume": {}, "list": {}}}
WAYS = ("builtin", "entry", "generic")


def info(agent: dict[str, str], **caps: Any) -> p.AgentInfo:
    return p.AgentInfo.from_result({"agentInfo": agent, "agentCapabilities": caps})


def test_profiles_are_data() -> None:
    keys = [profile.key for profile in PROFILES]
    assert len(keys) == len(set(keys))
    names = [name.lower() for profile in PROFILES for name in profile.names]
    assert len(names) == len(set(names)), "one agentInfo name, one profile"
    for profile in PROFILES:
        assert profile.maturity == "experimental" or profile.proven, profile.key
        assert (profile.resume is False) == (profile.resume_defect is not None), profile.key
        assert profile.restart_after_cancel == (profile.restart_defect is not None), profile.key
    assert QUIET_ENV["DO_NOT_TRACK"] == "1"
    assert QUIET_ENV["GEMINI_TELEMETRY_ENABLED"] == "false"


def test_recognised_by_initialize_and_explicit_hints_win() -> None:
    gemini = profile_for(info(GEMINI, loadSession=True))
    assert gemini is not None and gemini.key == "gemini"
    assert profile_for(info({"name": "Gemini-CLI", "version": "9"})) is gemini
    assert profile_for(info({"name": "someone-else", "version": "1"})) is None
    assert profile_for(None) is None
    assert effective_hints(Hints(), gemini).resume is False
    assert effective_hints(Hints(resume=True), gemini).resume is True  # the entry's choice
    claude = profile_for(info(CLAUDE))
    assert effective_hints(Hints(), claude).restart_after_cancel is True
    assert effective_hints(Hints(restart_after_cancel=False), claude).restart_after_cancel is False
    assert maturity_for(info(GEMINI), "experimental") == "verified"
    assert maturity_for(info({**GEMINI, "version": "0.62.0"}), "verified") == "experimental"
    assert maturity_for(None, "verified") == "verified"


def test_quiet_environment_yields_to_explicit_values() -> None:
    spec = spec_from_entry(
        "x",
        {"command": ["a"], "env": {"DO_NOT_TRACK": "0"}, "passEnv": ["GEMINI_TELEMETRY_ENABLED"]},
    )
    env = child_env(spec, parent={"PATH": "/bin", "GEMINI_TELEMETRY_ENABLED": "true"})
    assert env["DO_NOT_TRACK"] == "0" and env["GEMINI_TELEMETRY_ENABLED"] == "true"
    assert env["QWEN_TELEMETRY_ENABLED"] == "false"


def test_a_configured_entry_gets_the_profile_descriptor() -> None:
    provider = AcpProvider(spec_from_entry("mine", {"command": ["a"]}))
    assert provider.describe().capabilities.recovery.resume is True  # not asked yet
    assert provider.describe().maturity == "experimental"
    provider.learned(info(GEMINI, loadSession=True))
    d = provider.describe()
    assert d.capabilities.recovery.resume is False and d.maturity == "verified"
    override = AcpProvider(spec_from_entry("mine", {"command": ["a"], "resume": True}))
    override.learned(info(GEMINI, loadSession=True))
    assert override.describe().capabilities.recovery.resume is True


# --------------------------------------------------------------------------- three ways


class Configured:
    """The stand-in, passing for ``agent``, configured one of three ways."""

    def __init__(
        self, tmp: Path, way: str, agent: dict[str, str], builtin: str, **script: Any
    ) -> None:
        self.way = way
        self.env_log = tmp / "env.jsonl"
        self.fake = Fake(
            tmp, agent_id="mine", agent_info=agent, env_log=str(self.env_log), **script
        )
        # A wrapper whose name says nothing: the agent is known by its initialize only.
        exe = tmp / "some-agent"
        exe.write_text(
            f'#!/bin/sh\nexec {sys.executable} {FAKE} --script {self.fake.script_path} "$@"\n'
        )
        exe.chmod(0o755)
        self.exe = str(exe)
        self.env = dict(self.fake.env)
        self.provider = {"builtin": builtin, "entry": "mine", "generic": "acp"}[way]
        self.options: dict[str, Any] = {}
        if way == "builtin":
            self.env[f"AGENT_BRIDGE_{builtin.upper()}_PATH"] = self.exe
        elif way == "generic":
            self.options = {"command": [self.exe]}

    def params(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "workspace": str(self.fake.work),
            "options": self.options,
        }

    def initializes(self) -> int:
        return len(self.fake.sent_by_bridge("initialize"))

    def envs(self) -> list[dict[str, str]]:
        return [json.loads(line) for line in self.env_log.read_text().splitlines()]


async def _descriptor(bridge: Any, c: Configured) -> dict[str, Any] | None:
    if c.way == "generic":
        return None  # the generic provider's agent is named per session
    listed = await bridge.result("providers/list", {"probe": True}, timeout=40)
    d: dict[str, Any] = next(x for x in listed["providers"] if x["id"] == c.provider)
    return d


@pytest.mark.parametrize("way", WAYS)
async def test_gemini_three_ways(tmp_path: Path, way: str) -> None:
    """Gemini (0.61.0) cannot continue a session in a new process: refused
    ``unsupported`` whichever way it is configured (as a generic command it used to claim
    resume and then fail, or silently start a fresh session); the descriptor says so and
    the version proven is ``verified``; the quiet environment is there."""
    c = Configured(tmp_path, way, GEMINI, "gemini")
    state = ("--state-dir", str(tmp_path / "state"))
    async with running_bridge("newline", *state, env=c.env) as bridge:
        d = await _descriptor(bridge, c)
        if d is not None:
            assert d["capabilities"]["recovery"]["resume"] is False
            assert d["maturity"] == "verified"
            assert d["availability"]["nextStep"].startswith("authenticates with GEMINI_API_KEY")
        result = await bridge.result("session/create", c.params(), timeout=30)
        session_id = result["session"]["sessionId"]
        assert text_of(await run_text(bridge, session_id, "hi")) == HELLO
        await bridge.result("session/close", {"sessionId": session_id})
    async with running_bridge("newline", *state, env=c.env) as bridge:
        await _descriptor(bridge, c)
        reply = await bridge.call("session/resume", {"sessionId": session_id}, timeout=30)
        assert reply["error"]["data"]["code"] == "unsupported"
    assert not c.fake.sent_by_bridge("session/load")
    for env in c.envs():
        assert env["GEMINI_TELEMETRY_ENABLED"] == "false" and env["DO_NOT_TRACK"] == "1"
    c.fake.check_schema()


@pytest.mark.parametrize("way", ["entry", "generic", "entry-says-no"])
async def test_claude_agent_acp_restarts_after_cancel_however_configured(
    tmp_path: Path, way: str
) -> None:
    """claude-agent-acp 0.23's profile restarts the agent after a cancelled run and
    continues the session there (``session/resume``); an entry's explicit
    ``restartAfterCancel = false`` turns the workaround off."""
    c = Configured(
        tmp_path, way.split("-")[0], CLAUDE, "claude-acp", capabilities=CLAUDE_CAPS, slow_delay=0.05
    )
    if way == "entry-says-no":
        c.fake.config.write_text(c.fake.config.read_text() + "restartAfterCancel = false\n")
    async with running_bridge("newline", env=c.env) as bridge:
        d = await _descriptor(bridge, c)
        if d is not None:
            assert d["capabilities"]["recovery"]["resume"] is True
            assert d["maturity"] == "verified"
        result = await bridge.result("session/create", c.params(), timeout=30)
        session_id = result["session"]["sessionId"]
        before = c.initializes()
        run_id = await start(bridge, session_id, "SLOW")
        await bridge.event("text.delta", timeout=30)
        with anyio.fail_after(20):
            await bridge.result("run/interrupt", {"runId": run_id})
            events = await drive(bridge, run_id)
        assert events[-1]["type"] == "run.interrupted"
        assert text_of(await run_text(bridge, session_id, "hi")) == HELLO
    restarted = c.initializes() - before
    if way == "entry-says-no":
        assert restarted == 0 and not c.fake.sent_by_bridge("session/resume")
    else:
        assert restarted == 1 and len(c.fake.sent_by_bridge("session/resume")) == 1
    c.fake.check_schema()


async def test_an_unknown_agent_stays_experimental_with_what_it_advertises(
    tmp_path: Path,
) -> None:
    c = Configured(tmp_path, "entry", {"name": "brand-new-agent", "version": "1.0.0"}, "gemini")
    async with running_bridge("newline", env=c.env) as bridge:
        d = await _descriptor(bridge, c)
        assert d is not None
        assert d["maturity"] == "experimental"
        assert d["capabilities"]["recovery"]["resume"] is True  # loadSession advertised
