"""The tool-call model of ``tool.activity`` (kind, title, locations, content with
structured edits), the same for every provider: ACP agents report it natively, Claude
Code's Edit/Write/MultiEdit inputs and Codex's fileChange items are mapped onto it."""

from __future__ import annotations

from typing import Any

import msgspec

from agent_bridge.adapters.acp import mapping as acp
from agent_bridge.adapters.claude import mapping as claude
from agent_bridge.adapters.codex import mapping as codex
from agent_bridge.wire.events import ToolActivity
from agent_bridge.wire.tools import ToolEdit, ToolLocation, ToolText


def wire(payload: Any) -> Any:
    return msgspec.json.decode(msgspec.json.encode(payload))


def test_wire_shape_is_additive() -> None:
    plain = ToolActivity("t", "Bash", "started", input={"command": "ls"})
    assert wire(plain) == {
        "type": "tool.activity",
        "toolCallId": "t",
        "name": "Bash",
        "status": "started",
        "input": {"command": "ls"},
    }
    full = ToolActivity(
        "t",
        "Edit",
        "started",
        kind="edit",
        title="Edit a",
        locations=(ToolLocation("/w/a", 3),),
        content=(ToolText("why"), ToolEdit("/w/a", "new", "old")),
    )
    assert wire(full)["content"] == [
        {"type": "text", "text": "why"},
        {"type": "edit", "path": "/w/a", "newText": "new", "oldText": "old"},
    ]
    assert wire(full)["locations"] == [{"path": "/w/a", "line": 3}]


def test_claude_edit_write_multiedit() -> None:
    edit = claude.tool_view(
        "Edit", {"file_path": "/w/a.py", "old_string": "x = 1", "new_string": "x = 2"}
    )
    assert edit["kind"] == "edit" and edit["title"] == "Edit /w/a.py"
    assert edit["locations"] == (ToolLocation("/w/a.py"),)
    assert edit["content"] == (ToolEdit("/w/a.py", "x = 2", "x = 1"),)
    write = claude.tool_view("Write", {"file_path": "/w/new.txt", "content": "hello\n"})
    assert write["content"] == (ToolEdit("/w/new.txt", "hello\n", None),)
    multi = claude.tool_view(
        "MultiEdit",
        {
            "file_path": "/w/m",
            "edits": [
                {"old_string": "a", "new_string": "b"},
                {"old_string": "c", "new_string": "d"},
            ],
        },
    )
    assert multi["content"] == (ToolEdit("/w/m", "b", "a"), ToolEdit("/w/m", "d", "c"))
    bash = claude.tool_view("Bash", {"command": "ls -la"})
    assert bash == {"kind": "execute", "title": "ls -la"}
    assert claude.tool_view("Task", {"prompt": "x"}) == {"kind": "other"}


def test_claude_tool_use_carries_the_model() -> None:
    state = claude.TurnState()
    message = {
        "type": "assistant",
        "message": {
            "id": "m",
            "content": [
                {
                    "type": "tool_use",
                    "id": "tu1",
                    "name": "Edit",
                    "input": {"file_path": "/w/a", "old_string": "o", "new_string": "n"},
                }
            ],
        },
    }
    payloads = claude.assistant_payloads(state, message)
    assert isinstance(payloads[0], ToolActivity)
    assert payloads[0].kind == "edit" and payloads[0].content == (ToolEdit("/w/a", "n", "o"),)
    assert payloads[0].input == {"file_path": "/w/a", "old_string": "o", "new_string": "n"}


DIFF = "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n@@ -9,1 +9,2 @@\n z\n+y\n"


def test_codex_file_change() -> None:
    item = {
        "type": "fileChange",
        "id": "fc",
        "status": "inProgress",
        "changes": [
            {"path": "/w/new.txt", "kind": {"type": "add"}, "diff": "hello\n"},
            {"path": "/w/x.py", "kind": {"type": "update", "move_path": None}, "diff": DIFF},
            {"path": "/w/old.txt", "kind": {"type": "delete"}, "diff": "bye\n"},
        ],
    }
    state = codex.TurnState()
    started = codex.item_started(state, item)
    assert isinstance(started[0], ToolActivity)
    activity = started[0]
    assert activity.name == "fileChange" and activity.kind == "edit"
    assert [loc.path for loc in activity.locations] == ["/w/new.txt", "/w/x.py", "/w/old.txt"]
    assert activity.content == (
        ToolEdit("/w/new.txt", "hello\n", None),
        ToolEdit("/w/x.py", "a\nB\nc\n", "a\nb\nc\n"),
        ToolEdit("/w/x.py", "z\ny\n", "z\n"),
        ToolEdit("/w/old.txt", "", "bye\n"),
    )
    assert activity.input is not None  # the old input stays as it was
    deleted = codex.tool_view(
        {
            "type": "fileChange",
            "changes": [{"path": "/w/o", "kind": {"type": "delete"}, "diff": "x"}],
        }
    )
    assert deleted["kind"] == "delete"
    moved = codex.tool_view(
        {
            "type": "fileChange",
            "changes": [
                {"path": "/w/o", "kind": {"type": "update", "move_path": "/w/p"}, "diff": DIFF}
            ],
        }
    )
    assert moved["kind"] == "move"
    command = codex.tool_view({"type": "commandExecution", "command": "ls"})
    assert command == {"kind": "execute", "title": "ls"}


def test_acp_diff_content_is_a_structured_edit() -> None:
    state = acp.TurnState()
    payloads = acp.tool_payloads(
        state,
        {
            "toolCallId": "c",
            "title": "Write f",
            "kind": "edit",
            "status": "completed",
            "locations": [{"path": "/w/f", "line": 2}],
            "content": [
                {"type": "diff", "path": "/w/f", "newText": "n"},
                {"type": "content", "content": {"type": "text", "text": "done"}},
                {"type": "terminal", "terminalId": "t"},
            ],
        },
    )
    started, completed = payloads
    assert isinstance(started, ToolActivity) and isinstance(completed, ToolActivity)
    assert started.kind == "edit" and started.locations == (ToolLocation("/w/f", 2),)
    assert started.content == (ToolEdit("/w/f", "n", None), ToolText("done"))
    assert completed.status == "completed" and completed.output == "done"
    other = acp.tool_payloads(
        acp.TurnState(), {"toolCallId": "d", "title": "x", "kind": "switch_mode"}
    )
    assert isinstance(other[0], ToolActivity) and other[0].kind == "other"
