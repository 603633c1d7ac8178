"""The provider SPI: what an adapter implements and what the runtime gives it.

Three objects, three lifetimes:

* :class:`AgentProvider` — one per provider kind, found through the entry-point group
  ``agent_bridge.providers``.  Describes itself, probes the machine when asked, creates
  and resumes sessions.
* :class:`ProviderSession` — one provider conversation (often one resident child
  process).  Starts runs, exports an opaque recovery record, and is disposed exactly once
  in effect (``dispose`` is idempotent and safe to retry after a failure).
* :class:`ProviderRun` — one turn.  ``wait`` returns how it ended; ``interrupt`` asks it to
  stop and never disposes the session.

Interrupt, close and dispose are different things: interrupt ends one run and the session
survives; the runtime's close interrupts the active run and then disposes the session;
dispose releases the provider's resources.  A provider that can only kill the whole
session declares ``run.interrupt: unsupported`` instead of disposing silently.

Providers emit semantic input only, through :class:`RunContext`: content payloads
(:data:`ProviderPayload`), optionally with the raw provider record each was projected
from, and interactions.  The runtime owns identity, order and time:
it stamps ids, sequence numbers and timestamps, validates and snapshots every payload
synchronously inside ``emit`` (a later mutation cannot rewrite history; an invalid or
cyclic payload becomes a ``provider_contract`` diagnostic, never a crash), and settles
each interaction exactly once.  Native ids, handles and file descriptors stay inside the
adapter; the only thing that leaves is the opaque recovery record.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import anyio.abc

from agent_bridge.wire.errors import ErrorCode, ErrorDetailValue
from agent_bridge.wire.events import EventPayload, LimitsUpdated, ProviderPayload
from agent_bridge.wire.inputs import CommandInfo
from agent_bridge.wire.interactions import Answer, InteractionRequest, InteractionStatus
from agent_bridge.wire.methods import RunInput
from agent_bridge.wire.native import NativeSessionsListResult, NativeSessionsReadResult
from agent_bridge.wire.providers import Availability, InputCapabilities, ProviderDescriptor
from agent_bridge.wire.settings import SessionSettings

__all__ = [
    "AgentProvider",
    "InteractionHandle",
    "InteractionOutcome",
    "NativeContinuation",
    "ProviderRun",
    "ProviderSession",
    "RunContext",
    "RunOutcome",
    "SessionContext",
]


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """How a run ended, as the provider reports it.

    ``state`` ``completed`` (with an optional ``stop_reason``), ``failed`` (with a
    ``error_code`` from the closed set and a ``detail`` for the log only) or
    ``interrupted``.
    """

    state: Literal["completed", "failed", "interrupted"]
    stop_reason: str | None = None
    error_code: ErrorCode | None = None
    detail: str = ""
    #: Sent to the host as ``error.details`` after :func:`agent_bridge.wire.errors.
    #: safe_details` (e.g. ``{"cause": "connection_refused"}``): allowlisted keys and
    #: values only, never upstream text.
    details: Mapping[str, ErrorDetailValue] | None = None
    #: Where the provider's own history stands at the end of this run (JSON-encodable,
    #: opaque to the runtime: e.g. the provider's session and last message id), kept with
    #: the run and handed back to :meth:`AgentProvider.fork_session` to fork there.
    #: ``None``: this run names no point to fork at.
    position: Any = None

    @classmethod
    def completed(cls, stop_reason: str | None = None) -> RunOutcome:
        """A normal end."""
        return cls("completed", stop_reason=stop_reason)

    @classmethod
    def failed(
        cls,
        code: ErrorCode,
        detail: str = "",
        details: Mapping[str, ErrorDetailValue] | None = None,
    ) -> RunOutcome:
        """A classified failure; ``detail`` is logged (at WARNING), never sent to a host;
        ``details`` is the allowlisted classification the host receives."""
        return cls("failed", error_code=code, detail=detail, details=details)

    @classmethod
    def interrupted(cls) -> RunOutcome:
        """The run stopped because it was interrupted."""
        return cls("interrupted")


@dataclass(frozen=True, slots=True)
class NativeContinuation:
    """How to continue one of a provider's own sessions in the bridge: ``opaque`` is the
    recovery record :meth:`AgentProvider.resume_session` takes (the provider's
    conversation id, say), ``workspace`` the directory the session belongs to (``None``
    when the provider does not keep sessions per directory)."""

    opaque: Any
    workspace: str | None = None


@dataclass(frozen=True, slots=True)
class InteractionOutcome:
    """An interaction's one settlement: ``answer`` is set only when ``responded``."""

    status: InteractionStatus
    answer: Answer | None = None


class InteractionHandle(Protocol):
    """An open interaction, as the provider sees it."""

    @property
    def interaction_id(self) -> str:
        """The bridge's id for it (``int_…``)."""
        ...

    async def wait(self) -> InteractionOutcome:
        """Wait for the settlement (responded, cancelled, expired or withdrawn)."""
        ...

    def withdraw(self) -> bool:
        """Settle as ``withdrawn`` (the provider no longer needs it); returns whether it
        was still pending.  Safe to call after settlement."""
        ...


class RunContext(Protocol):
    """What the runtime gives a run: the way to emit events and raise interactions."""

    @property
    def run_id(self) -> str:
        """The bridge's run id (``run_…``)."""
        ...

    @property
    def interrupt_requested(self) -> bool:
        """Whether the host asked to interrupt this run."""
        ...

    async def emit(self, payload: ProviderPayload, raw: Any = None) -> None:
        """Validate, snapshot and publish ``payload``; waits only when the host (or the
        journal) is not keeping up (backpressure).  Never raises for a bad payload: it is
        replaced by a ``provider_contract`` diagnostic.

        ``raw`` (optional) is the provider record the payload was projected from, kept as
        received for provenance (``events/read`` with ``view: "raw"``): ``bytes`` or
        ``str`` exactly as read from the provider, or a JSON-encodable object (encoded
        once).  Payloads emitted one after another with the *same* ``raw`` object share
        one stored record.  Raw records are never sent to a host unasked."""
        ...

    def emit_nowait(self, payload: ProviderPayload, raw: Any = None) -> None:
        """As :meth:`emit` without waiting for the host (for synchronous callbacks)."""
        ...

    async def emit_many(self, payloads: Sequence[ProviderPayload], raw: Any = None) -> None:
        """As :meth:`emit` for each of ``payloads`` in order, in one call: each payload is
        still its own event (its own sequence and ``eventId``, validated and snapshotted
        on its own: a bad one becomes a ``provider_contract`` diagnostic in its place and
        the others are kept), all projected from the one ``raw`` record.  The events of
        one call are stamped with one clock read, so they share ``occurredAt`` (their
        order is their sequence).  Waits once, after the last, when the host or the
        journal is not keeping up.  For a provider that has several payloads at hand
        (one record that maps to several, or several deltas read at once): one call
        costs much less than one :meth:`emit` per payload."""
        ...

    def emit_nowait_many(self, payloads: Sequence[ProviderPayload], raw: Any = None) -> None:
        """As :meth:`emit_many` without waiting for the host (for synchronous callbacks)."""
        ...

    def checkpoint(self, position: Any) -> None:
        """Say that the provider's own history is complete through the events this run
        has emitted so far, standing at ``position`` (JSON-encodable, opaque to the
        runtime, as :attr:`RunOutcome.position`): a fork at one of those events, or at a
        later one before the next checkpoint, is made from there (``capabilities.fork``
        with ``granularity: message``).  Kept in memory and stored with the run's end,
        and only when its outcome names a ``position`` (the provider vouches that its
        history holds the run); a position that is not JSON is logged and dropped."""
        ...

    def open_interaction(self, request: InteractionRequest) -> InteractionHandle:
        """Raise an interaction; allowed only while the run is running or awaiting input
        (a late request is settled ``cancelled`` at once and reported as a
        ``provider_contract`` diagnostic)."""
        ...

    async def ask(self, request: InteractionRequest) -> InteractionOutcome:
        """Raise an interaction and wait for its settlement."""
        ...


@dataclass(slots=True)
class SessionContext:
    """What the runtime gives a session when it is created or resumed.

    ``task_group`` belongs to the session: tasks started in it (readers of a child's
    stdout, say) are cancelled after ``dispose``.  It is a
    :class:`~agent_bridge.runtime.session_tasks.SessionTasks` (``start_soon``, ``start``,
    ``create_task``; the tasks run in the runtime's group, so it is not entered and has
    no ``cancel_scope`` of its own).  ``options`` were validated against the
    descriptor and have defaults filled in.  ``workspace`` is a resolved, existing
    directory or ``None``.
    """

    session_id: str
    workspace: str | None
    options: Mapping[str, Any]
    task_group: anyio.abc.TaskGroup
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("agent_bridge.provider"))


class ProviderRun(abc.ABC):
    """One run (turn) of a provider session."""

    @abc.abstractmethod
    async def wait(self) -> RunOutcome:
        """Wait for the run to end and return how.

        Must return (not raise) for every ending a provider can have: a crash of the
        child is ``RunOutcome.failed("provider_crashed")``.  Raising :class:`ProviderFailure`
        is accepted too; any other exception is a contract violation and fails the run
        with ``provider_contract``.  Must not report ``completed`` while an interaction it
        opened is still pending (the runtime rejects that as a contract violation).
        """

    @abc.abstractmethod
    async def interrupt(self, reason: str) -> None:
        """Ask the run to stop.  Returns once the request is delivered, not when the run
        has ended: ``wait`` returns ``interrupted`` later.  Must not dispose the session.
        The runtime bounds the wait: if the run does not end within its grace period it
        is ended as interrupted (forced) and the session is disposed.
        """

    async def steer(self, input: RunInput) -> None:
        """Add input to the active run.  Only called when the descriptor has
        ``run.steer``; the default raises ``unsupported``."""
        from agent_bridge.errors import BridgeError

        raise BridgeError("unsupported")


class ProviderSession(abc.ABC):
    """One provider conversation."""

    @abc.abstractmethod
    async def start_run(
        self, input: RunInput, options: Mapping[str, Any], ctx: RunContext
    ) -> ProviderRun:
        """Start a run and return at once with its handle (the turn goes on in the
        background; its events go through ``ctx``).  Raise :class:`ProviderFailure` when
        the run cannot start."""

    async def continue_run(
        self, run_id: str, input: RunInput, options: Mapping[str, Any], ctx: RunContext
    ) -> ProviderRun:
        """Continue the run ``run_id``, cut off when its bridge died while it waited on an
        interaction, from this session's recovery record (the session was just resumed
        from it): return at once with the run's handle, as :meth:`start_run` does.  The
        provider must not run again what the run did before (its events are in the
        journal and hosts saw them) and must raise again, in order, the interactions it
        was waiting on: the runtime binds each to the journaled pending one at the same
        place (the same request), so it keeps its original id and an answer given to
        it meanwhile applies.  ``input`` is the text the run was started with.  Only
        called when the descriptor has ``recovery.resumeTurn``; raise
        ``recovery_invalid`` when the record does not hold this run waiting (the run then
        ends ``bridge_crashed`` as for a provider without the capability).  The default
        raises ``unsupported``."""
        from agent_bridge.errors import BridgeError

        raise BridgeError("unsupported")

    @abc.abstractmethod
    def export_recovery_record(self) -> Any:
        """Return the JSON-encodable ``opaque`` part of the recovery record (e.g. the
        provider's own conversation id), or ``None`` when the session cannot be resumed."""

    @abc.abstractmethod
    async def dispose(self) -> None:
        """Release everything (stop the child process, close pipes).  Idempotent, safe to
        retry after a failure, and bounded in time; must not raise."""

    def commands(self) -> tuple[CommandInfo, ...] | None:
        """The commands (slash commands, skills) the provider offers this session now, as
        far as it has said (``None``: it has not, or never names them).  A change during
        a run is also emitted as ``CommandsUpdated``."""
        return None

    def model_and_mode(self) -> SessionSettings | None:
        """The session's model and mode (``session/settings``), as far as the provider
        names them; ``None``: it names neither."""
        return None

    async def configure(self, model: str | None, mode: str | None) -> None:
        """Switch the model and/or mode (``None``: leave it) before the next run.  Raises
        ``unsupported`` (the default: the provider cannot switch them), ``invalid_params``
        for a value it does not offer, or its classified failure."""
        from agent_bridge.errors import BridgeError

        raise BridgeError("unsupported")

    async def read_limits(self) -> LimitsUpdated | None:
        """Ask the provider now for its rate-limit and quota figures (``provider/limits``
        asks one live session of the provider); ``None``: it cannot tell (the default;
        or not with the authentication it runs with).  The runtime bounds the wait; a
        failure is logged and counts as ``None``."""
        return None

    def input_capabilities(self) -> InputCapabilities | None:
        """What this session's runs may take as input, when the session knows better than
        its provider's descriptor (an agent that states it once started); ``None`` (the
        default): the descriptor's ``capabilities.input``.  The runtime checks every
        run's input against it before the run starts."""
        return None

    def replayed_history(self) -> tuple[Sequence[tuple[EventPayload, bytes]], bool]:
        """The earlier conversation the provider replayed as this session opened, for a
        provider that cannot read its history in pages (``nativeSessions.read``
        ``unsupported``) but replays it when a session is loaded (an ACP agent's
        ``session/load``): the payloads, oldest first, each with the record it came
        from, and whether older ones were dropped to keep it bounded.  The runtime
        imports them when it continues a provider's own session (then asks no more:
        the session may forget them).  The default: nothing."""
        return (), False


class AgentProvider(abc.ABC):
    """A provider kind: the factory for its sessions."""

    #: Stable id used in ``session/create`` (``scripted``, ``claude-code``, ``codex``).
    id: str

    @abc.abstractmethod
    def describe(self) -> ProviderDescriptor:
        """Return the static descriptor (capabilities, options, maturity); no probing."""

    async def probe(self) -> Availability:
        """Discover whether the provider can run here (executable, version,
        authentication).  Runs only when asked; probes use argv vectors with bounded
        output and time.  The default says it is available."""
        return Availability(status="available")

    async def read_limits(self) -> LimitsUpdated | None:
        """Ask the provider for its rate-limit and quota figures without a session
        (``provider/limits`` when none of its sessions is live); ``None``: it cannot tell
        (the default; or not with the login it finds).  The runtime bounds the wait; a
        failure is logged and counts as ``None``."""
        return None

    def check_options(self, options: Mapping[str, Any]) -> None:
        """Raise ``BridgeError("invalid_option")`` (with a ``reason``) when the session
        options ``options`` (already checked against the declared types) cannot work,
        without making a session (:func:`agent_bridge.options.check_session_options`:
        ``agent-bridge acp`` checks its ``-o`` options at start). The default finds
        nothing wrong."""
        del options

    @abc.abstractmethod
    async def create_session(self, ctx: SessionContext) -> ProviderSession:
        """Start a new provider session; raise :class:`ProviderFailure`
        (``provider_unavailable`` naming what is missing, ``provider_timeout`` …) when it
        cannot."""

    async def resume_session(self, ctx: SessionContext, opaque: Any) -> ProviderSession:
        """Continue the session described by ``opaque`` (from
        ``export_recovery_record``).  Only called when the descriptor has
        ``recovery.resume``; the default raises ``unsupported``."""
        from agent_bridge.errors import BridgeError

        raise BridgeError("unsupported")

    async def fork_session(
        self, ctx: SessionContext, opaque: Any, position: Any, at_end: bool
    ) -> ProviderSession:
        """Start a new provider session that forks the provider's own history natively
        (``session/fork``): at ``position`` (the :attr:`RunOutcome.position` of the latest
        run at or before the fork point; ``None`` when no run before it named one) of the
        session whose recovery record is ``opaque`` (``None`` when it saved none).
        ``at_end``: the fork point is the end of that session's history.  The original
        provider session must be left as it was.  Only called when the descriptor's
        ``fork`` says so; the default raises ``unsupported``."""
        from agent_bridge.errors import BridgeError

        raise BridgeError("unsupported")

    async def list_native_sessions(
        self, workspace: str | None, cursor: str | None, limit: int
    ) -> NativeSessionsListResult:
        """A page of the sessions the provider keeps itself, newest first
        (``provider/sessions/list``): only those of ``workspace`` when given, from
        ``cursor`` (a previous page's), at most ``limit`` (already within 1..1000).
        Scans when called, never otherwise.  Raises ``invalid_params`` for a cursor it did
        not make, ``history_unavailable`` when the provider's store cannot be read now.
        Only called when the descriptor's ``nativeSessions.list`` is ``supported``; the
        default raises ``unsupported``."""
        from agent_bridge.errors import BridgeError

        raise BridgeError("unsupported")

    async def read_native_session(
        self, session_ref: str, cursor: str | None, limit: int, start: Literal["start", "end"]
    ) -> NativeSessionsReadResult:
        """A page of ``limit`` complete records of the provider session ``session_ref``
        (``provider/sessions/read``), from ``cursor`` or, without one, from ``start``.
        Strictly read-only.  Raises ``session_not_found`` (no such session),
        ``invalid_params`` (a reference or cursor it did not make) or
        ``history_unavailable`` (it exists but cannot be read now: retryable).  Only
        called when ``nativeSessions.read`` is not ``unsupported``; the default raises
        ``unsupported``."""
        from agent_bridge.errors import BridgeError

        raise BridgeError("unsupported")

    async def native_continuation(self, session_ref: str) -> NativeContinuation:
        """The recovery record that continues the provider session ``session_ref``
        (``provider/sessions/continue``; the bridge then calls :meth:`resume_session`
        with it, after importing the session's records through
        :meth:`read_native_session`).  Reads, never writes, the provider's store.
        Raises ``session_not_found``, ``invalid_params`` (a reference it did not make) or
        ``history_unavailable``.  Only called when ``nativeSessions.continue`` is
        ``supported``; the default raises ``unsupported``."""
        from agent_bridge.errors import BridgeError

        raise BridgeError("unsupported")

    def native_ref(self, opaque: Any) -> str | None:
        """The reference (as ``provider/sessions/list`` gives it) of the provider's own
        session that the recovery record ``opaque`` continues, or ``None`` (not known yet,
        or the provider does not list its sessions).  The bridge binds that reference to
        the bridge session, so a session the bridge created is listed with its
        ``bridgeSessionId`` and continuing it gives that session, never a second one.
        Cheap and pure (called whenever the record changes); the default is ``None``."""
        del opaque
        return None
