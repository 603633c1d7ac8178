"""The method catalog: every method with its direction, kind, types, version and stability.

This is the one method table.  The bridge-protocol front-end binds a handler to every
host->bridge entry by name (:func:`handler_name`) and decodes its params with the
entry's type, and ``schemas/`` is generated from it, so the published method map cannot
drift from what is served.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

from agent_bridge.wire.events import EventEnvelope
from agent_bridge.wire.inputs import BlobReadParams, BlobReadResult, SessionCommandsResult
from agent_bridge.wire.interactions import Answer
from agent_bridge.wire.methods import (
    Empty,
    EventsReadParams,
    EventsReadResult,
    InitializeParams,
    InitializeResult,
    InteractionRequestParams,
    InteractionRespondParams,
    InteractionRespondResult,
    JournalStatusParams,
    PingParams,
    PingResult,
    ProviderLimitsParams,
    ProviderLimitsResult,
    ProvidersListParams,
    ProvidersListResult,
    RunInterruptParams,
    RunInterruptResult,
    RunStartParams,
    RunStartResult,
    RunSteerParams,
    SessionAttachParams,
    SessionAttachResult,
    SessionCreateParams,
    SessionDeleteResult,
    SessionExportResult,
    SessionForkParams,
    SessionForkResult,
    SessionListParams,
    SessionListResult,
    SessionRef,
    SessionResult,
    SessionResumeParams,
)
from agent_bridge.wire.native import (
    NativeSessionsContinueParams,
    NativeSessionsContinueResult,
    NativeSessionsListParams,
    NativeSessionsListResult,
    NativeSessionsReadParams,
    NativeSessionsReadResult,
)
from agent_bridge.wire.settings import SessionConfigureParams, SessionSettings

__all__ = ["CATALOG", "MethodInfo", "handler_name"]


class MethodInfo(msgspec.Struct, frozen=True):
    """One method of the protocol."""

    name: str
    direction: Literal["host->bridge", "bridge->host"]
    kind: Literal["request", "notification"]
    params: Any
    result: Any
    since: int
    stability: Literal["stable", "experimental"]
    summary: str
    #: whether ``$/cancelRequest`` stops it while in progress (answered ``-32800``); a
    #: method whose work cannot stop half way (a close, a delete, an applied answer)
    #: ignores the cancellation and answers with its result
    cancellable: bool = True


def handler_name(method: str) -> str:
    """The name of the front-end's handler for ``method``: ``session/create`` ->
    ``_session_create``."""
    return "_" + method.replace("/", "_")


def _req(
    name: str,
    params: Any,
    result: Any,
    summary: str,
    stability: str = "stable",
    *,
    cancellable: bool = True,
) -> MethodInfo:
    return MethodInfo(
        name,
        "host->bridge",
        "request",
        params,
        result,
        1,
        stability,  # type: ignore[arg-type]
        summary,
        cancellable,
    )


CATALOG: Final[tuple[MethodInfo, ...]] = (
    _req(
        "initialize",
        InitializeParams,
        InitializeResult,
        "Negotiate the protocol version and capabilities.",
    ),
    MethodInfo(
        "initialized",
        "host->bridge",
        "notification",
        Empty,
        None,
        1,
        "stable",
        "The host is ready.",
    ),
    _req(
        "shutdown",
        Empty,
        None,
        "Close every session; the host then sends exit.",
        cancellable=False,
    ),
    MethodInfo(
        "exit", "host->bridge", "notification", Empty, None, 1, "stable", "Stop the bridge process."
    ),
    _req("bridge/ping", PingParams, PingResult, "Echo data back (health check)."),
    _req(
        "providers/list",
        ProvidersListParams,
        ProvidersListResult,
        "List providers with their descriptors and availability.",
    ),
    _req(
        "provider/limits",
        ProviderLimitsParams,
        ProviderLimitsResult,
        "The latest rate-limit and quota figures a provider reported.",
    ),
    _req("session/create", SessionCreateParams, SessionResult, "Create a session on a provider."),
    _req("session/list", SessionListParams, SessionListResult, "List sessions, newest first."),
    _req(
        "session/close",
        SessionRef,
        SessionResult,
        "Interrupt the active run and close the session.",
        cancellable=False,
    ),
    _req(
        "session/export", SessionRef, SessionExportResult, "Return the session's recovery record."
    ),
    _req(
        "session/resume",
        SessionResumeParams,
        SessionResult,
        "Continue a provider session from a recovery record, or reopen a session by id.",
    ),
    _req(
        "session/fork",
        SessionForkParams,
        SessionForkResult,
        "Fork a session at an event (natively, where the provider can); the original is unchanged.",
    ),
    _req(
        "session/attach",
        SessionAttachParams,
        SessionAttachResult,
        "Replay a session's events after a sequence, then follow it live.",
    ),
    _req(
        "session/delete",
        SessionRef,
        SessionDeleteResult,
        "Close a session and delete its history.",
        cancellable=False,
    ),
    _req(
        "run/start", RunStartParams, RunStartResult, "Start a run; returns at once, events follow."
    ),
    _req(
        "run/interrupt",
        RunInterruptParams,
        RunInterruptResult,
        "Interrupt a run; the terminal event follows.",
    ),
    _req(
        "run/steer",
        RunSteerParams,
        Empty,
        "Give an active run more input (where the provider supports it).",
    ),
    _req(
        "interaction/respond",
        InteractionRespondParams,
        InteractionRespondResult,
        "Answer an interaction by id.",
        cancellable=False,
    ),
    _req("events/read", EventsReadParams, EventsReadResult, "Read a page of a session's events."),
    _req(
        "session/commands",
        SessionRef,
        SessionCommandsResult,
        "List the commands (slash commands, skills) the session's provider offers now.",
    ),
    _req(
        "session/settings",
        SessionRef,
        SessionSettings,
        "Read the session's model and mode: what its provider offers and which is current.",
    ),
    _req(
        "session/configure",
        SessionConfigureParams,
        SessionSettings,
        "Switch the session's model and/or mode before its next run.",
        cancellable=False,
    ),
    _req(
        "blob/read",
        BlobReadParams,
        BlobReadResult,
        "Read the bytes the journal keeps for a SHA-256 (a run input's image), a piece at a time.",
    ),
    _req(
        "provider/sessions/list",
        NativeSessionsListParams,
        NativeSessionsListResult,
        "List the sessions a provider keeps itself (its CLI's too), newest first.",
    ),
    _req(
        "provider/sessions/read",
        NativeSessionsReadParams,
        NativeSessionsReadResult,
        "Read a page of a provider-kept session's history: raw records and their events.",
    ),
    _req(
        "provider/sessions/continue",
        NativeSessionsContinueParams,
        NativeSessionsContinueResult,
        "Continue a provider-kept session in the bridge: one bridge session per provider "
        "session, its earlier turns imported.",
        cancellable=False,
    ),
    MethodInfo(
        "event",
        "bridge->host",
        "notification",
        EventEnvelope,
        None,
        1,
        "stable",
        "One event of a session.",
    ),
    MethodInfo(
        "journal/status",
        "bridge->host",
        "notification",
        JournalStatusParams,
        None,
        1,
        "stable",
        "The journal's health changed (no sequence: out of band); see JournalStatusParams.",
    ),
    MethodInfo(
        "interaction/request",
        "bridge->host",
        "request",
        InteractionRequestParams,
        Answer,
        1,
        "stable",
        "A run needs an answer; reply with an Answer (or use interaction/respond).",
    ),
)
