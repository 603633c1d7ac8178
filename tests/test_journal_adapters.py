"""``session/resume {sessionId}`` with the real adapters: a Claude Code or Codex session is
reopened by a later bridge process from the recovery record the journal kept, after a
clean shutdown and after a SIGKILL in the middle of a run.  The CLIs are the fakes of
``tests/hardening/fakecli.py`` (the stand-ins that speak the real protocols)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import anyio
import pytest
from bridge_client import BridgeProcess, Message
from conftest import running_bridge
from hardening.fakecli import FakeCLI

SCRIPTS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "claude": ({"turns": ["first answer"]}, {"turns": ["second answer"]}),
    "codex": (
        {"replies": [[{"text": "first answer"}]]},
        {"replies": [[{"text": "second answer"}]]},
    ),
}
# A first turn that completes (so the CLI has a conversation to go back to: the Claude
# adapter offers one only once a turn has been written), then one that hangs.
HANGING: dict[str, dict[str, Any]] = {
    "claude": {"turns": ["first answer", [{"text": "working"}, {"hang": True}]]},
    "codex": {"replies": [[{"text": "first answer"}], [{"text": "working"}, {"sleep": 120}]]},
}


def _text(bridge: BridgeProcess, run_id: str) -> str:
    return "".join(
        m["params"]["payload"]["text"]
        for m in bridge.received
        if m.get("method") == "event"
        and m["params"].get("runId") == run_id
        and m["params"]["payload"]["type"] == "text.delta"
    )


async def _run(bridge: BridgeProcess, session: str, text: str) -> tuple[str, Message]:
    started = await bridge.result(
        "run/start", {"sessionId": session, "input": {"text": text}}, timeout=20
    )
    run_id = started["runId"]
    message = await bridge.wait_for(
        lambda m: (
            m.get("method") == "event"
            and m["params"].get("runId") == run_id
            and m["params"]["payload"]["type"] in ("run.completed", "run.failed", "run.interrupted")
        ),
        timeout=30,
    )
    return run_id, message["params"]


def _resumed(fake: FakeCLI) -> bool:
    """Whether the latest CLI process was asked to continue the earlier conversation."""
    if fake.kind == "claude":
        return any(arg.startswith("--resume") for arg in fake.pids()[-1]["argv"])
    return any(isinstance(r, dict) and r.get("method") == "thread/resume" for r in fake.records())


@pytest.mark.parametrize("kind", ["claude", "codex"])
async def test_a_real_adapter_session_resumes_by_id_in_a_later_bridge(
    tmp_path: Path, kind: str
) -> None:
    first, second = SCRIPTS[kind]
    fake = FakeCLI(tmp_path, kind, first)
    env = {**fake.env(), "AGENT_BRIDGE_STATE_DIR": str(tmp_path / "state")}
    async with running_bridge("newline", env=env) as bridge:
        created = await bridge.result("session/create", fake.create_params(), timeout=20)
        session = created["session"]["sessionId"]
        run_id, terminal = await _run(bridge, session, "hello")
        assert terminal["payload"]["type"] == "run.completed"
        assert _text(bridge, run_id) == "first answer"
    fake.write_script(second)
    async with running_bridge("newline", env=env) as bridge:
        resumed = await bridge.result("session/resume", {"sessionId": session}, timeout=20)
        assert resumed["session"]["sessionId"] == session
        assert resumed["session"]["providerId"] == fake.provider
        run_id, terminal = await _run(bridge, session, "again")
        assert terminal["payload"]["type"] == "run.completed"
        assert _text(bridge, run_id) == "second answer"
        history = (await bridge.result("events/read", {"sessionId": session}))["events"]
        assert [e["sequence"] for e in history] == list(range(1, len(history) + 1))
    assert _resumed(fake), fake.records()[-5:]


@pytest.mark.parametrize("kind", ["claude", "codex"])
async def test_a_real_adapter_session_resumes_after_the_bridge_was_killed(
    tmp_path: Path, kind: str
) -> None:
    fake = FakeCLI(tmp_path, kind, HANGING[kind])
    env = {**fake.env(), "AGENT_BRIDGE_STATE_DIR": str(tmp_path / "state")}
    async with anyio.create_task_group() as tg:
        bridge = BridgeProcess("newline", env=env)
        await bridge.start(tg)
        try:
            await bridge.initialize()
            created = await bridge.result("session/create", fake.create_params(), timeout=20)
            session = created["session"]["sessionId"]
            _, terminal = await _run(bridge, session, "hello")
            assert terminal["payload"]["type"] == "run.completed"
            await bridge.result("run/start", {"sessionId": session, "input": {"text": "go"}})
            await bridge.event("text.delta", text="working", timeout=20)
            assert bridge.proc is not None
            bridge.proc.send_signal(signal.SIGKILL)
            await bridge.wait_exit()
        finally:
            await bridge.stop()
            tg.cancel_scope.cancel()
    fake.write_script(SCRIPTS[kind][1])
    async with running_bridge("newline", env=env) as bridge:
        history = (await bridge.result("events/read", {"sessionId": session}))["events"]
        assert [e["payload"]["type"] for e in history[-2:]] == ["run.failed", "session.closed"]
        assert history[-2]["payload"]["error"]["code"] == "bridge_crashed"
        await bridge.result("session/resume", {"sessionId": session}, timeout=20)
        run_id, terminal = await _run(bridge, session, "again")
        assert terminal["payload"]["type"] == "run.completed", terminal
        assert _text(bridge, run_id) == "second answer"
    assert _resumed(fake), fake.records()[-5:]
