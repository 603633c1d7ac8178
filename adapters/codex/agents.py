"""Codex's agent threads as the bridge's subagent tree (pure: records in, payloads out).

With its multi-agent tools the model of a Codex thread spawns other agents: each is a
thread of its own in the same app-server, announced by a ``collabAgentToolCall`` item of
the spawning thread (``tool: "spawnAgent"``, ``receiverThreadIds`` naming the new thread
once spawned), whose notifications (``item/*``, ``thread/tokenUsage/updated``,
``turn/completed``) then arrive on the same connection under the child's ``threadId``.
The mapping:

* the ``spawnAgent`` call is the subagent's tool call: ``started`` with ``subagent``
  (``status: running``, the prompt as its description), ``output`` events with its usage
  as the child reports tokens, and ``completed`` (or ``failed``) with the child's last
  message as output when the child's turn ends;
* every tool call of the child thread carries the spawn call's id as
  ``parentToolCallId`` (an agent spawned by a child nests the same way), and an approval
  the child asks for says so too; the child's own text and reasoning are not the run's
  reply (its last message is the spawn call's output);
* the other collab tools (``wait``, ``sendInput``, ``closeAgent`` …) are ordinary tool
  calls of the thread that makes them, their output the agents' states;
* with multi-agent v2 (``features.multi_agent_v2``) a spawn makes no collab item but a
  ``subAgentActivity`` (``kind: started``, its ``agentThreadId``, ``agentPath``) and one
  with ``kind: completed`` at the end: the same tool call, started and registered from
  the first.

:class:`AgentTree` is the session's knowledge of its child threads (they outlive a run).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import msgspec

from agent_bridge.adapters.codex.mapping import TurnState, thread_id_ok
from agent_bridge.wire.events import (
    ProviderPayload,
    Subagent,
    SubagentUsage,
    TextDelta,
    ThinkingDelta,
    ToolActivity,
)

__all__ = [
    "AgentTree",
    "Child",
    "activity",
    "child_payloads",
    "child_turn_ended",
    "child_usage",
    "collab_completed",
    "collab_started",
    "detached",
    "is_activity",
    "is_collab",
    "spawned",
]

#: How many child threads a session remembers (the oldest are forgotten first).
MAX_CHILDREN: Final = 256
_MAX_TEXT: Final = 500
_MAX_OUTPUT: Final = 64 * 1024


@dataclass(eq=False)
class Child:
    """One agent thread a thread of the session spawned."""

    #: the ``spawnAgent`` call that started it (its events' ``parentToolCallId``)
    spawn_call: str
    #: the state the spawn call is tracked in (the spawning thread's run state)
    owner: TurnState
    #: the spawn call's own parent (a child spawning an agent), else ``None``
    spawn_parent: str | None = None
    #: the child's own tool calls
    state: TurnState = field(default_factory=TurnState)
    last_message: str | None = None
    total_tokens: int | None = None
    tool_uses: int = 0


class AgentTree:
    """The child threads of a session, by thread id."""

    __slots__ = ("_children",)

    def __init__(self) -> None:
        self._children: dict[str, Child] = {}

    def get(self, thread_id: str | None) -> Child | None:
        """The child thread ``thread_id``, or ``None`` (not a child of this session)."""
        return None if thread_id is None else self._children.get(thread_id)

    def add(self, thread_id: str, child: Child) -> None:
        """Remember ``thread_id`` as a child (the oldest forgotten past
        :data:`MAX_CHILDREN`)."""
        self._children[thread_id] = child
        while len(self._children) > MAX_CHILDREN:
            del self._children[next(iter(self._children))]

    def children(self) -> Iterable[Child]:
        """Every child remembered, oldest first."""
        return self._children.values()


def is_collab(item: dict[str, Any]) -> bool:
    """Whether ``item`` (a ``ThreadItem``) is a ``collabAgentToolCall``."""
    return item.get("type") == "collabAgentToolCall"


def _short(text: Any, limit: int = _MAX_TEXT) -> str | None:
    if not isinstance(text, str) or not text.strip():
        return None
    short: str = " ".join(text.split())
    return short if len(short) <= limit else short[: limit - 1] + "…"


def _tool(item: dict[str, Any]) -> str:
    tool = item.get("tool")
    return tool if isinstance(tool, str) and tool else "collabAgent"


def _targets(item: dict[str, Any]) -> list[str]:
    """The item's receiver threads that a session can follow (``thread_id_ok``: an id
    out of bounds is not kept, shown or remembered)."""
    return [t for t in item.get("receiverThreadIds") or [] if thread_id_ok(t)]


def _agent_thread(item: dict[str, Any]) -> str | None:
    """A ``subAgentActivity``'s thread, when it is one a session can follow."""
    thread = item.get("agentThreadId")
    return thread if thread_id_ok(thread) else None


def is_activity(item: dict[str, Any]) -> bool:
    """Whether ``item`` is a ``subAgentActivity`` (multi-agent v2's spawn and end)."""
    return item.get("type") == "subAgentActivity"


def activity(
    state: TurnState, tree: AgentTree, item: dict[str, Any], parent: str | None
) -> list[ProviderPayload]:
    """A ``subAgentActivity`` item (multi-agent v2, where ``spawn_agent`` makes no collab
    item) of the thread whose run state is ``state``: ``started`` is the subagent's tool
    call starting (its id the item's, the agent's path as its description) and its thread
    registered at once; ``completed`` / ``interrupted`` end it when the child's own
    ``turn/completed`` has not (``interacted``: nothing to show)."""
    kind = item.get("kind")
    thread = _agent_thread(item)
    if thread is None:
        return []
    if kind == "started":
        call_id = str(item.get("id", ""))
        out: list[ProviderPayload] = []
        if state.tools.start(call_id, "spawnAgent") is not None:
            path = _short(item.get("agentPath"))
            tool_input = {
                k: item[k] for k in ("agentPath", "model") if isinstance(item.get(k), str)
            }
            out.append(
                ToolActivity(
                    call_id,
                    "spawnAgent",
                    "started",
                    input=tool_input or None,
                    kind="other",
                    title=_short(f"Agent: {path}" if path else "Agent", 200),
                    parent_tool_call_id=parent,
                    subagent=Subagent(description=path, status="running"),
                )
            )
        if tree.get(thread) is None:
            tree.add(thread, Child(call_id, state, parent))
        return out
    child = tree.get(thread)
    if child is None or kind not in ("completed", "interrupted"):
        return []
    return child_turn_ended(child, "completed" if kind == "completed" else "interrupted", None)


def spawned(item: dict[str, Any]) -> list[str]:
    """The threads a completed ``spawnAgent`` call or a ``subAgentActivity`` start
    spawned (none for anything else)."""
    if is_activity(item):
        thread = _agent_thread(item)
        if item.get("kind") == "started" and thread is not None:
            return [thread]
        return []
    if _tool(item) != "spawnAgent" or item.get("status") != "completed":
        return []
    return _targets(item)


def collab_started(
    state: TurnState, item: dict[str, Any], parent: str | None
) -> list[ProviderPayload]:
    """``item/started`` of a ``collabAgentToolCall`` in the thread whose run state is
    ``state`` (``parent``: that thread's own parent call, for a child) → the tool call's
    ``started``; a ``spawnAgent`` is a subagent's start."""
    item_id = str(item.get("id", ""))
    tool = _tool(item)
    if state.tools.start(item_id, tool) is None:
        return []
    prompt = _short(item.get("prompt"))
    tool_input: dict[str, Any] = {}
    if isinstance(item.get("prompt"), str):
        tool_input["prompt"] = item["prompt"]
    if isinstance(item.get("model"), str) and item["model"]:
        tool_input["model"] = item["model"]
    targets = _targets(item)
    if targets:
        tool_input["targets"] = targets
    subagent = None
    title = f"{tool} {', '.join(targets)}" if targets else tool
    if tool == "spawnAgent":
        subagent = Subagent(description=prompt, status="running")
        title = f"Agent: {prompt}" if prompt else "Agent"
    return [
        ToolActivity(
            item_id,
            tool,
            "started",
            input=tool_input or None,
            kind="other",
            title=_short(title, 200),
            parent_tool_call_id=parent,
            subagent=subagent,
        )
    ]


def _states(item: dict[str, Any]) -> str | None:
    """The agents' states of a collab call, one ``<thread>: <status> <message>`` line
    each."""
    states = item.get("agentsStates")
    if not isinstance(states, dict) or not states:
        return None
    lines = []
    for thread, agent in states.items():
        if not isinstance(agent, dict):
            continue
        line = f"{thread}: {agent.get('status')}"
        message = agent.get("message")
        if isinstance(message, str) and message:
            line += f" {message}"
        lines.append(line)
    return "\n".join(lines)[:_MAX_OUTPUT] or None


def collab_completed(
    state: TurnState, tree: AgentTree, item: dict[str, Any], parent: str | None
) -> list[ProviderPayload]:
    """``item/completed`` of a ``collabAgentToolCall``: a ``spawnAgent`` that spawned
    registers its threads in ``tree`` and stays open until the child's turn ends (a
    failed spawn fails the call); any other collab call ends with the agents' states as
    output."""
    out = collab_started(state, item, parent)  # completed without a start: start it
    item_id = str(item.get("id", ""))
    tool = _tool(item)
    status = item.get("status")
    failed = status in ("failed", "interrupted")
    if tool == "spawnAgent":
        targets = _targets(item)
        if not failed and targets:
            for thread in targets:
                tree.add(thread, Child(item_id, state, parent))
            return out
        if not state.tools.end(item_id):
            return out
        end_status: Literal["completed", "failed"] = (
            "failed" if failed or not targets else "completed"
        )
        out.append(
            ToolActivity(
                item_id,
                tool,
                end_status,
                parent_tool_call_id=parent,
                subagent=Subagent(status="failed"),
            )
        )
        return out
    if not state.tools.end(item_id):
        return out
    out.append(
        ToolActivity(
            item_id,
            tool,
            "failed" if failed else "completed",
            output=_states(item),
            parent_tool_call_id=parent,
        )
    )
    return out


def child_payloads(child: Child, payloads: Sequence[ProviderPayload]) -> list[ProviderPayload]:
    """What the child thread's records mapped to (by the ordinary mapping, on its own
    state), placed in the tree: its text and reasoning dropped (not the run's reply),
    its tool calls under the spawn call (``parentToolCallId``, unless already set by a
    deeper level) and counted."""
    out: list[ProviderPayload] = []
    for payload in payloads:
        if isinstance(payload, TextDelta | ThinkingDelta):
            continue
        if isinstance(payload, ToolActivity):
            if payload.status == "started" and payload.subagent is None:
                child.tool_uses += 1
            if payload.parent_tool_call_id is None:
                payload = msgspec.structs.replace(payload, parent_tool_call_id=child.spawn_call)
        out.append(payload)
    return out


def _usage(child: Child, duration_ms: int | None = None) -> SubagentUsage:
    return SubagentUsage(
        total_tokens=child.total_tokens, tool_uses=child.tool_uses, duration_ms=duration_ms
    )


def child_usage(child: Child, total_tokens: int) -> list[ProviderPayload]:
    """The child's ``thread/tokenUsage/updated`` → the spawn call's ``output`` with the
    subagent's usage (nothing once the call ended)."""
    child.total_tokens = total_tokens
    call = child.owner.tools.get(child.spawn_call)
    if call is None or call.ended:
        return []
    return [
        ToolActivity(
            child.spawn_call,
            call.name,
            "output",
            parent_tool_call_id=child.spawn_parent,
            subagent=Subagent(status="running", usage=_usage(child)),
        )
    ]


def detached(child: Child, state: TurnState) -> list[ProviderPayload]:
    """At the end of the run whose state is ``state``: the spawn call (tracked there) of
    a child whose turn still runs ends ``completed`` with its subagent ``running`` (the
    spawn did its work; the agent goes on beyond the run, and what it does later is
    reported in the next run under the same call).  Nothing for a child spawned in
    another run or whose spawn call has ended."""
    if child.owner is not state or not child.owner.tools.end(child.spawn_call):
        return []
    return [
        ToolActivity(
            child.spawn_call,
            child.owner.tools.name(child.spawn_call, "spawnAgent"),
            "completed",
            parent_tool_call_id=child.spawn_parent,
            subagent=Subagent(status="running", usage=_usage(child)),
        )
    ]


def child_turn_ended(child: Child, status: str, duration_ms: int | None) -> list[ProviderPayload]:
    """The child's ``turn/completed`` → its tool calls still open ``failed``, then the
    spawn call ``completed`` (``failed`` unless the turn completed) with the child's last
    message as output and its usage (nothing more once the call ended: a later turn of
    the child, after ``sendInput``, only reports its tool calls)."""
    out = child_payloads(child, child.state.tools.fail_open())
    if not child.owner.tools.end(child.spawn_call):
        return out
    ok = status == "completed"
    out.append(
        ToolActivity(
            child.spawn_call,
            child.owner.tools.name(child.spawn_call, "spawnAgent"),
            "completed" if ok else "failed",
            output=child.last_message[:_MAX_OUTPUT] if child.last_message else None,
            parent_tool_call_id=child.spawn_parent,
            subagent=Subagent(
                status="completed" if ok else "failed", usage=_usage(child, duration_ms)
            ),
        )
    )
    return out
