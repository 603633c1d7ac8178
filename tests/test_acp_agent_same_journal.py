"""The same scenario through the bridge protocol (``agent-bridge serve``) and through ACP
(``agent-bridge acp``, driven by the ACP Python SDK client) leaves the same journal.

The scenario of tests/acp_agent_support.py: a prompt whose approval is allowed, one
denied, one cancelled while its approval waits, then the client goes away.  Each journal
is read back from its SQLite file and normalized (ids replaced by their order of
appearance, times dropped); the sessions' records and every event must be equal.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from acp_agent_support import agent_argv, write_script
from conftest import running_bridge

from agent_bridge.journal import open_history

acp = pytest.importorskip("acp", reason="LOUD SKIP: agent-client-protocol is not installed")
from acp import spawn_agent_process, text_block  # noqa: E402
from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse  # noqa: E402

pytestmark = pytest.mark.timeout(90)

_ID: re.Pattern[str] = re.compile(r"\b(ses|run|int|evt)_[0-9a-f]+\b")


async def journal_of(state: Path) -> tuple[list[dict[str, Any]], list[Any]]:
    """The session records (normalized) and every event of the one session in ``state``."""
    history = open_history(str(state))
    await history.start(lambda: None)
    try:
        records, _ = await history.list_sessions(None, None, None, 10)
        assert len(records) == 1
        record = records[0]
        events = await history.read_events(record.session_id, 1, record.last_sequence)
    finally:
        await history.aclose()
    names: dict[str, str] = {}

    def normalize(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: normalize(v) for k, v in value.items() if k not in ("occurredAt", "eventId")}
        if isinstance(value, list):
            return [normalize(v) for v in value]
        if isinstance(value, str):
            return _ID.sub(
                lambda m: names.setdefault(m.group(0), f"{m.group(1)}#{len(names)}"), value
            )
        return value

    session = {
        "provider": record.provider_id,
        "state": record.state,
        "options": record.options,
        "workspace": record.workspace,
        "lastSequence": record.last_sequence,
    }
    return [normalize(session)], [normalize(msgspec.json.decode(e)) for e in events]


async def through_bridge_protocol(base: Path, script: Path, work: Path) -> None:
    state = base / "state-bridge"
    async with running_bridge("newline", "--state-dir", str(state)) as b:
        created = await b.result(
            "session/create",
            {"provider": "scripted", "workspace": str(work), "options": {"script": str(script)}},
        )
        sid = created["session"]["sessionId"]
        for decision in ("allow", "deny", None):
            words = {"allow": "Greet", "deny": "Again", None: "Stop"}[decision]
            started = await b.result("run/start", {"sessionId": sid, "input": {"text": words}})
            request = await b.wait_for(lambda m: m.get("method") == "interaction/request")
            if decision is None:
                await b.result("run/interrupt", {"runId": started["runId"]})
            else:
                answer = {"kind": "approval", "decision": decision}
                await b.send({"jsonrpc": "2.0", "id": request["id"], "result": answer})
            await b.terminal()
        await b.close_stdin()
        assert await b.wait_exit() == 0


class Client:
    def __init__(self) -> None:
        self.decisions: list[str | None] = ["allow_once", "reject_once", None]
        self.asked = asyncio.Event()
        self.release = asyncio.Event()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        decision = self.decisions.pop(0)
        self.asked.set()
        if decision is None:
            await self.release.wait()
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=decision)
        )

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        return None


async def through_acp(base: Path, script: Path, work: Path) -> None:
    client = Client()
    argv = agent_argv(base / "acp.log", base / "state-acp", script)
    async with spawn_agent_process(client, argv[0], *argv[1:]) as (conn, process):  # type: ignore[arg-type]  # a client of the methods the bridge calls
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
        assert (await conn.prompt(session_id=sid, prompt=[text_block("Greet")])).stop_reason
        assert (await conn.prompt(session_id=sid, prompt=[text_block("Again")])).stop_reason
        client.asked.clear()
        turn = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block("Stop")]))
        await asyncio.wait_for(client.asked.wait(), 20)
        await conn.cancel(session_id=sid)
        assert (await asyncio.wait_for(turn, 20)).stop_reason == "cancelled"
        client.release.set()
    assert await process.wait() == 0


async def test_same_scenario_same_journal(tmp_path: Path) -> None:
    script = write_script(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    await through_bridge_protocol(tmp_path, script, work)
    await through_acp(tmp_path, script, work)
    bridge_session, bridge_events = await journal_of(tmp_path / "state-bridge")
    acp_session, acp_events = await journal_of(tmp_path / "state-acp")
    assert bridge_session == acp_session
    assert len(bridge_events) == len(acp_events) > 20
    for ours, theirs in zip(bridge_events, acp_events, strict=True):
        assert ours == theirs
    types = [e["payload"]["type"] for e in acp_events]
    assert types.count("interaction.settled") == 3
    assert types[-2:] == ["run.interrupted", "session.closed"]
