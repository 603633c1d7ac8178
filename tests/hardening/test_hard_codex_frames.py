"""Codex's app-server side sending malformed or unknown ``thread/settings/updated`` frames
(ade9475) through the fake-codex stand-in, over real pipes: each is a diagnostic or
ignored, never a crash; the run completes, ``session/settings`` answers in its schema
(the test host validates every message), the next run works."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bridge_client import codes, drive, of_type, start
from conftest import running_bridge
from test_codex_adapter import Fake, create


def _note(settings: Any, thread: str = "$threadId") -> dict[str, Any]:
    return {
        "notify": {
            "method": "thread/settings/updated",
            "params": {"threadId": thread, "threadSettings": settings},
        }
    }


BAD: list[Any] = [
    "junk",  # not an object
    {"model": 42},  # a field of the wrong type
    {"model": "\ud800lone"},  # a lone surrogate (escaped in the JSON)
    {"model": "m" * 200_000},  # very long
    {"model": "gpt\n5"},  # a control character
    {"model": ""},  # empty
    {"effort": "ultra"},  # a value outside the enum
    {"approvalPolicy": {"granular": {"sandbox_approval": True}}},  # an object
    {"sandboxPolicy": {"type": "somethingNew"}},  # an unknown sandbox
    {"sandboxPolicy": "readOnly"},  # a string, not a policy object
    None,
]


async def test_malformed_settings_frames_never_break_the_session(tmp_path: Path) -> None:
    steps: list[Any] = [_note(s) for s in BAD]
    steps.append({"notify": {"method": "thread/settings/updated", "params": "nope"}})
    steps.append({"notify": {"method": "thread/settings/updated"}})
    steps.append({"text": "still here"})
    fake = Fake(tmp_path, {"replies": [steps, [{"text": "second"}]]})
    async with running_bridge("newline", env=fake.env) as bridge:
        session = await create(bridge, fake)
        first = await bridge.result("session/settings", {"sessionId": session})
        events = await drive(bridge, await start(bridge, session, "go"))
        assert events[-1]["type"] == "run.completed", events[-1]
        assert "codex_unexpected_message" in codes(events)
        # nothing readable is kept: a 200 KB model name, a lone surrogate and an effort
        # outside the known set are dropped with the diagnostic, not stored
        assert of_type(events, "settings.updated") == []
        settings = await bridge.result("session/settings", {"sessionId": session})
        assert settings["model"] == first["model"], settings
        events2 = await drive(bridge, await start(bridge, session, "again"))
        assert events2[-1]["type"] == "run.completed", events2[-1]
        turns = fake.requests("turn/start")
        assert len(turns) == 2
        assert "effort" not in turns[1]["params"], turns[1]["params"]
        assert "model" not in turns[1]["params"], turns[1]["params"]
    assert b"Traceback" not in bridge.stderr, bridge.stderr[-2000:]


def _deep(depth: int) -> Any:
    value: Any = True
    for _ in range(depth):
        value = {"a": value}
    return value


#: Policies Codex might send that the bridge must not keep (MAX_POLICY_BYTES 4096 and
#: MAX_POLICY_DEPTH 8 in adapters/codex/mapping.py).
OVERSIZED: list[Any] = [
    {"approvalPolicy": {"granular": {"rules": True, "note": "x" * 200_000}}},  # 200 KB
    {"approvalPolicy": _deep(200)},  # nested 200 deep
    {"approvalPolicy": ["never"]},  # neither a name nor an object
    {"approvalPolicy": "n" * 200_000},  # a 200 KB name
    {"sandboxPolicy": "s" * 200_000},  # a 200 KB sandbox string
]


def _unkept(blob: bytes | bytearray) -> None:
    """None of the oversized values is in ``blob``."""
    for needle in (b"x" * 1000, b"n" * 1000, b"s" * 1000, b'{"a":' * 20):
        assert needle not in blob, blob[:300]


async def test_oversized_policies_in_settings_frames_are_not_kept(tmp_path: Path) -> None:
    """``thread/settings/updated`` with an approval policy over the bounds (a 200 KB or
    200-deep object, a list, a 200 KB name) or a 200 KB sandbox string: a
    ``codex_unexpected_message`` diagnostic, the mode becomes unknown (reported once as
    ``settings.updated``), and none of it is kept: not in ``session/settings``, the
    recovery record, the raw records or the next ``turn/start``; the session works on."""
    steps: list[Any] = [_note(s) for s in OVERSIZED]
    steps.append({"text": "still here"})
    fake = Fake(tmp_path, {"replies": [steps, [{"text": "second"}]]})
    async with running_bridge("newline", env=fake.env) as bridge:
        session = await create(bridge, fake, approvalPolicy="on-request")
        first = await bridge.result("session/settings", {"sessionId": session})
        assert first["mode"]["current"] == "auto"
        events = await drive(bridge, await start(bridge, session, "go"))
        assert events[-1]["type"] == "run.completed", events[-1]
        record = (await bridge.result("session/export", {"sessionId": session}))["record"]
        assert "approvalPolicy" not in record["opaque"], str(record["opaque"])[:300]
        assert record["opaque"]["sandbox"] == "workspace-write"
        settings = await bridge.result("session/settings", {"sessionId": session})
        assert settings["mode"].get("current") is None, settings
        assert [e.get("mode") for e in of_type(events, "settings.updated")] == [None]
        assert "codex_unexpected_message" in codes(events)
        page = await bridge.result(
            "events/read", {"sessionId": session, "view": "raw", "limit": 1000}
        )
        events2 = await drive(bridge, await start(bridge, session, "again"))
        assert events2[-1]["type"] == "run.completed", events2[-1]
    _unkept(json.dumps([page, record, settings, events]).encode())
    turns = fake.requests("turn/start")
    assert len(turns) == 2
    _unkept(json.dumps(turns).encode())
    assert b"Traceback" not in bridge.stderr, bridge.stderr[-2000:]
    _unkept(bridge.stderr)


async def test_oversized_settings_in_the_thread_response_are_not_kept(tmp_path: Path) -> None:
    """``thread/start`` answered with an approval policy over the bounds, a 200 KB sandbox
    string and a 200 KB model: the session opens, none of them is kept (mode unknown,
    model and sandbox the session's own), the diagnostic comes with the first run."""
    bad = {
        "approvalPolicy": {"granular": {"rules": True, "note": "x" * 200_000}},
        "sandbox": "s" * 200_000,
        "model": "n" * 200_000,
    }
    fake = Fake(tmp_path, {"faults": {"thread_result": bad}})
    async with running_bridge("newline", env=fake.env) as bridge:
        session = await create(bridge, fake, approvalPolicy="on-request", model="gpt-x")
        record = (await bridge.result("session/export", {"sessionId": session}))["record"]
        assert "approvalPolicy" not in record["opaque"], str(record["opaque"])[:300]
        assert record["opaque"]["sandbox"] == "workspace-write"
        assert record["opaque"]["model"] == "gpt-x"
        settings = await bridge.result("session/settings", {"sessionId": session})
        assert settings["mode"].get("current") is None, settings
        assert settings["model"]["current"] == "gpt-x"
        events = await drive(bridge, await start(bridge, session, "go"))
        assert events[-1]["type"] == "run.completed", events[-1]
        assert "codex_unexpected_message" in codes(events)
    _unkept(json.dumps([record, settings, events, fake.requests("turn/start")]).encode())
    assert b"Traceback" not in bridge.stderr, bridge.stderr[-2000:]
    _unkept(bridge.stderr)
