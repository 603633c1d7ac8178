"""``agent-bridge exec`` and ``record`` with the real Claude Code CLI and its stand-in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from provider_clis import require_cli
from standins.anthropic_server import AnthropicStandIn, Text, ToolUse
from test_claude_e2e import Env

from agent_bridge.testing import BridgeClient, Cassette, normalized, replay_cassette

pytestmark = pytest.mark.e2e


@pytest.fixture
def standin() -> Iterator[AnthropicStandIn]:
    with AnthropicStandIn() as server:
        yield server


@pytest.fixture
def env(tmp_path: Path, standin: AnthropicStandIn) -> Env:
    return Env(tmp_path, standin)


def exec_claude(env: Env, state: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "agent_bridge",
            "exec",
            "--provider",
            "claude-code",
            "--state-dir",
            state,
            "--workspace",
            str(env.workspace),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, **env.vars},
    )


@pytest.mark.parametrize(("policy", "made"), [("once", True), ("deny", False)])
def test_exec_real_claude_approvals_by_policy(
    env: Env, standin: AnthropicStandIn, agent_bridge_state_dir: str, policy: str, made: bool
) -> None:
    standin.push(ToolUse("touch made.txt"), Text("Done."))
    done = exec_claude(env, agent_bridge_state_dir, "--approve", policy, "create the file")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [e["payload"]["type"] for e in events]
    assert kinds[0] == "run.started" and kinds[-1] == "run.completed"
    assert "interaction.requested" in kinds
    assert (env.workspace / "made.txt").exists() is made


def test_exec_real_claude_failure_exit_code(env: Env, agent_bridge_state_dir: str) -> None:
    env.vars["AGENT_BRIDGE_CLAUDE_PATH"] = "/nonexistent/claude"
    done = exec_claude(env, agent_bridge_state_dir, "hello")
    assert done.returncode == 3, (done.returncode, done.stderr)


def test_record_a_real_claude_session_with_an_approval_and_replay_it(
    env: Env, standin: AnthropicStandIn, agent_bridge_state_dir: str, tmp_path: Path
) -> None:
    require_cli("claude")
    standin.push(ToolUse("touch approved.txt"), Text("Done."))
    with BridgeClient(agent_bridge_state_dir, env=env.vars) as client:
        client.initialize()
        session = client.create_session(
            {"provider": "claude-code", "workspace": str(env.workspace)}
        )
        recorded = client.run(session, "create the file", timeout=60)
    assert any(e["payload"]["type"] == "interaction.requested" for e in recorded)
    out = tmp_path / "claude.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "agent_bridge",
            "record",
            session,
            "--out",
            str(out),
            "--state-dir",
            agent_bridge_state_dir,
        ],
        check=True,
        timeout=60,
    )
    cassette = Cassette(out)
    assert cassette.runs[0]["events"] == normalized(recorded)
    # The replay needs no CLI and no network: a bridge without the Claude environment.
    with BridgeClient(agent_bridge_state_dir) as client:
        client.initialize()
        replayed = replay_cassette(client, cassette)
    assert normalized(replayed[0]) == normalized(recorded)
