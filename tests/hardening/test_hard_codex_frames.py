"""Codex's app-server side sending malformed or unknown ``thread/settings/updated`` frames
(ade9475) through the fake-codex stand-in, over real pipes: each is a diagnostic or
ignored, never a crash; the run completes, ``session/settings`` answers in its schema
(the test host validates every message), the next run works."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bridge_client import allow, codes, drive, of_type, start
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


def _absent(needles: list[bytes], *blobs: bytes | bytearray) -> None:
    """None of ``needles`` is in any of ``blobs``."""
    for blob in blobs:
        for needle in needles:
            assert needle not in blob, (needle[:20], bytes(blob[:300]))


#: Thread ids Codex might answer with that no session may be resumed from
#: (MAX_THREAD_ID 256, printable ASCII without spaces, in adapters/codex/mapping.py).
BAD_THREAD_IDS: list[str] = ["i" * 200_000, "t" * 257, "", "id with space", "id\x00nul", "id\nx"]


async def test_unusable_thread_ids_in_the_thread_response_fail_the_session(
    tmp_path: Path,
) -> None:
    """``thread/start`` or ``thread/resume`` answered with a thread id over the bounds
    (200 KB, 257 characters, empty, a space or a control character): the session is not
    opened (``provider_contract``) rather than kept with it; the id is nowhere (not in the
    reply, the journal's session list or the bridge's stderr); a record naming such an
    id is ``recovery_invalid`` and not sent to Codex."""
    fake = Fake(tmp_path)
    async with running_bridge("newline", env=fake.env) as bridge:
        session = await create(bridge, fake)
        record = (await bridge.result("session/export", {"sessionId": session}))["record"]
        replies: list[Any] = []
        for bad in BAD_THREAD_IDS:
            fake.write({"faults": {"thread_result": {"thread": {"id": bad}}}})
            reply = await bridge.call("session/create", fake.session_params())
            assert reply["error"]["data"]["code"] == "provider_contract", reply
            replies.append(reply)
        reply = await bridge.call("session/resume", {"record": record})
        assert reply["error"]["data"]["code"] == "provider_contract", reply
        replies.append(reply)
        fake.write({})
        for bad in ("r" * 200_000, "r" * 257, "r\nr"):
            opaque = dict(record["opaque"], threadId=bad)
            reply = await bridge.call("session/resume", {"record": dict(record, opaque=opaque)})
            assert reply["error"]["data"]["code"] == "recovery_invalid", reply
            replies.append(reply)
        listed = await bridge.result("session/list", {})
        assert [s["sessionId"] for s in listed["sessions"]] == [session], listed
        events = await drive(bridge, await start(bridge, session, "still here"))
        assert events[-1]["type"] == "run.completed", events[-1]
    resumes = fake.requests("thread/resume")
    assert [r["params"]["threadId"] for r in resumes] == [record["opaque"]["threadId"]]
    assert b"Traceback" not in bridge.stderr, bridge.stderr[-2000:]
    needles = [b"i" * 257, b"t" * 257, b"r" * 257, b"id with space", b"id\\u0000nul"]
    _absent(needles, json.dumps([replies, listed, events]).encode(), bridge.stderr)


async def test_a_resume_answered_with_another_thread_fails_and_the_right_one_resumes(
    tmp_path: Path,
) -> None:
    """``thread/resume`` answered with a well-formed id of another thread: the session
    would go on in a conversation that is not its own, so the resume fails
    ``provider_contract``; answered with its own thread, the same record resumes and runs."""
    fake = Fake(tmp_path)
    async with running_bridge("newline", env=fake.env) as bridge:
        session = await create(bridge, fake)
        record = (await bridge.result("session/export", {"sessionId": session}))["record"]
        own = record["opaque"]["threadId"]
        await bridge.result("session/close", {"sessionId": session})
        fake.write({"faults": {"thread_result": {"thread": {"id": "thr_someone_else"}}}})
        reply = await bridge.call("session/resume", {"record": record})
        assert reply["error"]["data"]["code"] == "provider_contract", reply
        fake.write({})
        resumed = await bridge.result("session/resume", {"record": record})
        assert resumed["session"]["state"] == "active", resumed
        resumed_id = resumed["session"]["sessionId"]
        again = (await bridge.result("session/export", {"sessionId": resumed_id}))["record"]
        assert again["opaque"]["threadId"] == own
        events = await drive(bridge, await start(bridge, resumed_id, "still mine"))
        assert events[-1]["type"] == "run.completed", events[-1]
    assert [r["params"]["threadId"] for r in fake.requests("thread/resume")] == [own, own]
    assert b"Traceback" not in bridge.stderr, bridge.stderr[-2000:]


async def test_an_oversized_cwd_in_the_thread_response_is_not_kept(tmp_path: Path) -> None:
    """A session without a workspace takes the working directory ``thread/start``
    reports, but not one over the bounds (200 KB; MAX_CWD 4096) or not absolute: not in
    the recovery record, not sent in ``skills/list``, a ``codex_unexpected_message``
    diagnostic with the first run; the session works."""
    for index, bad in enumerate(("/" + "c" * 200_000, "relative/dir")):
        (tmp_path / str(index)).mkdir()
        fake = Fake(tmp_path / str(index), {"faults": {"thread_result": {"cwd": bad}}})
        params = fake.session_params()
        del params["workspace"]
        async with running_bridge("newline", env=fake.env) as bridge:
            session = (await bridge.result("session/create", params))["session"]["sessionId"]
            record = (await bridge.result("session/export", {"sessionId": session}))["record"]
            assert "cwd" not in record["opaque"], str(record["opaque"])[:300]
            events = await drive(bridge, await start(bridge, session, "go"))
            assert events[-1]["type"] == "run.completed", events[-1]
            assert "codex_unexpected_message" in codes(events)
        skills = fake.requests("skills/list")
        assert skills and all("cwds" not in r["params"] for r in skills), skills
        assert b"Traceback" not in bridge.stderr, bridge.stderr[-2000:]
        assert b"cwd" in bridge.stderr  # the field's name, never its value
        _absent([b"c" * 1000, b"relative/dir"], json.dumps([record, events]).encode())
        _absent([b"c" * 1000, b"relative/dir"], bridge.stderr)


def _permissions_request(permissions: Any) -> dict[str, Any]:
    return {
        "server_request": {
            "method": "item/permissions/requestApproval",
            "params": {
                "threadId": "$threadId",
                "turnId": "$turnId",
                "itemId": "perm_1",
                "cwd": "/w",
                "permissions": permissions,
                "reason": "needs the network",
                "startedAtMs": 1796003040253,
            },
        }
    }


async def test_oversized_permissions_requests_are_declined_unasked(tmp_path: Path) -> None:
    """``item/permissions/requestApproval`` whose ``permissions`` are over the bounds (a
    200 KB object, one nested 200 deep; MAX_PERMISSIONS_BYTES 16 KiB, MAX_POLICY_DEPTH 8)
    is declined without asking the host (nothing is granted that was not shown), with a
    ``codex_request_declined`` diagnostic; none of it is journaled or logged.  One within
    them is asked and, allowed, granted back as shown."""
    small = {"fileSystem": {"read": ["/w/docs"], "write": None}, "network": {"enabled": True}}
    big = {"fileSystem": {"read": ["/w/" + "p" * 200_000]}}
    steps = [_permissions_request(p) for p in (big, _deep(200), small)]
    steps.append({"text": "still here"})
    fake = Fake(tmp_path, {"replies": [steps]})
    async with running_bridge("newline", env=fake.env) as bridge:
        session = await create(bridge, fake)
        events = await drive(bridge, await start(bridge, session, "go"), allow("session"))
        assert events[-1]["type"] == "run.completed", events[-1]
        asked = of_type(events, "interaction.requested")
        assert [a["request"]["input"]["permissions"] for a in asked] == [small], asked
        assert "codex_request_declined" in codes(events)
        page = await bridge.result(
            "events/read", {"sessionId": session, "view": "raw", "limit": 1000}
        )
    granted = [r["result"] for r in fake.replies() if "result" in r]
    empty = {"permissions": {}, "scope": "turn"}
    assert granted == [empty, empty, {"permissions": small, "scope": "session"}], granted
    assert b"Traceback" not in bridge.stderr, bridge.stderr[-2000:]
    needles = [b"p" * 1000, b'{"a":' * 20]
    _absent(needles, json.dumps([events, page]).encode(), bridge.stderr)


async def test_sandbox_policies_of_unknown_types_are_reported(tmp_path: Path) -> None:
    """A sandbox policy of a type the adapter does not know (``externalSandbox``), in the
    ``thread/start`` result or in ``thread/settings/updated``, leaves the session's
    sandbox as it was and is reported: ``codex_unexpected_message``, the field's name in
    the log (never the value)."""
    external = {"type": "externalSandbox", "networkAccess": "restricted"}
    fake = Fake(
        tmp_path,
        {
            "faults": {"thread_result": {"sandbox": external}},
            "replies": [[{"text": "one"}], [_note({"sandboxPolicy": external}), {"text": "two"}]],
        },
    )
    async with running_bridge("newline", env=fake.env) as bridge:
        session = await create(bridge, fake)
        events = await drive(bridge, await start(bridge, session, "go"))
        assert events[-1]["type"] == "run.completed", events[-1]
        assert "codex_unexpected_message" in codes(events)
        events2 = await drive(bridge, await start(bridge, session, "again"))
        assert events2[-1]["type"] == "run.completed", events2[-1]
        assert "codex_unexpected_message" in codes(events2)
        record = (await bridge.result("session/export", {"sessionId": session}))["record"]
        assert record["opaque"]["sandbox"] == "workspace-write", record["opaque"]
    assert bridge.stderr.count(b"not kept (wrong type or out of bounds): sandbox") == 2
    assert b"externalSandbox" not in bridge.stderr


def _request(method: str, **fields: Any) -> dict[str, Any]:
    params = {"threadId": "$threadId", "turnId": "$turnId", "itemId": "item_1", **fields}
    return {"server_request": {"method": method, "params": params}}


def _command(**fields: Any) -> dict[str, Any]:
    base = {"command": "ls", "cwd": "/w", "commandActions": [], "kind": "command"}
    return _request("item/commandExecution/requestApproval", **{**base, **fields})


async def test_approvals_that_cannot_be_shown_whole_are_declined_unasked(
    tmp_path: Path,
) -> None:
    """Approvals out of the bounds (adapters/codex/mapping.py: a command over 64 KiB, a
    ``cwd`` or ``grantRoot`` relative or over 4096 characters, ``commandActions`` over
    128 KiB or 8 levels deep, a permissions request with such a ``cwd``) are declined
    without asking the host (what is approved is what was shown), with a
    ``codex_request_declined`` diagnostic; none of it is journaled or logged.  Within the
    bounds they are asked, and a 10,000-character ``reason`` is shown cut to 4,096."""
    long_reason = "why " * 2_500
    steps = [
        _command(command="c" * 70_000),
        _command(cwd="relative/dir"),
        _command(cwd="/" + "d" * 5_000),
        _command(commandActions=[{"command": "a" * 140_000}]),
        _command(commandActions=[_deep(200)]),
        _request("item/fileChange/requestApproval", grantRoot="not/absolute"),
        _request("item/permissions/requestApproval", cwd="rel", permissions={}),
        _command(command="c" * 65_536, reason=long_reason),  # at the bound: asked
        _request("item/fileChange/requestApproval", grantRoot="/w/out"),
        _request("item/permissions/requestApproval", cwd="/w", permissions={}),
        {"text": "still here"},
    ]
    fake = Fake(tmp_path, {"replies": [steps]})
    async with running_bridge("newline", env=fake.env) as bridge:
        session = await create(bridge, fake)
        events = await drive(bridge, await start(bridge, session, "go"), allow("once"))
        assert events[-1]["type"] == "run.completed", events[-1]
        asked = [a["request"] for a in of_type(events, "interaction.requested")]
        assert [a["action"] for a in asked] == ["command", "fileChange", "permissions"], asked
        assert len(asked[0]["command"]) == 65_536
        assert asked[0]["input"]["reason"] == long_reason[:4095] + "…"
        assert asked[1]["input"]["grantRoot"] == "/w/out"
        declines = [
            d for d in of_type(events, "diagnostic") if d["code"] == "codex_request_declined"
        ]
        assert len(declines) == 3, declines  # once a run for each method
        page = await bridge.result(
            "events/read", {"sessionId": session, "view": "raw", "limit": 1000}
        )
    decisions = [r["result"] for r in fake.replies() if "result" in r]
    declined = {"decision": "decline"}
    empty = {"permissions": {}, "scope": "turn"}
    assert decisions[:7] == [declined] * 6 + [empty], decisions
    assert decisions[7:] == [
        {"decision": "accept"},
        {"decision": "accept"},
        {"permissions": {}, "scope": "turn"},
    ], decisions
    assert b"Traceback" not in bridge.stderr, bridge.stderr[-2000:]
    needles = [b"c" * 70_000, b"d" * 5_000, b"a" * 140_000, b"relative/dir", b"not/absolute"]
    _absent(needles, json.dumps([events, page]).encode(), bridge.stderr)
