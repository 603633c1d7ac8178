"""The parts of the ``codex app-server`` protocol the adapter reads and writes.

Built from the schema the installed binary publishes about itself
(``adapters/codex/schema/app_server_protocol.json``, codex 0.171.0).  Every struct is
lenient: unknown fields are ignored and nearly every field has a default, so a newer
server that adds fields (or drops an optional one) still decodes.  Only what the adapter
acts on is declared; nested objects it passes through untouched are ``Any``.

Wire messages carry no ``"jsonrpc"`` member; notifications have an extra top-level
``emittedAtMs`` that the connection ignores.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, TypeVar

import msgspec

from agent_bridge.wire.inputs import CommandInput, FileInput, ImageInput, ResourceInput, TextInput
from agent_bridge.wire.methods import RunInput

__all__ = [
    "SERVER_NOTIFICATIONS",
    "SERVER_REQUESTS",
    "AccountReadResponse",
    "CommandApprovalParams",
    "ConfigWarning",
    "CreditsSnapshot",
    "DeltaNotification",
    "ErrorNotification",
    "FileChangeApprovalParams",
    "InitializeResponse",
    "ItemNotification",
    "ModelInfo",
    "ModelListResponse",
    "PermissionsApprovalParams",
    "PlanUpdated",
    "RateLimitSnapshot",
    "RateLimitWindow",
    "RateLimitsRead",
    "RateLimitsUpdated",
    "Scope",
    "ServerRequestResolved",
    "SkillInfo",
    "SkillInterface",
    "SkillsListEntry",
    "SkillsListResponse",
    "ThreadResponse",
    "TokenUsageUpdated",
    "TurnCompleted",
    "TurnError",
    "TurnStartResponse",
    "TurnSteerResponse",
    "UserInputParams",
    "UserInputQuestion",
    "WarningNotification",
    "decode",
    "text_input",
    "user_input",
]


_T = TypeVar("_T")
_decoders: dict[type, msgspec.json.Decoder[Any]] = {}


def decode(kind: type[_T], raw: bytes) -> _T:
    """Decode ``raw`` (a message's ``params`` or ``result``) as ``kind``, with a decoder
    cached per type; raises ``msgspec.DecodeError`` / ``msgspec.ValidationError``."""
    decoder = _decoders.get(kind)
    if decoder is None:
        decoder = _decoders[kind] = msgspec.json.Decoder(kind)
    result: _T = decoder.decode(raw)
    return result


def text_input(text: str) -> list[dict[str, Any]]:
    """The ``input`` of ``turn/start`` / ``turn/steer``: one text element."""
    return [{"type": "text", "text": text, "text_elements": []}]


def user_input(input: RunInput, skills: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The ``input`` of ``turn/start`` / ``turn/steer`` for a run's input: its text as one
    text element; else one element per block: text; an image from a workspace file as
    ``localImage`` (its path), an inline one as ``image`` with a ``data:`` URL; a file
    reference as the text ``@<path>`` (with ``(lines a-b)``) for Codex's tools to read; an
    embedded resource as its text in ``<context ref="…">`` … ``</context>``; a command (a
    skill, whose ``SKILL.md`` path ``skills`` maps its name to) as Codex's TUI sends a
    ``$name`` mention: the text ``$<name> <arguments>`` and a ``skill`` element naming
    it (a name not in ``skills`` is the text alone)."""
    if input.text is not None:
        return text_input(input.text)
    out: list[dict[str, Any]] = []
    skill_items: list[dict[str, Any]] = []
    for block in input.content:
        if isinstance(block, TextInput):
            out += text_input(block.text)
        elif isinstance(block, ImageInput):
            if block.path is not None:
                out.append({"type": "localImage", "path": block.path})
            else:
                url = f"data:{block.mime_type};base64,{block.data}"
                out.append({"type": "image", "url": url})
        elif isinstance(block, FileInput):
            mention = f"@{block.path}"
            if block.start_line is not None:
                end = block.end_line if block.end_line is not None else block.start_line
                mention += f" (lines {block.start_line}-{end})"
            out += text_input(mention)
        elif isinstance(block, ResourceInput):
            ref = block.uri or "untitled"
            out += text_input(f'<context ref="{ref}">\n{block.text}\n</context>')
        elif isinstance(block, CommandInput):
            mention = f"${block.name}"
            if block.arguments:
                mention += f" {block.arguments}"
            out += text_input(mention)
            path = (skills or {}).get(block.name)
            if path is not None:
                skill_items.append({"type": "skill", "name": block.name, "path": path})
    return out + skill_items


class _Lenient(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True):
    """Base: camelCase on the wire, unknown fields ignored."""


# ----------------------------------------------------------------------------- results


class InitializeResponse(_Lenient, frozen=True):
    """``initialize`` result (``userAgent`` names the server version)."""

    user_agent: str = ""
    codex_home: str | None = None
    platform_family: str | None = None
    platform_os: str | None = None


class ThreadRef(_Lenient, frozen=True):
    """The part of a ``Thread`` the adapter keeps: its id."""

    id: str


class ThreadResponse(_Lenient, frozen=True):
    """``thread/start`` and ``thread/resume`` results: the thread and its effective
    settings (``sandbox`` is a policy object, ``approvalPolicy`` a string or object)."""

    thread: ThreadRef
    model: str | None = None
    model_provider: str | None = None
    cwd: str | None = None
    approval_policy: Any = None
    sandbox: Any = None
    reasoning_effort: str | None = None


class TurnError(_Lenient, frozen=True):
    """A turn's error: ``message`` is upstream prose (log only); ``codexErrorInfo`` is a
    string code or a one-key object such as ``{"httpConnectionFailed": {...}}``."""

    message: str = ""
    codex_error_info: Any = None
    additional_details: str | None = None


class TurnRef(_Lenient, frozen=True):
    """A ``Turn``: id, status (``completed | interrupted | failed | inProgress``), error."""

    id: str
    status: str = "inProgress"
    error: TurnError | None = None
    duration_ms: int | None = None


class TurnStartResponse(_Lenient, frozen=True):
    """``turn/start`` result."""

    turn: TurnRef


class TurnSteerResponse(_Lenient, frozen=True):
    """``turn/steer`` result."""

    turn_id: str = ""


class ModelInfo(_Lenient, frozen=True):
    """One entry of ``model/list``: ``model`` is what ``turn/start`` takes."""

    id: str = ""
    model: str = ""
    display_name: str = ""
    hidden: bool = False
    is_default: bool = False


class ModelListResponse(_Lenient, frozen=True):
    """``model/list`` result (one page; ``next_cursor`` names the next)."""

    data: tuple[ModelInfo, ...] = ()
    next_cursor: str | None = None


class SkillInterface(_Lenient, frozen=True):
    """What a skill's ``SKILL.json`` says about showing it."""

    display_name: str | None = None
    short_description: str | None = None


class SkillInfo(_Lenient, frozen=True):
    """One skill of ``skills/list`` (``SkillMetadata``): ``path`` is its ``SKILL.md``."""

    name: str = ""
    description: str = ""
    short_description: str | None = None
    path: str = ""
    enabled: bool = True
    interface: SkillInterface | None = None


class SkillsListEntry(_Lenient, frozen=True):
    """The skills of one working directory."""

    cwd: str = ""
    skills: tuple[SkillInfo, ...] = ()


class SkillsListResponse(_Lenient, frozen=True):
    """``skills/list`` result."""

    data: tuple[SkillsListEntry, ...] = ()


class AccountReadResponse(_Lenient, frozen=True):
    """``account/read`` result: ``account`` is ``null`` when nobody is logged in."""

    account: dict[str, Any] | None = None
    requires_openai_auth: bool = False


# ----------------------------------------------------------------------------- notifications


class Scope(_Lenient, frozen=True):
    """The correlation fields most notifications carry."""

    thread_id: str | None = None
    turn_id: str | None = None


class ThreadSettings(_Lenient, frozen=True):
    """A thread's effective settings (``thread/settings/updated``'s ``threadSettings``):
    the fields the bridge keeps (``sandboxPolicy`` is a policy object, ``approvalPolicy``
    a string or object)."""

    model: str | None = None
    approval_policy: Any = None
    sandbox_policy: Any = None
    effort: str | None = None


class ThreadSettingsUpdated(_Lenient, frozen=True):
    """``thread/settings/updated``: a thread's settings changed (sent whenever Codex
    applies settings that differ from the last it reported: a turn's overrides, or a
    change of its own)."""

    thread_id: str | None = None
    thread_settings: ThreadSettings | None = None


class DeltaNotification(_Lenient, frozen=True):
    """``item/agentMessage/delta``, ``item/reasoning/*Delta``,
    ``item/commandExecution/outputDelta``, ``item/fileChange/outputDelta``,
    ``item/plan/delta``."""

    item_id: str = ""
    delta: str = ""
    summary_index: int | None = None


class ItemNotification(_Lenient, frozen=True):
    """``item/started`` / ``item/completed``: ``item`` is a ``ThreadItem`` (tagged by
    ``type``), kept as a dict and read field by field since new item types appear."""

    item: dict[str, Any] = {}


class TokenBreakdown(_Lenient, frozen=True):
    """``TokenUsageBreakdown``."""

    total_tokens: int = 0
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_output_tokens: int = 0


class TokenUsage(_Lenient, frozen=True):
    """``ThreadTokenUsage``: ``total`` is cumulative for the thread, ``last`` the last
    model call (its size is the context occupancy)."""

    total: TokenBreakdown = TokenBreakdown()
    last: TokenBreakdown = TokenBreakdown()
    model_context_window: int | None = None


class TokenUsageUpdated(_Lenient, frozen=True):
    """``thread/tokenUsage/updated``."""

    token_usage: TokenUsage = TokenUsage()


class PlanStepWire(_Lenient, frozen=True):
    """``TurnPlanStep``."""

    step: str = ""
    status: str = "pending"


class PlanUpdated(_Lenient, frozen=True):
    """``turn/plan/updated``."""

    plan: list[PlanStepWire] = []


class TurnCompleted(_Lenient, frozen=True):
    """``turn/completed``."""

    turn: TurnRef
    thread_id: str | None = None


class ErrorNotification(_Lenient, frozen=True):
    """``error``: ``willRetry`` says whether Codex retries by itself."""

    error: TurnError = TurnError()
    will_retry: bool = False


class RateLimitWindow(_Lenient, frozen=True):
    """``RateLimitWindow``: percent used, the window's length, its reset (Unix seconds)."""

    used_percent: float | None = None
    window_duration_mins: int | None = None
    resets_at: int | None = None


class CreditsSnapshot(_Lenient, frozen=True):
    """``CreditsSnapshot``: whether the account has credits left."""

    has_credits: bool | None = None
    unlimited: bool | None = None


class RateLimitSnapshot(_Lenient, frozen=True):
    """``RateLimitSnapshot`` (sparse in ``account/rateLimits/updated``: a field left out
    is unknown, not cleared)."""

    limit_id: str | None = None
    primary: RateLimitWindow | None = None
    secondary: RateLimitWindow | None = None
    credits: CreditsSnapshot | None = None
    rate_limit_reached_type: str | None = None


class RateLimitsUpdated(_Lenient, frozen=True):
    """``account/rateLimits/updated``; also the result of ``account/rateLimits/read``."""

    rate_limits: RateLimitSnapshot = RateLimitSnapshot()


class RateLimitsRead(_Lenient, frozen=True):
    """``account/rateLimits/read`` result: the single-bucket view and, when the backend
    names several, every bucket by its limit id."""

    rate_limits: RateLimitSnapshot = RateLimitSnapshot()
    rate_limits_by_limit_id: dict[str, RateLimitSnapshot] | None = None


class WarningNotification(_Lenient, frozen=True):
    """``warning`` / ``guardianWarning``."""

    message: str = ""


class ConfigWarning(_Lenient, frozen=True):
    """``configWarning`` / ``deprecationNotice``."""

    summary: str = ""
    details: str | None = None


class ServerRequestResolved(_Lenient, frozen=True):
    """``serverRequest/resolved``: a server→client request was settled (by our reply or
    by the server itself, e.g. on interrupt)."""

    request_id: int | str | None = None
    thread_id: str | None = None


# ----------------------------------------------------------------------------- server requests


class CommandApprovalParams(_Lenient, frozen=True):
    """``item/commandExecution/requestApproval``."""

    thread_id: str = ""
    turn_id: str = ""
    item_id: str = ""
    command: str | None = None
    cwd: str | None = None
    reason: str | None = None
    kind: str = "command"
    command_actions: list[Any] | None = None
    available_decisions: list[Any] | None = None


class FileChangeApprovalParams(_Lenient, frozen=True):
    """``item/fileChange/requestApproval``."""

    thread_id: str = ""
    turn_id: str = ""
    item_id: str = ""
    reason: str | None = None
    grant_root: str | None = None


class PermissionsApprovalParams(_Lenient, frozen=True):
    """``item/permissions/requestApproval``: ``permissions`` is a
    ``RequestPermissionProfile`` (``fileSystem`` / ``network``), granted back as is."""

    thread_id: str = ""
    turn_id: str = ""
    item_id: str = ""
    cwd: str | None = None
    permissions: dict[str, Any] = {}
    reason: str | None = None


class UserInputOption(_Lenient, frozen=True):
    """``ToolRequestUserInputOption``."""

    label: str = ""
    description: str = ""


class UserInputQuestion(_Lenient, frozen=True):
    """``ToolRequestUserInputQuestion``."""

    id: str = ""
    header: str = ""
    question: str = ""
    options: list[UserInputOption] | None = None
    is_other: bool = False
    is_secret: bool = False


class UserInputParams(_Lenient, frozen=True):
    """``item/tool/requestUserInput`` (experimental upstream; Plan mode only in 0.171.0)."""

    thread_id: str = ""
    turn_id: str = ""
    item_id: str = ""
    questions: list[UserInputQuestion] = []


#: Every server→client request in the 0.171.0 schema.  The adapter answers the first four;
#: the others are answered ``-32601`` by the connection (never left hanging).
SERVER_REQUESTS: Final[tuple[str, ...]] = (
    "item/commandExecution/requestApproval",
    "item/fileChange/requestApproval",
    "item/permissions/requestApproval",
    "item/tool/requestUserInput",
    "mcpServer/elicitation/request",
    "item/tool/call",
    "account/chatgptAuthTokens/refresh",
    "attestation/generate",
    "applyPatchApproval",
    "execCommandApproval",
)

#: Every server notification in the 0.171.0 schema (``tests/test_codex_adapter.py``
#: checks this list against ``schema/app_server_protocol.json``).
SERVER_NOTIFICATIONS: Final[tuple[str, ...]] = (
    "error",
    "thread/started",
    "thread/status/changed",
    "thread/readState/changed",
    "thread/archived",
    "thread/deleted",
    "thread/unarchived",
    "thread/closed",
    "thread/reverted",
    "skills/changed",
    "thread/name/updated",
    "thread/section/changed",
    "thread/attachment/updated",
    "thread/goal/updated",
    "thread/prediction/updated",
    "thread/goal/cleared",
    "thread/queue/changed",
    "project/changed",
    "thread/project/updated",
    "thread/environment/connected",
    "thread/environment/disconnected",
    "thread/settings/updated",
    "thread/tokenUsage/updated",
    "turn/started",
    "hook/started",
    "turn/completed",
    "hook/completed",
    "turn/diff/updated",
    "turn/plan/updated",
    "item/started",
    "item/autoApprovalReview/started",
    "item/autoApprovalReview/completed",
    "autoApprovalReview/strictReviewRequired",
    "item/completed",
    "item/agentMessage/delta",
    "item/plan/delta",
    "command/exec/outputDelta",
    "process/outputDelta",
    "thread/search/partial",
    "process/exited",
    "item/commandExecution/outputDelta",
    "item/commandExecution/terminalInteraction",
    "item/fileChange/outputDelta",
    "item/fileChange/patchUpdated",
    "serverRequest/resolved",
    "item/mcpToolCall/progress",
    "mcpServer/oauthLogin/completed",
    "mcpServer/startupStatus/updated",
    "mcpServer/event/stream/notification",
    "account/updated",
    "account/gatewayOAuth/changed",
    "account/rateLimits/updated",
    "app/list/updated",
    "remoteControl/status/changed",
    "externalAgentConfig/import/progress",
    "externalAgentConfig/import/completed",
    "fs/changed",
    "item/reasoning/summaryTextDelta",
    "item/reasoning/summaryPartAdded",
    "item/reasoning/textDelta",
    "thread/compacted",
    "model/rerouted",
    "model/verification",
    "modelProvider/authRecoveryStarted",
    "modelProvider/authRecoveryCompleted",
    "turn/moderationMetadata",
    "model/safetyBuffering/updated",
    "warning",
    "guardianWarning",
    "deprecationNotice",
    "configWarning",
    "fuzzyFileSearch/sessionUpdated",
    "fuzzyFileSearch/sessionCompleted",
    "thread/realtime/started",
    "thread/realtime/itemAdded",
    "thread/realtime/item/started",
    "thread/realtime/item/transcript/delta",
    "thread/realtime/item/completed",
    "thread/realtime/transcript/delta",
    "thread/realtime/transcript/done",
    "thread/realtime/outputAudio/delta",
    "thread/realtime/sdp",
    "thread/realtime/error",
    "thread/realtime/closed",
    "windows/worldWritableWarning",
    "windowsSandbox/setupCompleted",
    "account/login/completed",
)
