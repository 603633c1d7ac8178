"""How Codex's records become the bridge's payloads, interactions and outcomes: pure
functions (no I/O, no clock), tested directly.

What the mapping must remember within a turn (its items, whether text was seen, which
once-only diagnostics were reported) is a :class:`TurnState` the session keeps per run and
passes in.  Upstream text (warnings, error messages) is never copied into a payload: the
diagnostics here carry fixed codes and messages.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast

from agent_bridge.adapters.codex import protocol as p
from agent_bridge.adapters.kit import history_files
from agent_bridge.adapters.kit.approvals import (
    ONCE_OR_SESSION,
    Verdict,
    approval_modes,
    approval_verdict,
    is_allow,
)
from agent_bridge.adapters.kit.bounds import json_within as _json_within
from agent_bridge.adapters.kit.bounds import text_ok
from agent_bridge.adapters.kit.limits import (
    http_status_code,
    instant,
    limit_details,
    reset_of,
    status_of,
)
from agent_bridge.adapters.kit.tools import ToolCalls
from agent_bridge.spi import InteractionOutcome, RunOutcome
from agent_bridge.wire.errors import ErrorCode, FailureCause
from agent_bridge.wire.events import (
    ContextUsage,
    CumulativeUsage,
    Diagnostic,
    LimitMeter,
    LimitsUpdated,
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
    ApprovalRequest,
    Choice,
    InteractionRequest,
    QuestionAnswer,
    QuestionItem,
    QuestionRequest,
    QuestionSetAnswer,
    QuestionSetRequest,
)
from agent_bridge.wire.settings import SettingValue
from agent_bridge.wire.tools import ToolContent, ToolEdit, ToolKind, ToolLocation, ToolText

__all__ = [
    "DECLINE",
    "DIAGNOSTICS",
    "IGNORED",
    "MAX_CWD",
    "MAX_MODEL_ID",
    "MAX_PERMISSIONS_BYTES",
    "MAX_POLICY_BYTES",
    "MAX_POLICY_DEPTH",
    "MAX_THREAD_ID",
    "MODES",
    "Item",
    "Mode",
    "TurnState",
    "agent_delta",
    "approval_policy_of",
    "classify_error",
    "command_approval",
    "command_reply",
    "cwd_ok",
    "file_change_approval",
    "file_change_reply",
    "item_completed",
    "item_started",
    "limits_payload",
    "mode_of",
    "model_id_ok",
    "models_of",
    "once",
    "open_tools_failed",
    "output_delta",
    "permissions_approval",
    "permissions_ok",
    "permissions_reply",
    "plan_payload",
    "read_limits_payload",
    "reasoning_delta",
    "sandbox_mode",
    "sandbox_policy",
    "skills_of",
    "summary_part",
    "thread_id_ok",
    "tool_of",
    "turn_outcome",
    "usage_payload",
    "user_input_reply",
    "user_input_request",
]

Level = Literal["info", "warning", "error"]
PlanStatus = Literal["pending", "inProgress", "completed"]

_MAX_TITLE: Final = 200
#: A name a ``command`` block can carry (the wire's pattern, without spaces).
_COMMAND_NAME: Final = re.compile(r"[^/\s$][^\s]{0,199}")
_IDENTIFIER: Final = re.compile(r"[A-Za-z][A-Za-z0-9]{0,39}")
#: Item types that are reported some other way, or carry nothing to report.
_QUIET_ITEMS: Final = frozenset(
    {"userMessage", "hookPrompt", "agentMessage", "reasoning", "plan", "contextCompaction"}
)

#: Notifications that carry nothing a host needs (status, bookkeeping, UI state).
IGNORED: Final = frozenset(
    {
        "thread/started",
        "thread/status/changed",
        "thread/readState/changed",
        "thread/name/updated",
        "thread/goal/updated",
        "thread/goal/cleared",
        "thread/queue/changed",
        "thread/compacted",  # deprecated; the contextCompaction item is reported
        "turn/started",
        "turn/diff/updated",
        "turn/moderationMetadata",
        "item/plan/delta",
        "item/fileChange/patchUpdated",
        "item/commandExecution/terminalInteraction",
        "item/mcpToolCall/progress",
        "item/autoApprovalReview/started",
        "item/autoApprovalReview/completed",
        "account/updated",
        "remoteControl/status/changed",
        "app/list/updated",
        "mcpServer/startupStatus/updated",
        "fs/changed",
        "model/verification",
        "model/safetyBuffering/updated",
        "hook/started",
        "hook/completed",
    }
)

#: Notification -> the diagnostic it becomes (its upstream text goes to the log only).
DIAGNOSTICS: Final[dict[str, Diagnostic]] = {
    "warning": Diagnostic(
        level="warning",
        code="codex_warning",
        message="Codex reported a warning (see the bridge log)",
    ),
    "guardianWarning": Diagnostic(
        level="warning",
        code="codex_guardian_warning",
        message="Codex's approval reviewer reported a warning (see the bridge log)",
    ),
    "configWarning": Diagnostic(
        level="warning",
        code="codex_config_warning",
        message="Codex reported a configuration warning (see the bridge log)",
    ),
    "deprecationNotice": Diagnostic(
        level="info",
        code="codex_deprecation",
        message="Codex reported a deprecation notice (see the bridge log)",
    ),
    "model/rerouted": Diagnostic(
        level="info", code="codex_model_rerouted", message="Codex switched to another model"
    ),
    "windows/worldWritableWarning": Diagnostic(
        level="warning",
        code="codex_sandbox_warning",
        message="Codex reported a sandbox warning (see the bridge log)",
    ),
}

#: The reply that runs nothing and stops nothing (no run for the request, or unanswered).
DECLINE: Final[dict[str, Any]] = {"decision": "decline"}


# ----------------------------------------------------------------------------- errors


_RATE_LIMITED: Final = frozenset(
    {"usageLimitExceeded", "rateLimitExceeded", "sessionBudgetExceeded"}
)


def classify_error(error: p.TurnError | None) -> ErrorCode:
    """Map a failed turn's ``codexErrorInfo`` onto the bridge's closed error codes."""
    info = None if error is None else error.codex_error_info
    if isinstance(info, str):
        if info == "unauthorized":
            return "provider_auth_required"
        if info in _RATE_LIMITED:
            return "provider_rate_limited"
        return "provider_failed"
    if isinstance(info, dict):
        for detail in info.values():
            status = detail.get("httpStatusCode") if isinstance(detail, dict) else None
            code = http_status_code(status)
            if code is not None:
                return code
    return "provider_failed"


#: ``codexErrorInfo`` strings and the cause each names (only the cause reaches a host).
_INFO_CAUSES: Final[dict[str, FailureCause]] = {
    "unauthorized": "auth_missing",
    "usageLimitExceeded": "quota_exhausted",
    "rateLimitExceeded": "rate_limited",
    "sessionBudgetExceeded": "quota_exhausted",
    "serverOverloaded": "overloaded",
    "contextWindowExceeded": "http_status",
}
#: ``codexErrorInfo`` object keys (``{"httpConnectionFailed": {"httpStatusCode": …}}``).
_INFO_KEY_CAUSES: Final[dict[str, FailureCause]] = {
    "httpConnectionFailed": "connection_refused",
    "responseStreamConnectionFailed": "connection_refused",
    "responseStreamDisconnected": "connection_reset",
    "responseTooManyFailedAttempts": "http_status",
}


def failure_details(error: p.TurnError | None) -> dict[str, str]:
    """The allowlisted ``details`` of a failed turn (``cause``, ``httpStatus``,
    ``httpStatusClass``) from its ``codexErrorInfo``; the message text is never used."""
    info = None if error is None else error.codex_error_info
    if isinstance(info, str):
        return {"cause": _INFO_CAUSES.get(info, "unknown")}
    if isinstance(info, dict):
        for key, detail in info.items():
            status = detail.get("httpStatusCode") if isinstance(detail, dict) else None
            out: dict[str, str] = {"cause": _INFO_KEY_CAUSES.get(key, "unknown")}
            if isinstance(status, int) and not isinstance(status, bool) and 100 <= status <= 599:
                out["cause"] = (
                    "auth_missing"
                    if status in (401, 403)
                    else "rate_limited"
                    if status == 429
                    else "http_status"
                )
                out["httpStatus"] = str(status)
                out["httpStatusClass"] = f"{status // 100}xx"
            return out
    return {"cause": "unknown"}


def limits_payload(snapshot: p.RateLimitSnapshot) -> LimitsUpdated | None:
    """The ``limits.updated`` of a rate-limit snapshot (``account/rateLimits/updated`` or
    ``account/rateLimits/read``): one meter per window it names (``primary``,
    ``secondary``: percent used, window length, reset) in the pool of its ``limitId``
    (``codex`` when absent), and ``credits`` when it says whether credits are left;
    ``None`` when it names none (a sparse update may carry only account metadata)."""
    pool = snapshot.limit_id or "codex"
    reached = snapshot.rate_limit_reached_type is not None
    meters: list[LimitMeter] = []
    for name, window in (("primary", snapshot.primary), ("secondary", snapshot.secondary)):
        if window is None:
            continue
        percent = window.used_percent
        minutes = window.window_duration_mins
        meters.append(
            LimitMeter(
                pool,
                name,
                percent=percent,
                window_seconds=minutes * 60 if minutes is not None and minutes >= 0 else None,
                resets_at=instant(window.resets_at),
                status=status_of(percent),
            )
        )
    credits = snapshot.credits
    if credits is not None and credits.has_credits is not None and credits.unlimited is not True:
        meters.append(
            LimitMeter(pool, "credits", status="ok" if credits.has_credits else "exhausted")
        )
    if reached and not any(m.status == "exhausted" for m in meters):
        meters.append(LimitMeter(pool, "account", status="exhausted"))
    return LimitsUpdated(tuple(meters)) if meters else None


def read_limits_payload(read: p.RateLimitsRead) -> LimitsUpdated | None:
    """The ``limits.updated`` of an ``account/rateLimits/read`` answer: every bucket of
    ``rateLimitsByLimitId`` when it has them, else its single snapshot; ``None`` when
    they name no meter."""
    snapshots = list((read.rate_limits_by_limit_id or {}).values()) or [read.rate_limits]
    meters: list[LimitMeter] = []
    for snapshot in snapshots:
        update = limits_payload(snapshot)
        if update is not None:
            meters += update.meters
    return LimitsUpdated(tuple(meters)) if meters else None


def turn_outcome(
    completed: p.TurnCompleted,
    last_error: p.TurnError | None,
    limits: Iterable[LimitMeter] = (),
    now: float | None = None,
) -> RunOutcome | None:
    """The outcome of ``turn/completed``, or ``None`` for a status that does not end the
    run (``inProgress``, or one the adapter does not know).  A turn that failed on a
    limit carries ``resetsAt`` when the latest ``limits`` (the meters Codex reported)
    say when the exhausted one resets (one whose reset is before ``now`` no longer counts):
    Codex puts the time in its message's prose only."""
    status = completed.turn.status
    if status == "completed":
        return RunOutcome.completed("completed")
    if status == "interrupted":
        return RunOutcome.interrupted()
    if status == "failed":
        error = completed.turn.error or last_error
        info = None if error is None else error.codex_error_info
        details = failure_details(error)
        cause = details["cause"]
        if cause == "rate_limited" or cause == "quota_exhausted":
            limited = cast("FailureCause", cause)
            details.update(limit_details(limited, resets_at=reset_of(limits, now)))
        return RunOutcome.failed(classify_error(error), f"codex turn failed ({info})", details)
    return None


_SANDBOX_MODES: Final = {
    "readOnly": "read-only",
    "workspaceWrite": "workspace-write",
    "dangerFullAccess": "danger-full-access",
}


def sandbox_mode(policy: Any) -> str | None:
    """The ``sandbox`` mode string (one of the ``sandbox`` option's values) for a
    ``SandboxPolicy`` object Codex reported, or such a mode string itself; ``None`` for
    anything else (an object of a type not known here, any other string or value), of
    which nothing is kept."""
    if isinstance(policy, str):
        return policy if policy in _SANDBOX_MODES.values() else None
    if isinstance(policy, dict):
        kind = policy.get("type")
        return _SANDBOX_MODES.get(kind) if isinstance(kind, str) else None
    return None


def sandbox_policy(mode: str) -> dict[str, Any]:
    """The ``SandboxPolicy`` object ``turn/start`` takes for a ``sandbox`` mode string
    (``read-only``, ``workspace-write``, ``danger-full-access``)."""
    kind = next((k for k, v in _SANDBOX_MODES.items() if v == mode), "readOnly")
    return {"type": kind}


class Mode:
    """One of Codex's approval presets (its TUI's ``/approvals`` choices): an approval
    policy and a sandbox mode switched together."""

    __slots__ = ("approval_policy", "id", "name", "sandbox")

    def __init__(self, id: str, name: str, approval_policy: str, sandbox: str) -> None:
        self.id = id
        self.name = name
        self.approval_policy = approval_policy
        self.sandbox = sandbox


#: The modes a Codex session offers, as its TUI presets them.
MODES: Final = (
    Mode("read-only", "Read Only", "on-request", "read-only"),
    Mode("auto", "Auto", "on-request", "workspace-write"),
    Mode("full-access", "Full Access", "never", "danger-full-access"),
)


def mode_of(approval_policy: Any, sandbox: str | None) -> str | None:
    """The id of the preset ``approval_policy`` and ``sandbox`` make, ``None`` when they
    make none (``untrusted`` approvals, say, or a granular policy)."""
    return next(
        (m.id for m in MODES if m.approval_policy == approval_policy and m.sandbox == sandbox),
        None,
    )


#: The largest approval-policy object kept, as encoded JSON: Codex's only object policy,
#: ``{"granular": {...}}`` (five booleans), takes about 150 bytes.
MAX_POLICY_BYTES: Final = 4096
#: The deepest nesting of objects and arrays in an approval-policy object kept
#: (``{"granular": {...}}`` is 2).
MAX_POLICY_DEPTH: Final = 8
#: An approval-policy name kept (``untrusted``, ``on-request``, ``never``; a newer one).
_POLICY_NAME: Final = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")


def approval_policy_of(policy: Any) -> str | dict[str, Any] | None:
    """``policy`` (an ``approvalPolicy`` Codex reported) if it may be kept as the session's
    (it goes into the recovery record, and back to Codex in ``thread/resume`` and
    ``turn/start``): a name of 1 to 64 letters, digits, ``-`` and ``_``, or an object of
    at most :data:`MAX_POLICY_BYTES` encoded and :data:`MAX_POLICY_DEPTH` levels deep;
    ``None`` for anything else (another type, a longer or stranger string, a larger or
    deeper object)."""
    if isinstance(policy, str):
        return policy if _POLICY_NAME.fullmatch(policy) else None
    if not isinstance(policy, dict) or not _json_within(policy, MAX_POLICY_BYTES, MAX_POLICY_DEPTH):
        return None
    return cast("dict[str, Any]", policy)


#: The longest thread id kept: 0.171.0's are UUIDv7 strings (36 characters).
MAX_THREAD_ID: Final = 256
#: A thread id kept: printable ASCII without spaces (a UUID, or a newer Codex's own shape).
_THREAD_ID: Final = re.compile(rf"[!-~]{{1,{MAX_THREAD_ID}}}")


def thread_id_ok(thread_id: Any) -> bool:
    """Whether ``thread_id`` (the id of a thread Codex started, resumed or forked, or the
    one a recovery record names) may be the session's: it is the session's identity in
    the recovery record (journaled) and is sent back to Codex in every request.  1 to
    :data:`MAX_THREAD_ID` printable ASCII characters, no space."""
    return isinstance(thread_id, str) and _THREAD_ID.fullmatch(thread_id) is not None


#: The longest working directory kept from a thread response (Linux's ``PATH_MAX``).
MAX_CWD: Final = history_files.MAX_CWD


def cwd_ok(cwd: str) -> bool:
    """Whether ``cwd`` (the working directory a thread response reports; taken only by a
    session without a workspace) may be kept: ``history_files.recorded_cwd``'s rule, an
    absolute path of 1 to :data:`MAX_CWD` characters, no control character, no lone
    surrogate (it goes into the recovery record and ``skills/list``)."""
    return history_files.recorded_cwd(cwd) is not None


#: The largest ``permissions`` object of a permissions request that is asked, as encoded
#: JSON: what is asked is granted back as is, and it is journaled with the approval
#: (0.171.0's ``RequestPermissionProfile``, a few paths and a network flag, takes a few
#: hundred bytes).  Objects and arrays in it nest at most :data:`MAX_POLICY_DEPTH` deep
#: (``fileSystem.entries[].path`` is 5).
MAX_PERMISSIONS_BYTES: Final = 16 * 1024


def permissions_ok(permissions: Any) -> bool:
    """Whether the ``permissions`` of ``item/permissions/requestApproval`` may be shown
    to the host (and so granted): an object of at most :data:`MAX_PERMISSIONS_BYTES`
    encoded and :data:`MAX_POLICY_DEPTH` levels deep.  A request whose permissions are
    not is declined without asking: nothing is granted that was not shown."""
    return isinstance(permissions, dict) and _json_within(
        permissions, MAX_PERMISSIONS_BYTES, MAX_POLICY_DEPTH
    )


#: The longest ``command`` of a command approval that is asked (characters).  What is
#: approved is what was shown, and it is journaled with the approval: a longer one is
#: declined without asking.
MAX_COMMAND: Final = 64 * 1024
#: The longest ``reason`` shown with an approval (characters); a longer one is cut: it
#: explains the request, it is not what is approved.
MAX_REASON: Final = 4096


def command_request_ok(params: p.CommandApprovalParams) -> bool:
    """Whether a command approval may be shown to the host (and so approved): its
    ``command`` at most :data:`MAX_COMMAND` characters, its ``cwd`` one :func:`cwd_ok`
    keeps, its ``commandActions`` at most twice :data:`MAX_COMMAND` encoded and
    :data:`MAX_POLICY_DEPTH` deep.  One that is not is declined without asking."""
    return (
        (params.command is None or len(params.command) <= MAX_COMMAND)
        and (params.cwd is None or cwd_ok(params.cwd))
        and (
            params.command_actions is None
            or _json_within(params.command_actions, 2 * MAX_COMMAND, MAX_POLICY_DEPTH)
        )
    )


def permissions_request_ok(params: p.PermissionsApprovalParams) -> bool:
    """Whether a permissions request may be shown (and so granted): :func:`permissions_ok`
    permissions and a ``cwd`` one :func:`cwd_ok` keeps."""
    return permissions_ok(params.permissions) and (params.cwd is None or cwd_ok(params.cwd))


def file_change_request_ok(params: p.FileChangeApprovalParams) -> bool:
    """Whether a file-change approval may be shown (and so approved): its ``grantRoot``
    (a directory the approval would open for writing) one :func:`cwd_ok` keeps."""
    return params.grant_root is None or cwd_ok(params.grant_root)


def _reason(text: str) -> str:
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 1] + "…"


#: The longest model id kept (``session/configure`` takes no longer one).
MAX_MODEL_ID: Final = 200


def model_id_ok(model: str) -> bool:
    """Whether ``model`` (a model id Codex reported) may be kept as the session's model:
    1 to :data:`MAX_MODEL_ID` characters, no control character, no lone surrogate
    (it goes into ``session/settings``, the journal and the next ``turn/start``)."""
    return 0 < len(model) <= MAX_MODEL_ID and text_ok(model)


def skills_of(response: p.SkillsListResponse) -> dict[str, tuple[CommandInfo, str]]:
    """The enabled skills of ``skills/list`` by name: each as a command (its short
    description when it has one) and the path of its ``SKILL.md``; the first of a name
    wins (Codex lists the nearest scope first)."""
    out: dict[str, tuple[CommandInfo, str]] = {}
    for entry in response.data:
        for skill in entry.skills:
            name = skill.name
            if not skill.enabled or not skill.path or not _COMMAND_NAME.fullmatch(name):
                continue
            if name in out:
                continue
            short = skill.interface.short_description if skill.interface else None
            description = short or skill.short_description or skill.description
            out[name] = (CommandInfo(name, description[:1000]), skill.path)
    return out


def models_of(models: Iterable[p.ModelInfo]) -> tuple[SettingValue, ...]:
    """The models ``model/list`` offered, as settings values (``model``: what
    ``turn/start`` takes; hidden ones left out; each once)."""
    out: dict[str, SettingValue] = {}
    for info in models:
        name = (info.model or info.id)[:200]
        if name and not info.hidden and name not in out:
            out[name] = SettingValue(name, info.display_name[:200])
    return tuple(out.values())


# ----------------------------------------------------------------------------- turn state


@dataclass(slots=True)
class Item:
    """One text or reasoning ``ThreadItem`` of the turn as the mapping tracks it."""

    kind: str  # "text" | "thinking"
    deltas: int = 0


@dataclass(eq=False)
class TurnState:
    """What the mapping remembers within one turn."""

    items: dict[str, Item] = field(default_factory=dict)
    #: The turn's tool-like items (a tool call's ``detail``: its file changes, if any).
    tools: ToolCalls = field(default_factory=ToolCalls)
    #: Whether text was emitted (a second agent message is separated by a blank line).
    text_seen: bool = False
    #: Keys of the once-only diagnostics already reported.
    reported: set[Any] = field(default_factory=set)


def once(
    state: TurnState, key: Any, level: Level, code: str, message: str
) -> list[ProviderPayload]:
    """A diagnostic the first time ``key`` is reported in this turn, else nothing."""
    if key in state.reported:
        return []
    state.reported.add(key)
    return [Diagnostic(level=level, code=code, message=message)]


def _text(state: TurnState, text: str, *, first: bool, item_id: str) -> list[ProviderPayload]:
    """Text of the agent message ``item_id`` (its ``messageId``, as in the rollout)."""
    if not text:
        return []
    message_id = item_id or None
    out: list[ProviderPayload] = []
    if first and state.text_seen:
        # a new agent message in the same turn
        out.append(TextDelta(text="\n\n", message_id=message_id))
    state.text_seen = True
    out.append(TextDelta(text=text, message_id=message_id))
    return out


def agent_delta(state: TurnState, delta: p.DeltaNotification) -> list[ProviderPayload]:
    """``item/agentMessage/delta`` → text."""
    item = state.items.setdefault(delta.item_id, Item("text"))
    item.deltas += 1
    return _text(state, delta.delta, first=item.deltas == 1, item_id=delta.item_id)


def reasoning_delta(state: TurnState, delta: p.DeltaNotification) -> list[ProviderPayload]:
    """``item/reasoning/summaryTextDelta`` / ``textDelta`` → thinking."""
    state.items.setdefault(delta.item_id, Item("thinking")).deltas += 1
    return (
        [ThinkingDelta(text=delta.delta, message_id=delta.item_id or None)] if delta.delta else []
    )


def summary_part(delta: p.DeltaNotification) -> list[ProviderPayload]:
    """``item/reasoning/summaryPartAdded`` → a paragraph break after the first part."""
    if not delta.summary_index:
        return []
    return [ThinkingDelta(text="\n\n", message_id=delta.item_id or None)]


def output_delta(state: TurnState, delta: p.DeltaNotification) -> list[ProviderPayload]:
    """``item/commandExecution/outputDelta`` / ``item/fileChange/outputDelta`` → tool
    output of a started tool."""
    tool = state.tools.get(delta.item_id)
    if tool is None or not delta.delta:
        return []
    tool.output = True
    return [ToolActivity(delta.item_id, tool.name, "output", output=delta.delta)]


def usage_payload(updated: p.TokenUsageUpdated) -> Usage:
    """``thread/tokenUsage/updated`` → usage (context occupancy of the last model call,
    cumulative totals of the thread)."""
    usage = updated.token_usage
    return Usage(
        context=ContextUsage(usage.last.total_tokens, usage.model_context_window),
        cumulative=CumulativeUsage(
            input_tokens=usage.total.input_tokens,
            output_tokens=usage.total.output_tokens,
            cached_input_tokens=usage.total.cached_input_tokens,
        ),
    )


def plan_payload(updated: p.PlanUpdated) -> PlanUpdated:
    """``turn/plan/updated`` → plan (an unknown step status is ``pending``)."""
    return PlanUpdated(steps=tuple(PlanStep(s.step, _plan_status(s.status)) for s in updated.plan))


def _plan_status(status: str) -> PlanStatus:
    if status == "inProgress":
        return "inProgress"
    if status == "completed":
        return "completed"
    return "pending"


def item_started(state: TurnState, item: dict[str, Any]) -> list[ProviderPayload]:
    """``item/started``: a tool-like item starts a tool activity; an item type the
    adapter does not map is reported once."""
    kind = item.get("type")
    item_id = str(item.get("id", ""))
    if kind == "agentMessage":
        state.items.setdefault(item_id, Item("text"))
        return []
    if kind == "reasoning":
        state.items.setdefault(item_id, Item("thinking"))
        return []
    if kind == "contextCompaction":
        return [
            Diagnostic(
                level="info",
                code="codex_context_compacted",
                message="Codex compacted the conversation to fit the context window",
            )
        ]
    tool = tool_of(item)
    if tool is not None:
        name, tool_input, changes = tool
        if state.tools.start(item_id, name, changes) is not None:
            return [ToolActivity(item_id, name, "started", input=tool_input, **tool_view(item))]
    if tool is None and kind not in _QUIET_ITEMS:
        shown = kind if isinstance(kind, str) and _IDENTIFIER.fullmatch(kind) else "?"
        return once(
            state,
            ("item", shown),
            "info",
            "codex_unmapped_item",
            f"Codex reported a {shown} item, which the adapter does not map",
        )
    return []


def item_completed(state: TurnState, item: dict[str, Any]) -> list[ProviderPayload]:
    """``item/completed``: the text or reasoning of an item that was not streamed, or
    the end (with the output, if none streamed) of a tool."""
    kind = item.get("type")
    item_id = str(item.get("id", ""))
    known = state.items.get(item_id)
    if kind == "agentMessage":
        if known is None or known.deltas == 0:
            return _text(state, str(item.get("text") or ""), first=True, item_id=item_id)
        return []
    if kind == "reasoning":
        if known is None or known.deltas == 0:
            summary = item.get("summary") or []
            text = "\n\n".join(str(s) for s in summary if s)
            if text:
                return [ThinkingDelta(text=text, message_id=item_id or None)]
        return []
    if tool_of(item) is None:
        return []
    out: list[ProviderPayload] = []
    call = state.tools.get(item_id)
    if call is None:
        out += item_started(state, item)
        call = state.tools.get(item_id)
        if call is None:
            return out
    if not state.tools.end(item_id):
        return out
    output = item.get("aggregatedOutput")
    if not call.output and isinstance(output, str) and output:
        out.append(ToolActivity(item_id, call.name, "output", output=output))
    status = item.get("status")
    ok = status == "completed" or (kind == "dynamicToolCall" and item.get("success") is True)
    if kind == "webSearch":
        ok = True
    exit_code = item.get("exitCode")
    out.append(
        ToolActivity(
            item_id,
            call.name,
            "completed" if ok else "failed",
            exit_code=exit_code if isinstance(exit_code, int) else None,
        )
    )
    return out


def open_tools_failed(state: TurnState) -> list[ProviderPayload]:
    """A ``failed`` tool activity for every tool of the turn that never completed (the
    run is ending); marks them done."""
    return list(state.tools.fail_open())


def tool_of(item: dict[str, Any]) -> tuple[str, Any, Any] | None:
    """(name, input, file changes) of a tool-like ``ThreadItem``, else ``None``."""
    kind = item.get("type")
    if kind == "commandExecution":
        return "command", {"command": item.get("command"), "cwd": item.get("cwd")}, None
    if kind == "fileChange":
        changes = []
        for change in item.get("changes") or []:
            if isinstance(change, dict):
                change_kind = change.get("kind")
                changes.append(
                    {
                        "path": change.get("path"),
                        "kind": change_kind.get("type")
                        if isinstance(change_kind, dict)
                        else change_kind,
                        "diff": change.get("diff"),
                    }
                )
        return "fileChange", {"changes": changes}, changes
    if kind == "mcpToolCall":
        name = f"mcp:{item.get('server')}/{item.get('tool')}"
        return name, item.get("arguments"), None
    if kind == "dynamicToolCall":
        return str(item.get("tool") or "tool"), item.get("arguments"), None
    if kind == "webSearch":
        return "webSearch", {"query": item.get("query")}, None
    return None


def hunk_edits(path: str, diff: str) -> list[ToolEdit]:
    """A unified diff → one structured edit per hunk (old text: context and removed
    lines; new text: context and added lines)."""
    edits: list[ToolEdit] = []
    old: list[str] | None = None
    new: list[str] = []

    def close() -> None:
        if old is not None:
            edits.append(ToolEdit(path=path, old_text="".join(old), new_text="".join(new)))

    for line in diff.splitlines(keepends=True):
        if line.startswith("@@"):
            close()
            old, new = [], []
        elif old is None or line.startswith(("---", "+++", "\\")):
            continue
        elif line.startswith("-"):
            old.append(line[1:])
        elif line.startswith("+"):
            new.append(line[1:])
        else:
            text = line[1:] if line.startswith(" ") else line
            old.append(text)
            new.append(text)
    close()
    return edits


def _change_edits(change: dict[str, Any]) -> list[ToolEdit]:
    path, kind, diff = change.get("path"), change.get("kind"), change.get("diff")
    if not isinstance(path, str) or not isinstance(diff, str):
        return []
    if kind == "add":
        return [ToolEdit(path=path, new_text=diff)]
    if kind == "delete":
        return [ToolEdit(path=path, old_text=diff, new_text="")]
    return hunk_edits(path, diff)


def tool_view(item: dict[str, Any]) -> dict[str, Any]:
    """The tool-call model of a tool-like ``ThreadItem`` (kind, title, locations, and for
    a ``fileChange`` one structured edit per added or deleted file and per hunk of an
    updated one): ``ToolActivity`` keyword arguments."""
    kind = item.get("type")
    view: dict[str, Any] = {}
    if kind == "commandExecution":
        view["kind"] = "execute"
        if isinstance(item.get("command"), str):
            view["title"] = _short(item["command"])
    elif kind == "fileChange":
        changes = [c for c in item.get("changes") or [] if isinstance(c, dict)]
        kinds: set[Any] = set()
        locations: list[ToolLocation] = []
        content: list[ToolContent] = []
        for change in changes:
            raw_kind = change.get("kind")
            change_kind = raw_kind.get("type") if isinstance(raw_kind, dict) else raw_kind
            moved = raw_kind.get("move_path") if isinstance(raw_kind, dict) else None
            kinds.add("move" if moved else change_kind)
            if isinstance(change.get("path"), str):
                locations.append(ToolLocation(change["path"]))
            content += _change_edits({**change, "kind": change_kind})
        tool_kind: ToolKind = "edit"
        if kinds == {"delete"}:
            tool_kind = "delete"
        elif kinds == {"move"}:
            tool_kind = "move"
        view["kind"] = tool_kind
        paths = [loc.path for loc in locations]
        view["title"] = _short("Edit " + ", ".join(paths)) if paths else "Apply file changes"
        if locations:
            view["locations"] = tuple(locations)
        if content:
            view["content"] = tuple(content)
    elif kind == "webSearch":
        view["kind"] = "fetch"
        if isinstance(item.get("query"), str):
            view["title"] = _short(item["query"])
            view["content"] = (ToolText(item["query"]),)
    elif kind in ("mcpToolCall", "dynamicToolCall"):
        view["kind"] = "other"
    return view


# ----------------------------------------------------------------------------- server requests


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_TITLE else text[: _MAX_TITLE - 1] + "…"


def _offered(decisions: list[Any] | None) -> set[str] | None:
    if decisions is None:
        return None
    out: set[str] = set()
    for decision in decisions:
        if isinstance(decision, str):
            out.add(decision)
        elif isinstance(decision, dict):
            out.update(str(k) for k in decision)
    return out


#: allow/once→accept, allow/session→acceptForSession (when offered), deny→decline
#: (honoured by Codex even when ``availableDecisions`` does not list it), cancelled→cancel
#: (Codex ends the turn); expired or withdrawn (Codex resolved the request itself, so it
#: ignores the reply)→decline, the answer that runs nothing and stops nothing.
_DECISIONS: Final[dict[Verdict, str]] = {
    "allow_once": "accept",
    "allow_session": "acceptForSession",
    "deny": "decline",
    "cancelled": "cancel",
    "unanswered": "decline",
}


def command_approval(params: p.CommandApprovalParams) -> tuple[ApprovalRequest, bool]:
    """``item/commandExecution/requestApproval`` → the approval to raise, and whether a
    ``session`` approval can be granted (Codex offers ``acceptForSession``)."""
    offered = _offered(params.available_decisions)
    session_ok = (offered is None or "acceptForSession" in offered) and (
        params.kind != "humanCommand"
    )
    actions = params.command_actions or []
    shown = params.command or ""
    if len(actions) == 1 and isinstance(actions[0], dict) and actions[0].get("command"):
        shown = str(actions[0]["command"])
    tool_input: dict[str, Any] = {"commandActions": actions}
    if params.reason:
        tool_input["reason"] = _reason(params.reason)
    request = ApprovalRequest(
        action="command",
        title=_short(f"Run `{shown}`") if shown else "Run a command",
        tool_name="command",
        input=tool_input,
        command=params.command,
        cwd=params.cwd,
        modes=approval_modes(session_ok),
    )
    return request, session_ok


def command_reply(outcome: InteractionOutcome, *, session_ok: bool) -> dict[str, Any]:
    """The reply to a command approval (see :data:`_DECISIONS`)."""
    return {"decision": _DECISIONS[approval_verdict(outcome, session_ok=session_ok)]}


def file_change_approval(params: p.FileChangeApprovalParams, changes: Any) -> ApprovalRequest:
    """``item/fileChange/requestApproval`` → the approval to raise; ``changes`` are the
    item's file changes as its ``item/started`` reported them (``None`` if unknown)."""
    tool_input: dict[str, Any] = {"changes": changes or []}
    if params.reason:
        tool_input["reason"] = _reason(params.reason)
    if params.grant_root:
        tool_input["grantRoot"] = params.grant_root
    paths = [c.get("path") for c in changes or [] if isinstance(c, dict)]
    title = "Apply file changes"
    if len(paths) == 1 and paths[0]:
        title = _short(f"Change {paths[0]}")
    elif paths:
        title = f"Change {len(paths)} files"
    return ApprovalRequest(
        action="fileChange",
        title=title,
        tool_name="fileChange",
        input=tool_input,
        modes=ONCE_OR_SESSION,
    )


def file_change_reply(outcome: InteractionOutcome) -> dict[str, Any]:
    """The reply to a file-change approval (``session`` is always offered)."""
    return command_reply(outcome, session_ok=True)


def permissions_approval(params: p.PermissionsApprovalParams) -> ApprovalRequest:
    """``item/permissions/requestApproval`` → the approval to raise."""
    tool_input: dict[str, Any] = {"permissions": params.permissions}
    if params.reason:
        tool_input["reason"] = _reason(params.reason)
    return ApprovalRequest(
        action="permissions",
        title="Grant Codex additional permissions",
        tool_name="permissions",
        input=tool_input,
        cwd=params.cwd,
        modes=ONCE_OR_SESSION,
    )


def permissions_reply(
    outcome: InteractionOutcome | None, params: p.PermissionsApprovalParams
) -> dict[str, Any]:
    """The reply to a permissions request: the permissions asked for, granted for the
    turn or the session, or none (denied, unanswered, or ``outcome`` ``None``: no run)."""
    verdict = "unanswered" if outcome is None else approval_verdict(outcome)
    if is_allow(verdict):
        scope = "session" if verdict == "allow_session" else "turn"
        return {"permissions": params.permissions, "scope": scope}
    return {"permissions": {}, "scope": "turn"}


def user_input_request(params: p.UserInputParams) -> InteractionRequest:
    """``item/tool/requestUserInput`` (at least one question) → a question, or a question
    set keyed by the questions' ids."""
    questions = params.questions
    choices = [
        tuple(dict.fromkeys(o.label for o in (q.options or []) if o.label)) for q in questions
    ]
    if len(questions) == 1:
        q = questions[0]
        prompt = q.question or q.header
        if q.header and q.question:
            prompt = f"{q.header}: {q.question}"
        return QuestionRequest(
            prompt=prompt,
            choices=tuple(Choice(label, label) for label in choices[0]),
            allow_free_text=True,  # Codex offers a free-form "Other" itself
        )
    return QuestionSetRequest(
        title=_short(" / ".join(q.header for q in questions if q.header) or "Codex asks"),
        items=tuple(
            QuestionItem(q.id, q.question or q.header, tuple(Choice(c, c) for c in cs))
            for q, cs in zip(questions, choices, strict=True)
        ),
    )


def user_input_reply(
    params: p.UserInputParams, outcome: InteractionOutcome | None
) -> dict[str, Any]:
    """The reply to ``item/tool/requestUserInput``: question id → ``{"answers": [value]}``
    for what the host answered (nothing when it did not, or ``outcome`` ``None``)."""
    values: dict[str, str] = {}
    if outcome is not None and outcome.status == "responded":
        answer = outcome.answer
        if isinstance(answer, QuestionAnswer):
            value = answer.choice if answer.choice is not None else answer.text
            if value is not None:
                values[params.questions[0].id] = value
        elif isinstance(answer, QuestionSetAnswer):
            values = dict(answer.answers)
    return {"answers": {key: {"answers": [value]} for key, value in values.items()}}
