"""Codex's agent threads as the subagent tree (adapters/codex/agents.py), on records that
validate against the vendored app-server schema: the cases the real CLI is not driven
into by tests/test_codex_e2e.py (a subagent spawning its own, a failed spawn, a child
whose turn fails, a run ending with a subagent still running).  The common case (spawn,
child command with its approval, wait) runs with the real CLI there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import msgspec

from agent_bridge.adapters.codex import agents
from agent_bridge.adapters.codex import protocol as p
from agent_bridge.adapters.codex.mapping import TurnState, item_started
from agent_bridge.wire.events import ToolActivity

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = json.loads(
    (ROOT / "adapters" / "codex" / "schema" / "app_server_protocol.json").read_text()
)
NOTIFICATION = jsonschema.Draft7Validator(
    {"$ref": "#/definitions/ServerNotification", "definitions": BUNDLE["definitions"]}
)

MAIN, CHILD, GRANDCHILD = "thread-main", "thread-child", "thread-grandchild"


def collab(
    item_id: str, tool: str, status: str, sender: str, receivers: list[str], prompt: str | None
) -> dict[str, Any]:
    return {
        "type": "collabAgentToolCall",
        "id": item_id,
        "tool": tool,
        "status": status,
        "senderThreadId": sender,
        "receiverThreadIds": receivers,
        "prompt": prompt,
        "model": None,
        "reasoningEffort": None,
        "agentsStates": {r: {"status": "pendingInit", "message": None} for r in receivers},
    }


def notified(method: str, thread: str, item: dict[str, Any]) -> dict[str, Any]:
    """``item`` as the params of ``method`` for ``thread``, checked against the schema,
    then decoded the way the session decodes it."""
    params: dict[str, Any] = {"threadId": thread, "turnId": f"turn-{thread}", "item": item}
    if method == "item/completed":
        params["completedAtMs"] = 1
    else:
        params["startedAtMs"] = 1
    errors = [e.message for e in NOTIFICATION.iter_errors({"method": method, "params": params})]
    assert not errors, errors
    decoded: dict[str, Any] = p.decode(p.ItemNotification, msgspec.json.encode(params)).item
    return decoded


def tools(payloads: list[Any]) -> list[ToolActivity]:
    return [x for x in payloads if isinstance(x, ToolActivity)]


def test_a_subagent_spawning_its_own_nests_under_it() -> None:
    tree = agents.AgentTree()
    main = TurnState()
    spawn = collab("spawn-a", "spawnAgent", "inProgress", MAIN, [], "Look around")
    started = tools(agents.collab_started(main, notified("item/started", MAIN, spawn), None))
    assert started[0].subagent is not None and started[0].subagent.status == "running"
    assert started[0].subagent.description == "Look around"
    done = collab("spawn-a", "spawnAgent", "completed", MAIN, [CHILD], "Look around")
    assert agents.collab_completed(main, tree, notified("item/completed", MAIN, done), None) == []
    child = tree.get(CHILD)
    assert child is not None and child.spawn_call == "spawn-a"

    # the child spawns one of its own: its call is under spawn-a, its agent under it
    inner = collab("spawn-b", "spawnAgent", "completed", CHILD, [GRANDCHILD], "Dig")
    out = tools(
        agents.child_payloads(
            child,
            agents.collab_completed(
                child.state, tree, notified("item/completed", CHILD, inner), child.spawn_call
            ),
        )
    )
    assert [(t.tool_call_id, t.status, t.parent_tool_call_id) for t in out] == [
        ("spawn-b", "started", "spawn-a")
    ]
    grandchild = tree.get(GRANDCHILD)
    assert grandchild is not None and grandchild.spawn_parent == "spawn-a"
    command = {
        "type": "commandExecution",
        "id": "cmd-1",
        "command": "ls",
        "cwd": "/w",
        "status": "inProgress",
        "commandActions": [],
    }
    inside = tools(
        agents.child_payloads(
            grandchild,
            item_started(grandchild.state, notified("item/started", GRANDCHILD, command)),
        )
    )
    assert inside[0].parent_tool_call_id == "spawn-b"

    # the grandchild's turn fails: its open command fails, then spawn-b (under spawn-a)
    ended = tools(agents.child_turn_ended(grandchild, "failed", 120))
    assert [(t.tool_call_id, t.status, t.parent_tool_call_id) for t in ended] == [
        ("cmd-1", "failed", "spawn-b"),
        ("spawn-b", "failed", "spawn-a"),
    ]
    assert ended[-1].subagent is not None and ended[-1].subagent.status == "failed"
    assert ended[-1].subagent.usage is not None and ended[-1].subagent.usage.tool_uses == 1
    assert agents.child_turn_ended(grandchild, "completed", 5) == []  # ended once


def test_a_failed_spawn_fails_its_call_and_registers_nothing() -> None:
    tree = agents.AgentTree()
    main = TurnState()
    failed = collab("spawn-x", "spawnAgent", "failed", MAIN, [], "Never")
    out = tools(agents.collab_completed(main, tree, notified("item/completed", MAIN, failed), None))
    assert [(t.status, t.subagent and t.subagent.status) for t in out] == [
        ("started", "running"),
        ("failed", "failed"),
    ]
    assert list(tree.children()) == []


def test_usage_is_reported_while_the_subagent_runs_and_it_is_detached_at_run_end() -> None:
    tree = agents.AgentTree()
    main = TurnState()
    done = collab("spawn-u", "spawnAgent", "completed", MAIN, [CHILD], "Count")
    agents.collab_completed(main, tree, notified("item/completed", MAIN, done), None)
    child = tree.get(CHILD)
    assert child is not None
    usage = tools(agents.child_usage(child, 321))
    assert usage[0].status == "output" and usage[0].subagent is not None
    assert usage[0].subagent.usage is not None and usage[0].subagent.usage.total_tokens == 321
    # the run ends before the child: its spawn call ends completed, the agent running
    # (what the session does first at a run's end); nothing is left open for fail_open
    assert agents.detached(child, TurnState()) == []  # not that run's call
    (closed,) = tools(agents.detached(child, main))
    assert closed.tool_call_id == "spawn-u" and closed.status == "completed"
    assert closed.subagent is not None and closed.subagent.status == "running"
    assert closed.subagent.usage is not None and closed.subagent.usage.total_tokens == 321
    assert agents.detached(child, main) == []
    assert main.tools.fail_open() == []
    assert agents.child_usage(child, 400) == []  # nothing more for an ended call


def test_child_thread_ids_out_of_bounds_are_not_followed_shown_or_remembered() -> None:
    """A spawn or a ``subAgentActivity`` naming a child thread id a session cannot keep
    (200 KB, 257 characters, a space or a control character: ``thread_id_ok``) is not
    registered, listed in the call's input or title, or claimed; the call's good ids
    are; 256 characters is still a thread."""
    tree = agents.AgentTree()
    main = TurnState()
    longest = "t" * 256
    bad = ["i" * 200_000, "t" * 257, "id with space", "id\nx", ""]
    spawn = collab("spawn-a", "spawnAgent", "completed", MAIN, [*bad, longest], "Look")
    out = tools(agents.collab_completed(main, tree, notified("item/completed", MAIN, spawn), None))
    assert out[0].input == {"prompt": "Look", "targets": [longest]}
    assert tree.get(longest) is not None and len(list(tree.children())) == 1
    assert agents.spawned(spawn) == [longest]

    # every receiver out of bounds: nothing to follow, the spawn fails
    only_bad = collab("spawn-b", "spawnAgent", "completed", MAIN, bad, "Never")
    out = tools(
        agents.collab_completed(main, tree, notified("item/completed", MAIN, only_bad), None)
    )
    assert [t.status for t in out] == ["started", "failed"]
    assert len(list(tree.children())) == 1 and agents.spawned(only_bad) == []

    for thread in bad:
        activity = {
            "type": "subAgentActivity",
            "id": "act-1",
            "kind": "started",
            "agentThreadId": thread,
            "agentPath": "explorer",
        }
        assert agents.activity(main, tree, activity, None) == []
        assert agents.spawned(activity) == []
    assert len(list(tree.children())) == 1
