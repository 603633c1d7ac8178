"""An approval of a session placed on another member reaches the host that created it
(``docs/fleet.md``, Placement): the owner has no host of its own attached, and the
interaction waits for an answer from any member (before, the owner denied it at once,
``approval_auto_denied``, as a bridge whose host cannot answer approvals does).  Real
members on a real PostgreSQL journal (``test_fleet``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bridge_client import Message, script_session
from test_fleet import events_until, fleet, nodes_of

pytestmark = pytest.mark.timeout(300)


async def test_an_approval_of_a_session_placed_elsewhere_is_asked_of_its_host(
    pg_url: str, tmp_path: Path
) -> None:
    extra: dict[str, tuple[str, ...]] = {
        "alpha": ("--node-providers", "claude-code"),
        "beta": ("--node-providers", "scripted"),
    }
    # beta first: it has declared what it serves by the time alpha places a session
    async with fleet(tmp_path, pg_url, ("beta", "alpha"), extra=extra) as members:
        alpha, beta = members["alpha"], members["beta"]
        steps: list[dict[str, Any]] = [
            {"type": "approval", "title": "deploy", "onAllow": [{"type": "text", "text": "ok"}]}
        ]
        created = await alpha.result("session/create", script_session(steps))
        session = created["session"]["sessionId"]
        assert nodes_of(await beta.result("session/list", {}))[session] == "beta"
        await alpha.result("run/start", {"sessionId": session, "input": {"text": "x"}})

        def is_request(m: Message) -> bool:
            return m.get("method") == "interaction/request"

        asked = await alpha.wait_for(is_request, 30)
        await alpha.send(
            {
                "jsonrpc": "2.0",
                "id": asked["id"],
                "result": {"kind": "approval", "decision": "allow", "mode": "once"},
            }
        )
        seen = await events_until(alpha, session, "run.completed", timeout=30)
        settled = [e["payload"] for e in seen if e["payload"]["type"] == "interaction.settled"]
        assert [(s["status"], s["answer"]["decision"]) for s in settled] == [("responded", "allow")]
        assert not settled[0].get("auto")
        assert "ok" in [e["payload"].get("text") for e in seen]
        assert not [e for e in seen if e["payload"]["type"] == "diagnostic"]
