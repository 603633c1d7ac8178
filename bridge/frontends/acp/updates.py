"""Bridge events -> ACP ``session/update`` notifications (pure, one session's state).

:class:`UpdateMapper` turns each :class:`~agent_bridge.wire.events.EventEnvelope` payload
of one session into the ``update`` objects of ``session/update`` notifications:

==========================  =========================================================
bridge event                ACP update
==========================  =========================================================
``text.delta``              ``agent_message_chunk`` (a text block)
``thinking.delta``          ``agent_thought_chunk``
``tool.activity`` started   ``tool_call`` (title, kind, ``in_progress``, rawInput,
                            locations, content: text and ``diff`` items)
``tool.activity`` output    ``tool_call_update`` with the output so far as content
``tool.activity`` end       ``tool_call_update`` ``completed`` / ``failed`` (rawOutput)
``plan.updated``            ``plan`` (every entry priority ``medium``)
``usage`` (with context)    ``usage_update`` (``used``, ``size``, cost in USD)
``run.started`` (replay)    ``user_message_chunk`` per block of the run's input (a
                            file reference as a ``resource_link``, an embedded
                            resource as a ``resource``; images are not replayed:
                            history keeps their hash, not their bytes)
==========================  =========================================================

Everything else (diagnostics, lifecycle and interaction events) has no ``session/update``:
a run's end is the ``session/prompt`` reply (:func:`stop_reason`), interactions are
requests of their own (:mod:`agent_bridge.frontends.acp.asking`).
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any, Final

import msgspec

from agent_bridge.wire.acp import PLAN_STATUS_TO_ACP, text_block
from agent_bridge.wire.events import (
    CommandsUpdated,
    EventPayload,
    PlanUpdated,
    RunCompleted,
    RunFailed,
    RunInterrupted,
    RunStarted,
    SettingsUpdated,
    TextDelta,
    ThinkingDelta,
    ToolActivity,
    Usage,
)
from agent_bridge.wire.inputs import (
    CommandInfo,
    CommandInput,
    FileInput,
    ResourceInput,
    TextInput,
)
from agent_bridge.wire.tools import ToolContent, ToolEdit

__all__ = [
    "MAX_TOOL_OUTPUT_CHARS",
    "UpdateMapper",
    "available_command",
    "is_terminal",
    "stop_reason",
]

#: How much of a tool call's output the updates carry (the newest part is kept).
MAX_TOOL_OUTPUT_CHARS: Final = 64 * 1024

_STOP_REASONS: Final = {
    "end_turn": "end_turn",
    "max_tokens": "max_tokens",
    "max_output_tokens": "max_tokens",
    "max_turn_requests": "max_turn_requests",
    "max_turns": "max_turn_requests",
    "refusal": "refusal",
    "cancelled": "cancelled",
}

Update = dict[str, Any]


def is_terminal(payload: EventPayload) -> bool:
    """Whether ``payload`` ends its run."""
    return isinstance(payload, RunCompleted | RunFailed | RunInterrupted)


def stop_reason(payload: RunCompleted | RunInterrupted) -> str:
    """The ACP ``stopReason`` of a run that ended without failing: ``cancelled`` for an
    interrupt, else the provider's reason when ACP has it (``end_turn`` otherwise)."""
    if isinstance(payload, RunInterrupted):
        return "cancelled"
    return _STOP_REASONS.get(payload.stop_reason or "end_turn", "end_turn")


def _content(items: tuple[ToolContent, ...]) -> list[Update]:
    out: list[Update] = []
    for item in items:
        if isinstance(item, ToolEdit):
            diff: Update = {"type": "diff", "path": item.path, "newText": item.new_text}
            if item.old_text is not None:
                diff["oldText"] = item.old_text
            out.append(diff)
        else:
            out.append({"type": "content", "content": text_block(item.text)})
    return out


def available_command(command: CommandInfo) -> dict[str, Any]:
    """An ACP ``AvailableCommand`` for one of the provider's commands."""
    out: dict[str, Any] = {"name": command.name, "description": command.description}
    if command.hint is not None:
        out["input"] = {"hint": command.hint}
    return out


class UpdateMapper:
    """The mapping for one session; it keeps each open tool call's output so far (ACP
    replaces a tool call's content with each update)."""

    def __init__(self) -> None:
        self._outputs: dict[str, str] = {}

    def updates(self, payload: EventPayload, *, replay: bool = False) -> list[Update]:
        """The ACP updates for ``payload`` (``replay``: the event is history being
        replayed by ``session/load``, so the user's own prompts are sent too)."""
        kind = type(payload)
        if kind is TextDelta:
            return [{"sessionUpdate": "agent_message_chunk", "content": text_block(payload.text)}]  # type: ignore[union-attr]
        if kind is ThinkingDelta:
            return [{"sessionUpdate": "agent_thought_chunk", "content": text_block(payload.text)}]  # type: ignore[union-attr]
        if isinstance(payload, ToolActivity):
            return [self._tool(payload)]
        if isinstance(payload, PlanUpdated):
            entries = [
                {"content": s.text, "priority": "medium", "status": PLAN_STATUS_TO_ACP[s.status]}
                for s in payload.steps
            ]
            return [{"sessionUpdate": "plan", "entries": entries}]
        if isinstance(payload, Usage):
            return self._usage(payload)
        if isinstance(payload, CommandsUpdated):
            return [
                {
                    "sessionUpdate": "available_commands_update",
                    "availableCommands": [available_command(c) for c in payload.commands],
                }
            ]
        if isinstance(payload, SettingsUpdated) and payload.mode is not None and not replay:
            # a replayed change is history: the reply to session/load has the current mode
            return [{"sessionUpdate": "current_mode_update", "currentModeId": payload.mode}]
        if isinstance(payload, RunStarted) and replay:
            return _user_chunks(payload)
        return []

    def _tool(self, event: ToolActivity) -> Update:
        call_id = event.tool_call_id
        update: Update
        if event.status == "started":
            self._outputs[call_id] = ""
            update = {
                "sessionUpdate": "tool_call",
                "toolCallId": call_id,
                "title": event.title or event.name,
                "kind": event.kind or "other",
                "status": "in_progress",
            }
            if event.input is not None:
                update["rawInput"] = event.input
        else:
            update = {"sessionUpdate": "tool_call_update", "toolCallId": call_id}
            if event.title:
                update["title"] = event.title
            if event.kind:
                update["kind"] = event.kind
        if event.locations:
            update["locations"] = [
                {"path": loc.path} if loc.line is None else {"path": loc.path, "line": loc.line}
                for loc in event.locations
            ]
        content = _content(event.content)
        if event.status == "output" and event.output:
            so_far = (self._outputs.get(call_id, "") + event.output)[-MAX_TOOL_OUTPUT_CHARS:]
            self._outputs[call_id] = so_far
            content.append({"type": "content", "content": text_block(so_far)})
        if event.status in ("completed", "failed"):
            update["status"] = event.status
            so_far = self._outputs.pop(call_id, "")
            if event.output and not so_far:
                content.append({"type": "content", "content": text_block(event.output)})
            raw: Update = {}
            if event.output is not None or so_far:
                raw["output"] = event.output if event.output is not None else so_far
            if event.exit_code is not None:
                raw["exitCode"] = event.exit_code
            if raw:
                update["rawOutput"] = raw
        if content:
            update["content"] = content
        tree = _tree_meta(event)
        if tree:
            update["_meta"] = {"agentBridge": tree}
        return update

    @staticmethod
    def _usage(usage: Usage) -> list[Update]:
        context = usage.context
        if context is None:
            return []
        update: Update = {
            "sessionUpdate": "usage_update",
            "used": max(0, context.used_tokens),
            "size": max(0, context.max_tokens or context.used_tokens),
        }
        cumulative = usage.cumulative
        if cumulative is not None and cumulative.cost_usd is not None:
            update["cost"] = {"amount": cumulative.cost_usd, "currency": "USD"}
        return [update]


def _user_chunks(started: RunStarted) -> list[Update]:
    """The user's prompt of a replayed run, one ``user_message_chunk`` per block."""
    if not started.content:
        if not started.input:
            return []
        return [{"sessionUpdate": "user_message_chunk", "content": text_block(started.input)}]
    out: list[Update] = []
    for block in started.content:
        content: dict[str, Any]
        if isinstance(block, TextInput):
            content = text_block(block.text)
        elif isinstance(block, FileInput):
            path = PurePosixPath(block.path)
            content = {"type": "resource_link", "uri": path.as_uri(), "name": path.name or "/"}
        elif isinstance(block, ResourceInput):
            resource = {"uri": block.uri or "untitled:", "text": block.text}
            if block.mime_type is not None:
                resource["mimeType"] = block.mime_type
            content = {"type": "resource", "resource": resource}
        elif isinstance(block, CommandInput):
            content = text_block(f"/{block.name} {block.arguments or ''}".rstrip())
        else:  # an image: its bytes are not kept in the history
            continue
        out.append({"sessionUpdate": "user_message_chunk", "content": content})
    return out


def _tree_meta(event: ToolActivity) -> Update:
    """Where a tool call sits in the subagent tree, for ``_meta.agentBridge`` (ACP has no
    field of its own): ``parentToolCallId`` for a call made inside a subagent, and
    ``subagent`` (its type, status, usage) for a call that runs one."""
    tree: Update = {}
    if event.parent_tool_call_id is not None:
        tree["parentToolCallId"] = event.parent_tool_call_id
    if event.subagent is not None:
        tree["subagent"] = msgspec.to_builtins(event.subagent)
    return tree
