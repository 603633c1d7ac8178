"""Codex's app-server side sending malformed or unknown ``thread/settings/updated`` frames
(ade9475) through the fake-codex stand-in, over real pipes: each is a diagnostic or
ignored, never a crash; the run completes, ``session/settings`` answers in its schema
(the test host validates every message), the next run works."""

from __future__ import annotations

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
