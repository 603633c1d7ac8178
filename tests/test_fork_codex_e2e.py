"""End to end: ``session/fork`` with the real, pinned ``codex`` (app-server ``thread/fork``
with ``lastTurnId``) against the Responses stand-in on 127.0.0.1.

A fork made after the first of two turns sends the model that turn and not the second;
the original still sends both; the fork's history reads the original's up to the fork
point, then its own.  Set-up (private CODEX_HOME naming the stand-in) as
tests/test_codex_e2e.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from bridge_client import drive, start
from conftest import running_bridge
from test_codex_e2e import Setup, create, setup

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

__all__ = ["setup"]  # the fixture, used by name


def users(body: dict[str, Any]) -> list[str]:
    """The user messages a model request carried, in order."""
    return [
        "".join(c.get("text", "") for c in item.get("content", []))
        for item in body["input"]
        if item.get("role") == "user"
    ]


async def turn(bridge: Any, session_id: str, text: str) -> int:
    """Run one turn to its end; return the sequence of its terminal event."""
    run_id = await start(bridge, session_id, text)
    events = await drive(bridge, run_id, timeout=60)
    assert events[-1]["type"] == "run.completed", events[-1]
    page = await bridge.result("events/read", {"sessionId": session_id, "after": 0, "limit": 1000})
    last: int = page["events"][-1]["sequence"]
    return last


async def test_codex_fork_midway(setup: Setup) -> None:
    s = setup
    async with running_bridge("newline", env=s.env) as bridge:
        original = await create(bridge, s)
        first = await turn(bridge, original, "remember the word apple")
        await turn(bridge, original, "remember the word banana")
        # thread/fork cuts at a turn (lastTurnId) and nothing finer: an event inside a
        # run is refused, saying so (capabilities.fork: granularity run, the default)
        listed = await bridge.result("providers/list", {"probe": False})
        codex = next(p for p in listed["providers"] if p["id"] == "codex")
        assert codex["capabilities"]["fork"] == {"atEnd": True, "atEvent": True}
        reply = await bridge.call("session/fork", {"sessionId": original, "atEvent": first - 1}, 30)
        data = reply["error"]["data"]
        assert data["code"] == "invalid_params" and data["details"]["field"] == "atEvent"
        assert "between its turns" in data["details"]["reason"]
        forked = await bridge.result(
            "session/fork", {"sessionId": original, "atEvent": first}, timeout=30
        )
        assert forked["providerSequence"] == first
        fork = forked["session"]
        assert fork["parent"] == {"sessionId": original, "sequence": first}
        assert fork["lastSequence"] == first
        await turn(bridge, fork["sessionId"], "which words do you know?")
        await turn(bridge, original, "and you?")
        page = await bridge.result(
            "events/read", {"sessionId": fork["sessionId"], "after": 0, "limit": 1000}
        )
        assert {e["sessionId"] for e in page["events"]} == {fork["sessionId"]}
        assert [e["sequence"] for e in page["events"]] == list(
            range(1, page["events"][-1]["sequence"] + 1)
        )
    bodies = s.server.response_bodies()
    last_users = [users(b)[-1] for b in bodies]
    fork_body = bodies[last_users.index("which words do you know?")]
    original_body = bodies[last_users.index("and you?")]
    assert "remember the word apple" in users(fork_body)
    assert "remember the word banana" not in users(fork_body)
    assert users(original_body)[-3:] == [
        "remember the word apple",
        "remember the word banana",
        "and you?",
    ]
    assert "which words do you know?" not in users(original_body)


async def test_codex_fork_reopened_before_its_first_turn(setup: Setup) -> None:
    """A Codex fork closed before any turn of its own reopens in a later bridge with the
    forked history (the forked thread is resumed, not a fresh one)."""
    s = setup
    state = ("--state-dir", str(s.base / "state"))
    async with running_bridge("newline", *state, env=s.env) as bridge:
        original = await create(bridge, s)
        first = await turn(bridge, original, "remember the word apple")
        await turn(bridge, original, "remember the word banana")
        forked = await bridge.result(
            "session/fork", {"sessionId": original, "atEvent": first}, timeout=30
        )
        fork = forked["session"]["sessionId"]
    async with running_bridge("newline", *state, env=s.env) as bridge:
        await bridge.result("session/resume", {"sessionId": fork}, timeout=30)
        await turn(bridge, fork, "which words now?")
    body = s.server.response_bodies()[-1]
    assert users(body)[-1] == "which words now?"
    assert "remember the word apple" in users(body)
    assert "remember the word banana" not in users(body)
