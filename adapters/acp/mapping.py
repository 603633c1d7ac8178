"""Pure functions from ACP records to the bridge's payloads, interactions and replies.

Nothing here does I/O: the session hands in decoded JSON objects and gets back payloads
to emit, the interaction to raise, the reply to send, or the run's outcome.  Upstream
prose (error messages, stderr) never becomes event text; what a host sees are fixed
codes and messages, and the raw ACP record kept beside each payload.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import msgspec

from agent_bridge.adapters.acp.protocol import obj, objs
from agent_bridge.adapters.kit.approvals import approval_verdict
from agent_bridge.adapters.kit.limits import limit_details
from agent_bridge.adapters.kit.tools import ToolCalls
from agent_bridge.rpc.messages import loggable
from agent_bridge.spi import InteractionOutcome, RunOutcome
from agent_bridge.wire.acp import (
    CANCELLED_OUTCOME,
    PLAN_STATUS_FROM_ACP,
    TOOL_KINDS,
    selected_outcome,
)
from agent_bridge.wire.acp import STOP_REASONS as _STOP_REASONS
from agent_bridge.wire.errors import ErrorCode
from agent_bridge.wire.events import (
    CommandsUpdated,
    ContextUsage,
    CumulativeUsage,
    Diagnostic,
    PlanStep,
    PlanUpdated,
    ProviderPayload,
    TextDelta,
    ThinkingDelta,
    ToolActivity,
    Usage,
)
from agent_bridge.wire.inputs import CommandInfo
from agent_bridge.wire.interactions import (
    ApprovalMode,
    ApprovalRequest,
    Choice,
    InteractionRequest,
    QuestionAnswer,
    QuestionItem,
    QuestionRequest,
    QuestionSetAnswer,
    QuestionSetRequest,
)
from agent_bridge.wire.tools import ToolContent, ToolEdit, ToolKind, ToolLocation, ToolText

__all__ = [
    "Permission",
    "TurnState",
    "classify_rpc_error",
    "elicitation_reply",
    "elicitation_request",
    "permission_reply",
    "permission_request",
    "prompt_outcome",
    "update_payloads",
]

#: ACP stop reasons other than ``cancelled`` end the run ``completed`` with that reason.
STOP_REASONS: Final = _STOP_REASONS
#: How much tool output text one event carries at most.
MAX_OUTPUT_CHARS: Final = 64 * 1024

_TOOL_STATUS: Final[dict[str, Literal["started", "output", "completed", "failed"]]] = {
    "pending": "started",
    "in_progress": "output",
    "completed": "completed",
    "failed": "failed",
}
_PLAN_STATUS: Final = PLAN_STATUS_FROM_ACP


def _diag(level: Literal["info", "warning", "error"], code: str, message: str) -> Diagnostic:
    return Diagnostic(level=level, code=code, message=message)


@dataclass(slots=True)
class TurnState:
    """What one run has seen: its tool calls, and the once-only diagnostics reported."""

    tools: ToolCalls = field(default_factory=ToolCalls)
    reported: set[Any] = field(default_factory=set)
    #: What each tool call said about itself (``title``, ``kind``, ``rawInput``), by id:
    #: a later ``session/request_permission`` may name the call by its id alone
    #: (Mistral Vibe 3.0.2).
    described: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The subagent (its tool call) each tool call made inside one belongs to.
    parents: dict[str, str] = field(default_factory=dict)


def parent_of(update: Mapping[str, Any]) -> str | None:
    """The tool call whose subagent sent ``update``, where the agent says so:
    claude-agent-acp puts it in ``_meta.claudeCode.parentToolUseId``; else ``None``."""
    parent = obj(obj(update.get("_meta")).get("claudeCode")).get("parentToolUseId")
    return parent if isinstance(parent, str) and parent else None


def once(state: TurnState, key: Any, diagnostic: Diagnostic) -> list[ProviderPayload]:
    """``[diagnostic]`` the first time ``key`` is reported in the run, else ``[]``."""
    if key in state.reported:
        return []
    state.reported.add(key)
    return [diagnostic]


def _text_of(content: Any) -> str | None:
    block = obj(content)
    if block.get("type") == "text" and isinstance(block.get("text"), str):
        return str(block["text"])
    return None


def tool_output(content: Any) -> str | None:
    """The text of a tool call's ``content`` items (text blocks only), or ``None``."""
    parts: list[str] = []
    for item in objs(content):
        if item.get("type") == "content":
            text = _text_of(item.get("content"))
            if text:
                parts.append(text)
    if not parts:
        return None
    return "\n".join(parts)[:MAX_OUTPUT_CHARS]


def tool_name(call: Mapping[str, Any]) -> str:
    """The name a tool call is reported under: the agent's tool name (ACP's optional
    ``name``), else its ``kind`` (``execute``, ``edit`` …), else ``other``."""
    for key in ("name", "kind"):
        value = call.get(key)
        if isinstance(value, str) and value:
            return value[:200]
    return "other"


_KINDS: Final = TOOL_KINDS
#: At most this many content items and locations per event.
MAX_ITEMS: Final = 64


def tool_kind(call: Mapping[str, Any]) -> ToolKind:
    """ACP's tool kind (``switch_mode`` and unknown kinds are ``other``)."""
    kind = call.get("kind")
    return kind if isinstance(kind, str) and kind in _KINDS else "other"  # type: ignore[return-value]


def tool_locations(value: Any) -> tuple[ToolLocation, ...]:
    """ACP ``locations`` → the bridge's."""
    out: list[ToolLocation] = []
    for loc in objs(value)[:MAX_ITEMS]:
        if isinstance(loc.get("path"), str):
            line = loc.get("line")
            out.append(ToolLocation(loc["path"], line if isinstance(line, int) else None))
    return tuple(out)


def tool_content(value: Any) -> tuple[ToolContent, ...]:
    """ACP tool-call ``content`` → text items and structured edits (a ``diff``); a
    ``terminal`` item has nothing to show here and is skipped."""
    out: list[ToolContent] = []
    for item in objs(value)[:MAX_ITEMS]:
        if item.get("type") == "content":
            text = _text_of(item.get("content"))
            if text:
                out.append(ToolText(text[:MAX_OUTPUT_CHARS]))
        elif item.get("type") == "diff" and isinstance(item.get("path"), str):
            new, old = item.get("newText"), item.get("oldText")
            out.append(
                ToolEdit(
                    path=item["path"],
                    new_text=new if isinstance(new, str) else "",
                    old_text=old if isinstance(old, str) else None,
                )
            )
    return tuple(out)


def _view(call: Mapping[str, Any], *, first: bool) -> dict[str, Any]:
    """The tool-call model fields of ``call`` that it carries (all of them on the first
    event of a call)."""
    view: dict[str, Any] = {}
    if first or "kind" in call:
        view["kind"] = tool_kind(call)
    title = call.get("title")
    if isinstance(title, str) and title:
        view["title"] = title[:500]
    if "locations" in call:
        view["locations"] = tool_locations(call.get("locations"))
    if "content" in call:
        view["content"] = tool_content(call.get("content"))
    return view


_DESCRIBING: Final = ("title", "kind", "rawInput")


def tool_payloads(state: TurnState, call: Mapping[str, Any]) -> list[ProviderPayload]:
    tool_id = call.get("toolCallId")
    if not isinstance(tool_id, str):
        return []
    out: list[ProviderPayload] = []
    described = {k: call[k] for k in _DESCRIBING if call.get(k) is not None}
    if described:
        state.described.setdefault(tool_id, {}).update(described)
    status = _TOOL_STATUS.get(str(call.get("status") or "pending"), "output")
    started = state.tools.start(tool_id, tool_name(call))
    name = state.tools.name(tool_id, "other")
    parent = parent_of(call)
    if parent is not None and parent != tool_id:
        state.parents.setdefault(tool_id, parent)
    parent = state.parents.get(tool_id)
    if started is not None:
        view = _view(call, first=True)
        out.append(
            ToolActivity(
                tool_id,
                name,
                "started",
                input=call.get("rawInput"),
                parent_tool_call_id=parent,
                **view,
            )
        )
        if status == "started":
            return out
        # Gemini reports a call only when it ends: its content goes with the end.
    if state.tools.is_ended(tool_id):
        return out
    output = tool_output(call.get("content"))
    view = _view(call, first=False)
    if not view.get("content"):
        view.pop("content", None)
    if not view.get("locations"):
        view.pop("locations", None)
    if status in ("completed", "failed"):
        state.tools.end(tool_id)
        out.append(
            ToolActivity(tool_id, name, status, output=output, parent_tool_call_id=parent, **view)
        )
    elif output is not None or "content" in view or "locations" in view:
        out.append(
            ToolActivity(tool_id, name, "output", output=output, parent_tool_call_id=parent, **view)
        )
    return out


def open_tools_failed(state: TurnState) -> list[ProviderPayload]:
    """At a run's end: every tool call started and not finished is reported ``failed``
    (a subagent's still naming its parent call)."""
    return [
        msgspec.structs.replace(a, parent_tool_call_id=state.parents.get(a.tool_call_id))
        if a.tool_call_id in state.parents
        else a
        for a in state.tools.fail_open()
    ]


def _usage(update: Mapping[str, Any]) -> Usage | None:
    used, size = update.get("used"), update.get("size")
    context = None
    if isinstance(used, int) and used >= 0:
        context = ContextUsage(
            used_tokens=used, max_tokens=size if isinstance(size, int) and size > 0 else None
        )
    cost = obj(update.get("cost"))
    cumulative = None
    amount = cost.get("amount")
    if cost.get("currency") == "USD" and isinstance(amount, (int, float)) and amount >= 0:
        cumulative = CumulativeUsage(cost_usd=float(amount))
    if context is None and cumulative is None:
        return None
    return Usage(context=context, cumulative=cumulative)


def _plan(update: Mapping[str, Any]) -> PlanUpdated:
    steps = [
        PlanStep(text=e["content"], status=_PLAN_STATUS.get(str(e.get("status")), "pending"))
        for e in objs(update.get("entries"))
        if isinstance(e.get("content"), str)
    ]
    return PlanUpdated(steps=tuple(steps))


def update_payloads(state: TurnState, update: Mapping[str, Any]) -> list[ProviderPayload]:
    """One ``session/update``'s ``update`` → the payloads to emit (unknown kinds become
    one ``acp_unknown_update`` diagnostic each; the session keeps the raw record)."""
    kind = update.get("sessionUpdate")
    if kind in ("agent_message_chunk", "agent_thought_chunk") and parent_of(update) is not None:
        return []  # a subagent's words: its answer reaches the run as its tool's output
    if kind == "agent_message_chunk":
        text = _text_of(update.get("content"))
        return [TextDelta(text)] if text else []
    if kind == "agent_thought_chunk":
        text = _text_of(update.get("content"))
        return [ThinkingDelta(text)] if text else []
    if kind in ("tool_call", "tool_call_update"):
        return tool_payloads(state, update)
    if kind == "plan":
        return [_plan(update)]
    if kind == "usage_update":
        usage = _usage(update)
        return [usage] if usage is not None else []
    if kind == "available_commands_update":
        return [CommandsUpdated(commands_of(update))]
    if kind == "current_mode_update":
        return [_diag("info", "acp_mode_changed", "The agent switched its session mode")]
    if kind == "config_option_update":
        return [_diag("info", "acp_config_updated", "The agent's session configuration changed")]
    if kind in ("user_message_chunk", "session_info_update"):
        return []
    return [
        _diag(
            "info",
            "acp_unknown_update",
            "The agent sent a session update the adapter does not map",
        )
    ]


# ----------------------------------------------------------------------------- outcomes


def prompt_outcome(result: Any, *, interrupt_requested: bool) -> RunOutcome:
    """A ``session/prompt`` result → how the run ended: ``cancelled`` after an interrupt
    is interrupted; other stop reasons — and ``cancelled`` the agent chose itself (codex-acp
    ends the turn so when a command is rejected) — are completed with that reason; a
    missing or unknown one is a contract violation."""
    stop = obj(result).get("stopReason")
    if stop == "cancelled" and interrupt_requested:
        return RunOutcome.interrupted()
    if isinstance(stop, str) and stop in STOP_REASONS:
        return RunOutcome.completed(stop)
    return RunOutcome.failed(
        "provider_contract", f"session/prompt returned stopReason {loggable(repr(stop))}"
    )


def answers_a_cancelled_turn(result: Any, updates: int) -> bool:
    """Whether a ``session/prompt`` result, the first after a cancelled turn, cannot be
    this prompt's answer: it arrived with no ``session/update`` for the prompt at all and
    reports no tokens used (an ACP agent streams a turn's updates before its answer, and
    a turn the model ran uses tokens).  claude-agent-acp 0.23 answers so -- ``end_turn``,
    every usage figure 0 -- with the cancelled turn's left-over result, and streams this
    prompt's reply during the next one (agentclientprotocol/claude-agent-acp#551)."""
    if updates:
        return False
    body = obj(result)
    if body.get("stopReason") == "cancelled":
        return False
    usage = obj(body.get("usage"))
    return not any(isinstance(v, int | float) and v > 0 for v in usage.values())


#: the diagnostic of a run whose agent sent updates or requests naming another session
OTHER_SESSION: Final = Diagnostic(
    level="warning",
    code="acp_other_session",
    message="The agent sent updates or requests for a session other than this one "
    "during the run; they were ignored",
)

#: the diagnostic of a prompt answered with a cancelled turn's result
UNATTRIBUTED: Final = Diagnostic(
    level="warning",
    code="acp_turn_unattributed",
    message="The agent answered this prompt with the result of the cancelled turn before "
    "it; that result was not taken as this run's",
)


def classify_rpc_error(code: int, method: str) -> ErrorCode:
    """An ACP error response → the bridge's error code (``429``, which Gemini CLI answers
    a prompt with once its model server refused it for a limit: ``provider_rate_limited``)."""
    if code == -32000:
        return "provider_auth_required"
    if code == 429:
        return "provider_rate_limited"
    if code == -32601:
        return "unsupported"
    if method in ("session/load", "session/resume") and code in (-32002, -32603, -32602):
        return "recovery_invalid"
    if code == -32602:
        return "provider_contract"
    return "provider_failed"


#: Words of a limit error's message that say the allowance is spent, not just busy.
_QUOTA_WORDS: Final = re.compile(r"\b(quota|credits?|billing|exhausted)\b", re.IGNORECASE)


def limit_failure_details(code: int, message: str) -> dict[str, str] | None:
    """The ``details`` of an ACP error that reports a limit (code ``429``): ``cause``
    ``quota_exhausted`` when its message speaks of a spent quota or credits, else
    ``rate_limited``; ``None`` for any other error.  Only the cause reaches a host: the
    message is the agent's prose (no ACP agent seen here passes a reset time on)."""
    if code != 429:
        return None
    if _QUOTA_WORDS.search(message[:500]):
        return limit_details("quota_exhausted")
    return limit_details("rate_limited")


# ----------------------------------------------------------------------------- permission


@dataclass(frozen=True, slots=True)
class Permission:
    """A permission request as the bridge raises it, and the options to answer with."""

    request: ApprovalRequest
    allow_once: str | None
    allow_always: str | None
    reject_once: str | None
    reject_always: str | None


_ACTIONS: Final = {
    "execute": "command",
    "edit": "fileChange",
    "delete": "fileChange",
    "move": "fileChange",
}


def permission_request(
    params: Mapping[str, Any],
    cwd: str | None,
    known: Mapping[str, Any] | None = None,
    parent: str | None = None,
) -> Permission:
    """``session/request_permission`` → the approval to raise.  ``modes`` come from the
    offered options: ``once`` with an ``allow_once`` option, ``session`` with an
    ``allow_always`` one.  ``known``: what the run's earlier ``tool_call`` said about the
    same call (ACP's ``toolCall`` here is an update: a field it leaves out keeps that
    value).  ``parent``: the subagent's tool call, when the call was made inside one."""
    by_kind: dict[str, str] = {}
    for option in objs(params.get("options")):
        kind, option_id = option.get("kind"), option.get("optionId")
        if isinstance(kind, str) and isinstance(option_id, str):
            by_kind.setdefault(kind, option_id)
    call = {**(known or {}), **obj(params.get("toolCall"))}
    kind = tool_kind(call)
    title = call.get("title")
    title = title if isinstance(title, str) and title else f"Run a {kind} tool"
    modes: list[ApprovalMode] = []
    if "allow_once" in by_kind:
        modes.append("once")
    if "allow_always" in by_kind:
        modes.append("session")
    action = _ACTIONS.get(kind, "tool")
    request = ApprovalRequest(
        action=action,
        title=title[:500],
        tool_name=tool_name(call),
        input=call.get("rawInput"),
        command=title[:2000] if action == "command" else None,
        cwd=cwd if action == "command" else None,
        modes=tuple(modes) or ("once",),
        parent_tool_call_id=parent or parent_of(call),
    )
    return Permission(
        request,
        by_kind.get("allow_once"),
        by_kind.get("allow_always"),
        by_kind.get("reject_once"),
        by_kind.get("reject_always"),
    )


CANCELLED: Final = CANCELLED_OUTCOME
_selected = selected_outcome


def permission_reply(
    permission: Permission, outcome: InteractionOutcome, *, cancelling: bool
) -> dict[str, Any]:
    """The bridge's settlement → the ``session/request_permission`` result.  While the
    run is being cancelled the answer is ``cancelled`` whatever the settlement (ACP
    requires it); an unanswered (expired, withdrawn) request is rejected once."""
    if cancelling:
        return dict(CANCELLED)
    verdict = approval_verdict(outcome, session_ok=permission.allow_always is not None)
    if verdict == "allow_session" and permission.allow_always is not None:
        return _selected(permission.allow_always)
    if verdict in ("allow_once", "allow_session"):
        chosen = permission.allow_once or permission.allow_always
        if chosen is not None:
            return _selected(chosen)
    if verdict == "cancelled":
        return dict(CANCELLED)
    if verdict == "deny" and outcome.answer is not None:
        mode = getattr(outcome.answer, "mode", "once")
        if mode == "session" and permission.reject_always is not None:
            return _selected(permission.reject_always)
    return refusal(permission)


def refusal(permission: Permission) -> dict[str, Any]:
    """The ``session/request_permission`` result that refuses: its ``reject_once``
    option, else ``reject_always``, else ``cancelled`` (the agent offered none)."""
    reject = permission.reject_once or permission.reject_always
    return _selected(reject) if reject is not None else dict(CANCELLED)


#: the diagnostic of a permission request that offers no option allowing the call
CANNOT_ALLOW: Final = Diagnostic(
    level="warning",
    code="acp_permission_cannot_allow",
    message="The agent asked permission without an option that allows the call; it was "
    "refused without asking",
)


# ----------------------------------------------------------------------------- elicitation


@dataclass(frozen=True, slots=True)
class Field:
    """One field of an elicitation form."""

    key: str
    type: str
    choices: tuple[Choice, ...]


def _fields(schema: Mapping[str, Any]) -> list[Field]:
    out: list[Field] = []
    for key, prop in obj(schema.get("properties")).items():
        p = obj(prop)
        kind = str(p.get("type") or "string")
        choices: list[Choice] = []
        if kind == "string":
            for option in objs(p.get("oneOf")):
                if isinstance(option.get("const"), str):
                    label = option.get("title")
                    choices.append(Choice(option["const"], str(label or option["const"])))
            if not choices and isinstance(p.get("enum"), list):
                choices = [Choice(v, v) for v in p["enum"] if isinstance(v, str)]
        elif kind == "boolean":
            choices = [Choice("true", "Yes"), Choice("false", "No")]
        elif kind not in ("number", "integer"):
            continue  # multi-select and others: not representable as one answer
        out.append(Field(str(key), kind, tuple(choices)))
    return out


def elicitation_request(params: Mapping[str, Any]) -> tuple[InteractionRequest, list[Field]] | None:
    """A form-mode ``elicitation/create`` → a question (one field) or question set;
    ``None`` for another mode or a form the bridge cannot ask."""
    if params.get("mode") != "form":
        return None
    schema = obj(params.get("requestedSchema"))
    fields = _fields(schema)
    if not fields or len(fields) != len(obj(schema.get("properties"))):
        return None
    message = params.get("message")
    prompt = message[:2000] if isinstance(message, str) and message else "The agent asks"
    if len(fields) == 1:
        only = fields[0]
        return (
            QuestionRequest(prompt=prompt, choices=only.choices, allow_free_text=not only.choices),
            fields,
        )
    items = tuple(QuestionItem(key=f.key, prompt=f.key, choices=f.choices) for f in fields)
    return QuestionSetRequest(title=prompt, items=items), fields


def _value(field_: Field, text: str) -> Any:
    if field_.type == "boolean":
        return text == "true"
    if field_.type == "integer":
        return int(text)
    if field_.type == "number":
        return float(text)
    return text


def elicitation_reply(fields: list[Field], outcome: InteractionOutcome) -> dict[str, Any]:
    """The bridge's settlement → the ``elicitation/create`` result."""
    if outcome.status == "cancelled":
        return {"action": "cancel"}
    answer = outcome.answer
    raw: dict[str, str] = {}
    if outcome.status == "responded" and isinstance(answer, QuestionAnswer) and fields:
        value = answer.choice if answer.choice is not None else answer.text
        if value is not None:
            raw[fields[0].key] = value
    elif outcome.status == "responded" and isinstance(answer, QuestionSetAnswer):
        raw = dict(answer.answers)
    if not raw:
        return {"action": "decline"}
    content: dict[str, Any] = {}
    try:
        for f in fields:
            if f.key in raw:
                content[f.key] = _value(f, raw[f.key])
    except ValueError:
        return {"action": "decline"}
    return {"action": "accept", "content": content}


def commands_of(update: Mapping[str, Any]) -> tuple[CommandInfo, ...]:
    """The commands of an ``available_commands_update`` (entries without a name are left
    out; a description or hint that is not a string is left empty)."""
    out: list[CommandInfo] = []
    for entry in objs(update.get("availableCommands")):
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            continue
        description = entry.get("description")
        hint = obj(entry.get("input")).get("hint")
        out.append(
            CommandInfo(
                name.strip()[:200],
                description if isinstance(description, str) else "",
                hint if isinstance(hint, str) else None,
            )
        )
    return tuple(out)
