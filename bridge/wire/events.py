"""Events: the envelope the bridge stamps on everything a run produces, and its payloads.

Providers emit the *content* payloads (text, thinking, tool activity, plan, usage,
diagnostics); the runtime adds the lifecycle ones (run and interaction states) and stamps
every payload with ``eventId``, the session's gapless ``sequence`` (from 1) and
``occurredAt``, in one step.
"""

from __future__ import annotations

from typing import Any, Literal

from agent_bridge.wire.common import WireStruct
from agent_bridge.wire.errors import ErrorInfo
from agent_bridge.wire.inputs import CommandInfo, InputRecord
from agent_bridge.wire.interactions import Answer, InteractionRequest, SettledStatus
from agent_bridge.wire.tools import ToolContent, ToolKind, ToolLocation

__all__ = [
    "CommandsUpdated",
    "ContextUsage",
    "CumulativeUsage",
    "Diagnostic",
    "EventEnvelope",
    "EventPayload",
    "InteractionRequested",
    "InteractionSettled",
    "LimitMeter",
    "LimitsUpdated",
    "PlanStep",
    "PlanUpdated",
    "ProviderPayload",
    "RunCompleted",
    "RunFailed",
    "RunInterrupted",
    "RunStarted",
    "SessionClosed",
    "SessionImported",
    "SessionResumed",
    "SettingsUpdated",
    "Subagent",
    "SubagentUsage",
    "TextDelta",
    "ThinkingDelta",
    "ToolActivity",
    "Usage",
]


class TextDelta(WireStruct, frozen=True, tag="text.delta", tag_field="type"):
    """A piece of the assistant's reply text.

    ``messageId``: the provider's own id of the message this text belongs to (Claude
    Code: the model's message id; Codex: the item id), where the provider gives one.  It
    is the same on the events streamed live and on those projected later from the
    provider's history (``provider/sessions/read``, a continued session's imported
    events), so a host merging both keeps one copy of a message (a tool's is its
    ``callId``)."""

    text: str
    message_id: str | None = None


class ThinkingDelta(WireStruct, frozen=True, tag="thinking.delta", tag_field="type"):
    """A piece of the model's visible reasoning; ``messageId`` as for ``text.delta``."""

    text: str
    message_id: str | None = None


class SubagentUsage(WireStruct, frozen=True):
    """What a subagent has spent so far: tokens, tool calls and time, as its provider
    counts them."""

    total_tokens: int | None = None
    tool_uses: int | None = None
    duration_ms: int | None = None


class Subagent(WireStruct, frozen=True):
    """The subagent a tool call runs (Claude Code's Task/Agent tool): its ``agent_type``
    and ``description`` (on ``started``), ``status`` ``running``, ``completed`` or
    ``failed``, and its ``usage`` as it grows (on ``output`` events).  Tool calls made
    inside it carry this call's id as their ``parentToolCallId``."""

    agent_type: str | None = None
    description: str | None = None
    status: Literal["running", "completed", "failed"] | None = None
    usage: SubagentUsage | None = None


class ToolActivity(WireStruct, frozen=True, tag="tool.activity", tag_field="type"):
    """A tool call's progress: ``started`` → (``output`` deltas) → ``completed``/``failed``.

    ``name`` is the provider's own tool name; ``kind``, ``title``, ``locations`` and
    ``content`` describe the call the same way for every provider (ACP's tool-call
    model): every file edit arrives as a ``ToolEdit`` item whatever the provider.
    They appear when known, usually on ``started`` (and on later events when they
    change).  ``parent_tool_call_id`` names the tool call whose subagent made this call
    (absent for the main agent's); ``subagent`` is set on a call that runs a subagent."""

    tool_call_id: str
    name: str
    status: Literal["started", "output", "completed", "failed"]
    input: Any = None
    output: str | None = None
    exit_code: int | None = None
    kind: ToolKind | None = None
    title: str | None = None
    locations: tuple[ToolLocation, ...] = ()
    content: tuple[ToolContent, ...] = ()
    parent_tool_call_id: str | None = None
    subagent: Subagent | None = None


class PlanStep(WireStruct, frozen=True):
    """One step of an agent's plan."""

    text: str
    status: Literal["pending", "inProgress", "completed"]


class PlanUpdated(WireStruct, frozen=True, tag="plan.updated", tag_field="type"):
    """The agent's current plan, whole."""

    steps: tuple[PlanStep, ...]


class ContextUsage(WireStruct, frozen=True):
    """How full the model's context window is now (not cumulative)."""

    used_tokens: int
    max_tokens: int | None = None


class CumulativeUsage(WireStruct, frozen=True):
    """Tokens and cost spent so far in the session (monotonic)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cost_usd: float | None = None


class Usage(WireStruct, frozen=True, tag="usage", tag_field="type"):
    """Token usage: context occupancy and cumulative spend, kept apart."""

    context: ContextUsage | None = None
    cumulative: CumulativeUsage | None = None


class LimitMeter(WireStruct, frozen=True):
    """One meter of a provider's limits, as far as the provider told it.

    ``pool`` names the allowance the meter belongs to (Codex's ``limitId`` such as
    ``codex``; ``claude`` for Claude Code's subscription limits; ``http`` for a model
    server's 429), ``meter`` the window or resource within it (``primary``,
    ``secondary``, ``five_hour``, ``seven_day``, ``requests``, ``credits`` …).  Every
    figure is optional: ``used`` and ``limit`` in the meter's own unit, ``percent`` of
    the limit used (0 to 100, may exceed 100), ``window_seconds`` the rolling window's
    length, ``resets_at`` when it resets (ISO 8601, UTC), ``status`` ``ok``, ``warning``
    (close to the limit) or ``exhausted`` (requests are refused until the reset)."""

    pool: str
    meter: str
    used: float | None = None
    limit: float | None = None
    percent: float | None = None
    window_seconds: int | None = None
    resets_at: str | None = None
    status: Literal["ok", "warning", "exhausted"] | None = None


class LimitsUpdated(WireStruct, frozen=True, tag="limits.updated", tag_field="type"):
    """What a provider reported about its rate limits or quota: the meters it named this
    time (an update need not repeat meters it did not change).  ``provider/limits`` reads
    the latest figures of every meter a provider has reported."""

    meters: tuple[LimitMeter, ...]


class CommandsUpdated(WireStruct, frozen=True, tag="commands.updated", tag_field="type"):
    """The commands the session's provider offers changed (the whole list; a host shows
    it as a menu, ``session/commands`` reads the latest)."""

    commands: tuple[CommandInfo, ...]


class SettingsUpdated(WireStruct, frozen=True, tag="settings.updated", tag_field="type"):
    """The session's model or mode changed (``session/configure``, or the provider
    switched itself): the current ``model`` and ``mode`` (each absent when the provider
    names none); ``session/settings`` reads what is offered."""

    model: str | None = None
    mode: str | None = None


class Diagnostic(WireStruct, frozen=True, tag="diagnostic", tag_field="type"):
    """Something a host may show or log: ``code`` from a small set, no upstream prose."""

    level: Literal["info", "warning", "error"]
    code: str
    message: str


class RunStarted(WireStruct, frozen=True, tag="run.started", tag_field="type"):
    """A run began; ``input`` is the text it was started with (its text blocks joined by a
    newline when it was given as content), ``content`` the blocks it was given, when it
    was (images by their type, size and SHA-256, not their bytes)."""

    input: str
    content: tuple[InputRecord, ...] = ()


class RunCompleted(WireStruct, frozen=True, tag="run.completed", tag_field="type"):
    """Terminal: the run ended normally."""

    stop_reason: str | None = None


class RunFailed(WireStruct, frozen=True, tag="run.failed", tag_field="type"):
    """Terminal: the run failed with a classified error."""

    error: ErrorInfo


class RunInterrupted(WireStruct, frozen=True, tag="run.interrupted", tag_field="type"):
    """Terminal: the run was interrupted (by the host, a close or a forced stop)."""

    reason: str
    forced: bool = False


class InteractionRequested(WireStruct, frozen=True, tag="interaction.requested", tag_field="type"):
    """The run needs an answer; it is also sent as an ``interaction/request`` to hosts that
    declared they can answer this kind."""

    interaction_id: str
    request: InteractionRequest


class InteractionSettled(WireStruct, frozen=True, tag="interaction.settled", tag_field="type"):
    """The interaction's one settlement; ``answer`` when it was ``responded``; ``auto``
    when the bridge settled it itself (e.g. denied because the host cannot answer)."""

    interaction_id: str
    status: SettledStatus
    answer: Answer | None = None
    auto: bool = False


class SessionClosed(WireStruct, frozen=True, tag="session.closed", tag_field="type"):
    """The session was closed; no further events follow unless it is resumed
    (``session.resumed``).  ``reason`` is ``closed``, ``shutdown`` or ``bridge_crashed``
    (written by the next bridge on the same journal after a crash)."""

    reason: str


class SessionResumed(WireStruct, frozen=True, tag="session.resumed", tag_field="type"):
    """A closed session was reopened by ``session/resume {sessionId}`` (possibly in another
    bridge process): same session id, its sequence continues."""


class SessionImported(WireStruct, frozen=True, tag="session.imported", tag_field="type"):
    """The events ``fromSequence``..``toSequence`` just before this one were imported from
    the provider's own history (``provider/sessions/continue``), not seen live: each is
    projected from one stored record of the provider session ``sessionRef`` (that record,
    exactly as stored, is the event's raw record: ``events/read`` with ``view: "raw"``).
    ``records`` counts the records read; ``nextCursor`` is where
    ``provider/sessions/read`` reads on after them (records the provider's own CLI adds
    later).  Both sequences are 0 when there was nothing to import.  A provider that
    cannot read its history (``nativeSessions.read`` ``unsupported``) imports only what it
    replays as the session opens.  ``truncated``: what was imported was bounded (``importLimit`` of
    ``provider/sessions/continue``) and older records were left out; ``previousCursor``
    then reads them (``provider/sessions/read``, the page before the first imported
    record)."""

    provider: str
    session_ref: str
    records: int
    from_sequence: int
    to_sequence: int
    next_cursor: str | None = None
    truncated: bool = False
    previous_cursor: str | None = None


ProviderPayload = (
    TextDelta
    | ThinkingDelta
    | ToolActivity
    | PlanUpdated
    | Usage
    | Diagnostic
    | LimitsUpdated
    | CommandsUpdated
    | SettingsUpdated
)

#: every payload an event carries: what providers emit, then what the runtime does
EventPayload = (
    ProviderPayload
    | RunStarted
    | RunCompleted
    | RunFailed
    | RunInterrupted
    | InteractionRequested
    | InteractionSettled
    | SessionClosed
    | SessionResumed
    | SessionImported
)


class EventEnvelope(WireStruct, frozen=True):
    """One event of a session, as sent in the ``event`` notification and by ``events/read``.

    ``foldedFrom`` appears only in settled ``events/read`` pages: this event stands for the
    consecutive deltas ``foldedFrom``..``sequence`` of its run, folded into one (it keeps
    the last one's ``eventId`` and ``sequence``).
    """

    event_id: str
    session_id: str
    sequence: int
    occurred_at: str
    payload: EventPayload
    run_id: str | None = None
    folded_from: int | None = None
