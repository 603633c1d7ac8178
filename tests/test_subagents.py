"""Subagents as a tree, the pure part: how Claude Code's stream-json records of a
subagent (``parent_tool_use_id``, ``system``/``task_*``, ``can_use_tool`` with its
``agent_id``) become tool activity tagged with the Task call that started it.  The real
CLI is driven in tests/test_subagents_e2e.py; the records here are the shapes it wrote
(claude 2.1.197)."""

from __future__ import annotations

from typing import Any

from agent_bridge.adapters.claude import mapping
from agent_bridge.wire.events import Subagent, SubagentUsage, ToolActivity

TASK = {
    "type": "assistant",
    "parent_tool_use_id": None,
    "message": {
        "id": "msg_1",
        "content": [
            {
                "type": "tool_use",
                "id": "toolu_task",
                "name": "Task",
                "input": {
                    "description": "look around",
                    "prompt": "run echo hi",
                    "subagent_type": "general-purpose",
                },
            }
        ],
    },
}


def _inner(tool_id: str) -> dict[str, Any]:
    return {
        "type": "assistant",
        "parent_tool_use_id": "toolu_task",
        "message": {
            "id": "msg_2",
            "content": [
                {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": "ls"}},
                {"type": "text", "text": "the subagent's words"},
            ],
        },
    }


def _task(subtype: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "system",
        "subtype": subtype,
        "task_id": "agent42",
        "tool_use_id": "toolu_task",
        **extra,
    }


def test_a_subagent_and_its_tool_calls_form_a_tree() -> None:
    state = mapping.TurnState()
    (started,) = mapping.assistant_payloads(state, TASK)
    assert isinstance(started, ToolActivity) and started.parent_tool_call_id is None
    assert started.subagent == Subagent("general-purpose", "look around", "running")
    assert mapping.task_payloads(state, _task("task_started")) == []
    # Inside the subagent: tagged; its text is not the run's reply.
    (inner,) = mapping.assistant_payloads(state, _inner("toolu_ls"))
    assert isinstance(inner, ToolActivity) and inner.parent_tool_call_id == "toolu_task"
    progress = mapping.task_payloads(
        state, _task("task_progress", usage={"total_tokens": 13, "tool_uses": 1})
    )
    assert progress == [
        ToolActivity(
            "toolu_task",
            "Task",
            "output",
            subagent=Subagent(status="running", usage=SubagentUsage(13, 1, None)),
        )
    ]
    result = {
        "type": "user",
        "parent_tool_use_id": "toolu_task",
        "message": {"content": [{"type": "tool_result", "tool_use_id": "toolu_ls"}]},
    }
    (done,) = mapping.tool_result_payloads(state, result)
    assert isinstance(done, ToolActivity) and done.parent_tool_call_id == "toolu_task"
    end = mapping.task_payloads(state, _task("task_notification", status="failed"))
    assert isinstance(end[0], ToolActivity) and end[0].subagent == Subagent(status="failed")
    task_result = {
        "type": "user",
        "parent_tool_use_id": None,
        "message": {
            "content": [{"type": "tool_result", "tool_use_id": "toolu_task", "is_error": True}]
        },
    }
    (closed,) = mapping.tool_result_payloads(state, task_result)
    assert isinstance(closed, ToolActivity) and closed.status == "failed"
    assert closed.subagent == Subagent(status="failed") and closed.parent_tool_call_id is None


def test_a_subagents_approval_names_its_parent() -> None:
    state = mapping.TurnState()
    mapping.assistant_payloads(state, TASK)
    mapping.task_payloads(state, _task("task_started"))
    # Asked before the CLI reported the subagent's tool call: found by its agent id.
    early = {"tool_name": "Bash", "input": {"command": "ls"}, "tool_use_id": "toolu_x"}
    asked = mapping.permission_request({**early, "agent_id": "agent42"}, "/w", state)
    assert getattr(asked.interaction, "parent_tool_call_id", None) == "toolu_task"
    mapping.assistant_payloads(state, _inner("toolu_y"))
    later = mapping.permission_request({**early, "tool_use_id": "toolu_y"}, "/w", state)
    assert getattr(later.interaction, "parent_tool_call_id", None) == "toolu_task"
    main = mapping.permission_request({**early, "agent_id": "other"}, "/w", state)
    assert getattr(main.interaction, "parent_tool_call_id", "x") is None


def test_records_of_other_tasks_are_not_reported() -> None:
    state = mapping.TurnState()
    unknown = {**_task("task_progress"), "tool_use_id": "toolu_elsewhere"}
    assert mapping.task_payloads(state, unknown) == []
    assert mapping.subagent_of("Bash", {}) is None
    assert mapping.subagent_of("Agent", "junk") == Subagent(status="running")


def test_acp_updates_from_a_subagent_are_tagged_and_its_words_kept_out() -> None:
    from agent_bridge.adapters.acp import mapping as acp

    state = acp.TurnState()
    meta = {"_meta": {"claudeCode": {"parentToolUseId": "toolu_task"}}}
    call = {"sessionUpdate": "tool_call", "toolCallId": "t1", "status": "pending", **meta}
    (started,) = acp.update_payloads(state, call)
    assert isinstance(started, ToolActivity) and started.parent_tool_call_id == "toolu_task"
    # A later update without the _meta keeps the parent it was started under.
    done = {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}
    (ended,) = acp.update_payloads(state, done)
    assert isinstance(ended, ToolActivity) and ended.parent_tool_call_id == "toolu_task"
    chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}
    assert acp.update_payloads(state, {**chunk, **meta}) == []
    assert len(acp.update_payloads(state, chunk)) == 1  # the main agent's words
    assert acp.parent_of({"_meta": {"claudeCode": {"parentToolUseId": 7}}}) is None
    asked = acp.permission_request({"toolCall": {"toolCallId": "t1"}}, None, None, "toolu_task")
    assert asked.request.parent_tool_call_id == "toolu_task"
    # A subagent's call still open when the run ends is failed in its place in the tree.
    open_call = {"sessionUpdate": "tool_call", "toolCallId": "t2", "status": "pending", **meta}
    acp.update_payloads(state, open_call)
    (failed,) = acp.open_tools_failed(state)
    assert isinstance(failed, ToolActivity) and failed.status == "failed"
    assert failed.tool_call_id == "t2" and failed.parent_tool_call_id == "toolu_task"


def test_the_acp_front_end_passes_the_tree_on_in_meta() -> None:
    from agent_bridge.frontends.acp.updates import UpdateMapper

    updates = UpdateMapper()
    task = ToolActivity(
        "toolu_task", "Task", "started", subagent=Subagent("general-purpose", status="running")
    )
    inner = ToolActivity("t1", "Bash", "started", parent_tool_call_id="toolu_task")
    (outer,) = updates.updates(task)
    assert outer["_meta"] == {
        "agentBridge": {"subagent": {"agentType": "general-purpose", "status": "running"}}
    }
    (sub,) = updates.updates(inner)
    assert sub["_meta"] == {"agentBridge": {"parentToolCallId": "toolu_task"}}
    (plain,) = updates.updates(ToolActivity("t2", "Bash", "started"))
    assert "_meta" not in plain


def test_calls_still_open_when_the_run_ends_are_failed_in_the_tree() -> None:
    """At a run's end, each call that started and got no ``tool_result`` (the Task call
    and the subagent's own call here) is ``failed``, in the order they started, still
    placed in the tree; a call whose result came is not reported again."""
    state = mapping.TurnState()
    mapping.assistant_payloads(state, TASK)
    mapping.assistant_payloads(state, _inner("toolu_ls"))
    mapping.assistant_payloads(state, _inner("toolu_done"))
    result = {
        "type": "user",
        "parent_tool_use_id": "toolu_task",
        "message": {"content": [{"type": "tool_result", "tool_use_id": "toolu_done"}]},
    }
    mapping.tool_result_payloads(state, result)
    assert mapping.open_tools_failed(state) == [
        ToolActivity("toolu_task", "Task", "failed", subagent=Subagent(status="failed")),
        ToolActivity("toolu_ls", "Bash", "failed", parent_tool_call_id="toolu_task"),
    ]
    assert mapping.open_tools_failed(state) == []
