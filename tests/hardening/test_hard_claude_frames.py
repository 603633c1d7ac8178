"""Claude Code's CLI writing frames of odd shapes through the fake-claude stand-in, over
real pipes: each is a diagnostic, declined or ignored, never a crash; the run ends on its
own ``result`` and the next run works."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_claude_adapter import Fake, bridge_with, create, payloads, start_run, text_of

from agent_bridge.adapters.claude import mapping


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


async def test_a_line_nested_too_deep_to_decode_is_a_diagnostic(tmp_path: Path) -> None:
    deep = '{"type":"assistant","message":' + _nested(5000) + "}"
    fake = Fake(tmp_path, {"turns": [[{"text": "one"}, {"line": deep}, {"text": "two"}]]})
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        run_id = await start_run(bridge, session_id, "go")
        terminal = await bridge.terminal()
        assert terminal["payload"]["type"] == "run.completed", terminal
        assert text_of(bridge, run_id) == "onetwo"
        codes = [p["code"] for p in payloads(bridge, run_id, "diagnostic")]
        assert codes == ["provider_unparseable_record"]
        await start_run(bridge, session_id, "again")
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"


async def test_a_control_request_too_deep_to_decode_still_gets_an_answer(tmp_path: Path) -> None:
    """A ``can_use_tool`` control request whose input nests 5,000 deep cannot be decoded,
    so its request id could not be read either: the CLI waited for an answer that never
    came (the run hung until an interrupt).  Its id is read from the line's head, and the
    request is declined unread with an error answer; the run goes on."""
    rid = "0d1c2b3a-4f5e-4d6c-8b7a-9f8e7d6c5b4a"
    head = '{"type":"control_request","request_id":"' + rid + '",'
    deep = head + '"request":{"subtype":"can_use_tool","tool_name":"Bash","input":'
    deep += _nested(5000) + "}}"
    steps = [{"text": "one"}, {"line": deep, "await_id": rid}, {"text": "two"}]
    fake = Fake(tmp_path, {"turns": [steps]})
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        run_id = await start_run(bridge, session_id, "go")
        terminal = await bridge.terminal()
        assert terminal["payload"]["type"] == "run.completed", terminal
        assert text_of(bridge, run_id) == "onetwo"
        assert not payloads(bridge, run_id, "interaction.requested")
    replies = [r["reply_to_fake_request"] for r in fake.records() if "reply_to_fake_request" in r]
    assert replies == [
        {"subtype": "error", "request_id": rid, "error": "Unsupported control request subtype"}
    ], replies


async def test_a_session_id_that_cannot_be_kept_is_reported_once(tmp_path: Path) -> None:
    """The CLI names its conversation with an id ``valid_session_id`` does not keep (200
    characters here): the runs go on, but nothing could resume that conversation, and
    nobody was told.  A ``provider_session_id_unusable`` warning says so, once a session,
    without the id."""
    bad = "s" * 200
    fake = Fake(tmp_path, {"session_id": bad})
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        first = await start_run(bridge, session_id, "ECHO:one")
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
        second = await start_run(bridge, session_id, "ECHO:two")
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
        assert text_of(bridge, first) == "one" and text_of(bridge, second) == "two"
        codes = [p["code"] for r in (first, second) for p in payloads(bridge, r, "diagnostic")]
        assert codes == ["provider_session_id_unusable"], codes
        page = await bridge.result("events/read", {"sessionId": session_id, "limit": 1000})
        warned = [e for e in page["events"] if e["payload"].get("code") == codes[0]]
        assert bad not in json.dumps(warned)


async def test_a_cli_that_goes_on_in_another_conversation_fails_the_run(tmp_path: Path) -> None:
    """After its first turn the CLI starts each turn (``system``/``init``) naming another
    session id: every frame of the turn is another session's, so none was ever this
    run's and its ``result`` would never come.  The run fails ``provider_contract`` at
    once; the next run starts a new CLI on this session's own conversation (``--resume``
    of the first id).  Before, the run waited for a result forever (until the host
    interrupted it), its output dropped as stray."""
    other = "0f0e0d0c-0b0a-4909-8807-060504030201"
    fake = Fake(
        tmp_path,
        {"turns": [[{"text": "one"}, {"switch_session": other}], "lost"]},
    )
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        await start_run(bridge, session_id, "first")
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
        run_id = await start_run(bridge, session_id, "second")
        terminal = await bridge.terminal()
        assert terminal["payload"]["type"] == "run.failed", terminal
        assert terminal["payload"]["error"]["code"] == "provider_contract"
        codes = [p["code"] for p in payloads(bridge, run_id, "diagnostic")]
        assert codes == ["provider_session_switched"]
        fake.write_script({"turns": ["three"]})  # what the next CLI process answers
        run_id = await start_run(bridge, session_id, "third")
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
        assert text_of(bridge, run_id) == "three"
    starts = fake.starts()
    assert len(starts) == 2
    resumed = [a for a in starts[1]["argv"] if a.startswith("--resume")]
    assert resumed and other not in resumed[0]


def _deep(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth - 1):
        value = {"a": value}
    return {"command": "ls", "nested": value} if depth > 1 else {"command": "ls"}


OUT_OF_BOUNDS: dict[str, dict[str, Any]] = {
    "input over 4 MiB": {"tool_name": "Bash", "input": {"command": "ls #" + "z" * 5_000_000}},
    "input 100 deep": {"tool_name": "Bash", "input": _deep(100)},
    "tool name over 256": {"tool_name": "T" * 300_000, "input": {"command": "ls"}},
    "display name over 256": {
        "tool_name": "Bash",
        "display_name": "D" * 300_000,
        "input": {"command": "ls"},
    },
}


@pytest.mark.parametrize("request_", OUT_OF_BOUNDS.values(), ids=list(OUT_OF_BOUNDS))
async def test_a_permission_request_too_large_to_show_is_declined_unasked(
    tmp_path: Path, request_: dict[str, Any]
) -> None:
    """A ``can_use_tool`` whose input is over 4 MiB encoded or 64 levels deep, or whose
    tool or display name is over 256 characters: what is approved is what was shown, so
    it is denied without asking the host, one ``claude_request_declined`` diagnostic,
    nothing of it sent to the host or journaled; the turn goes on.  Before, the host was
    asked with the whole value (and it was journaled with the approval)."""
    ask = {"control_request": {"subtype": "can_use_tool", **request_}, "await": True}
    fake = Fake(tmp_path, {"turns": [[ask, ask, {"text": "after"}]]})
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        run_id = await start_run(bridge, session_id, "go")
        terminal = await bridge.terminal()
        assert terminal["payload"]["type"] == "run.completed"
        assert text_of(bridge, run_id) == "after"
        assert not [m for m in bridge.received if m.get("method") == "interaction/request"]
        codes = [p["code"] for p in payloads(bridge, run_id, "diagnostic")]
        assert codes == ["claude_request_declined"]  # once a run
        assert max(len(json.dumps(m)) for m in bridge.received) < 100_000
        events = await bridge.result("events/read", {"sessionId": session_id, "view": "raw"})
        assert len(json.dumps(events)) < 100_000  # nothing of it journaled
    replies = [r["reply_to_fake_request"] for r in fake.records() if "reply_to_fake_request" in r]
    assert [r["response"]["behavior"] for r in replies] == ["deny", "deny"]


def test_tool_request_bounds_at_n_and_n_plus_one() -> None:
    ok = mapping.tool_request_ok
    assert ok({"tool_name": "Bash", "input": _deep(mapping.MAX_TOOL_INPUT_DEPTH)})
    assert not ok({"tool_name": "Bash", "input": _deep(mapping.MAX_TOOL_INPUT_DEPTH + 1)})
    assert ok({"tool_name": "T" * mapping.MAX_TOOL_NAME, "input": {}})
    assert not ok({"tool_name": "T" * (mapping.MAX_TOOL_NAME + 1), "input": {}})
    fill = mapping.MAX_TOOL_INPUT_BYTES - len('{"c":""}')
    assert ok({"input": {"c": "z" * fill}})
    assert not ok({"input": {"c": "z" * (fill + 1)}})


async def test_records_of_many_unknown_types_are_reported_a_bounded_number_of_times(
    tmp_path: Path,
) -> None:
    """200 records each of another unknown type, named by 20,000 characters: each type
    was reported once a run and kept whole (the CLI chose how many, and how long), so
    200 diagnostics and 4 MB of names held for the run.  Now the first 16 types are
    reported, by their first 40 characters."""
    from agent_bridge.adapters.claude import session

    frames = [{"frame": {"type": f"kind{i:03d}" + "k" * 20_000}} for i in range(200)]
    fake = Fake(tmp_path, {"turns": [[*frames, {"text": "after"}]]})
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        run_id = await start_run(bridge, session_id, "go")
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
        assert text_of(bridge, run_id) == "after"
        codes = [p["code"] for p in payloads(bridge, run_id, "diagnostic")]
        assert codes == ["provider_unknown_record"] * session.MAX_UNKNOWN_TYPES


async def test_declined_control_requests_are_reported_once_and_not_journaled(
    tmp_path: Path,
) -> None:
    """30 ``mcp_message`` control requests of 200 KB each: each is answered with an
    error, and reported once for the run, without the request as its raw record.
    Before: 30 diagnostics, each journaling its 200 KB request as provenance."""
    big = {"control_request": {"subtype": "mcp_message", "message": {"blob": "b" * 200_000}}}
    fake = Fake(tmp_path, {"turns": [[*([big] * 30), {"sleep": 0.3}, {"text": "after"}]]})
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        run_id = await start_run(bridge, session_id, "go")
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
        assert text_of(bridge, run_id) == "after"
        codes = [p["code"] for p in payloads(bridge, run_id, "diagnostic")]
        assert codes == ["provider_request_declined"]
        events = await bridge.result("events/read", {"sessionId": session_id, "view": "raw"})
        assert len(json.dumps(events)) < 100_000
    errors = [r for r in fake.replies() if r.get("subtype") == "error"]
    assert len(errors) == 30


async def test_a_session_file_record_too_deep_to_deliver_is_a_diagnostic(tmp_path: Path) -> None:
    """A session file's assistant record whose tool input nests 985 deep: it decodes,
    but its events inside a ``provider/sessions/read`` page nest past what msgspec
    encodes, so the reply failed ``-32603`` and that page of the session could never be
    read (``RecursionError`` in the log).  Now the record is a ``record_too_large``
    diagnostic and the page is delivered."""
    from agent_bridge.adapters.claude import native

    fake = Fake(tmp_path)
    folder = tmp_path / "config" / "projects" / native._encoded(str(fake.workspace.resolve()))
    folder.mkdir(parents=True)
    session_id = "2b0c3c37-5f63-4c4b-9d4b-2a3c4d5e6f72"
    prompt = {
        "type": "user",
        "cwd": str(fake.workspace),
        "sessionId": session_id,
        "timestamp": "2026-12-02T03:39:33.000Z",
        "message": {"role": "user", "content": "hello"},
    }
    deep = '{"a":' * 985 + "1" + "}" * 985
    tool = (
        '{"type":"assistant","message":{"id":"m1","content":'
        '[{"type":"tool_use","id":"t1","name":"Bash","input":' + deep + "}]}}"
    )
    (folder / f"{session_id}.jsonl").write_text(json.dumps(prompt) + "\n" + tool + "\n")
    async with bridge_with(fake) as bridge:
        listed = await bridge.result("provider/sessions/list", {"provider": "claude-code"})
        ref = listed["sessions"][0]["sessionRef"]
        page = await bridge.result(
            "provider/sessions/read", {"provider": "claude-code", "sessionRef": ref}
        )
        first, second = page["records"]
        assert first["events"][0]["type"] == "run.started"
        assert [e.get("code") for e in second["events"]] == ["record_too_large"]
    assert b"RecursionError" not in bytes(bridge.stderr)


async def test_a_rate_limit_name_with_a_line_break_is_not_taken(tmp_path: Path) -> None:
    """A ``rate_limit_event`` whose ``rateLimitType`` is ``five_hour`` plus a line break:
    the name check's ``$`` matched before the trailing newline, so the meter reached the
    host (and the journal) named ``"five_hour\\n"``.  Now it is the ``unified`` meter."""
    event = {
        "type": "rate_limit_event",
        "rate_limit_info": {"status": "allowed", "rateLimitType": "five_hour\n"},
    }
    fake = Fake(tmp_path, {"turns": [[{"frame": event}, {"text": "after"}]]})
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        run_id = await start_run(bridge, session_id, "go")
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
        updates = payloads(bridge, run_id, "limits.updated")
        assert [m["meter"] for u in updates for m in u["meters"]] == ["unified"]


async def test_a_turn_naming_100_000_commands_keeps_a_bounded_number(tmp_path: Path) -> None:
    """A turn's ``init`` naming 100,000 slash commands of 200 characters: every one was
    kept, sent to the host and journaled as one 21 MB ``commands.updated`` (again at
    each change).  Now the first ``MAX_COMMANDS``."""
    names = [f"c{i:06d}" + "x" * 193 for i in range(100_000)]
    init = {"type": "system", "subtype": "init", "slash_commands": names}
    fake = Fake(tmp_path, {"turns": [[{"frame": init}, {"text": "after"}]]})
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        run_id = await start_run(bridge, session_id, "go")
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
        last = payloads(bridge, run_id, "commands.updated")[-1]
        assert len(last["commands"]) == mapping.MAX_COMMANDS
        commands = await bridge.result("session/commands", {"sessionId": session_id})
        assert len(commands["commands"]) == mapping.MAX_COMMANDS
        assert max(len(json.dumps(m)) for m in bridge.received) < 1_000_000


async def test_a_cli_printing_junk_is_reported_a_bounded_number_of_times(tmp_path: Path) -> None:
    """200 lines that are not JSON and 200 stray ``control_response`` records in one
    turn: each was a diagnostic journaled with its line, so the journal grew with the
    junk.  Now the first 16 of each kind are reported (with their lines), the rest
    only logged; the run completes."""
    junk = [{"line": f"debug: step {i} " + "j" * 1000} for i in range(200)]
    strays = [{"stray": "control_response"}] * 200
    fake = Fake(tmp_path, {"turns": [[*junk, *strays, {"text": "after"}]]})
    async with bridge_with(fake) as bridge:
        session_id = await create(bridge, fake)
        run_id = await start_run(bridge, session_id, "go")
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
        assert text_of(bridge, run_id) == "after"
        codes = [p["code"] for p in payloads(bridge, run_id, "diagnostic")]
        assert codes.count("provider_unparseable_record") == 16
        assert codes.count("provider_stray_record") == 16
