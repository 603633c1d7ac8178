"""The runtime: sessions, runs and interactions on top of the provider SPI.

It owns identity, order and time (ids, the per-session gapless sequence, timestamps),
every state change (through the tables in :mod:`bridge.states`), exactly-once settlement
of interactions, and the rules that hold whatever the provider does:

* one active run per session unless the descriptor allows more;
* a run never reports success while an interaction is pending, and every settlement is
  published before the run's terminal event;
* an interrupt settles pending interactions as ``cancelled`` at once, is delivered to the
  provider, and is bounded: past ``interrupt_grace`` the run ends as interrupted (forced)
  and the provider session is disposed (the next run resumes it where the provider can);
* close interrupts the active run, then disposes the provider session, then publishes
  ``session.closed``; dispose is bounded and shielded from cancellation.

The runtime talks to the host only through :class:`Host`, so it can be driven in-process
by tests as well as by the JSON-RPC server.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final, Literal, Protocol, cast

import anyio
import anyio.abc
import msgspec

from bridge.errors import BridgeError, ProviderFailure
from bridge.eventlog import EventLog
from bridge.ids import Clock, IdFactory
from bridge.interactions import Interaction
from bridge.options import resolve_options
from bridge.registry import ProviderRegistry
from bridge.spi import (
    AgentProvider,
    InteractionOutcome,
    ProviderRun,
    ProviderSession,
    RunOutcome,
    SessionContext,
)
from bridge.states import (
    RUN_TERMINAL,
    RUN_TRANSITIONS,
    SESSION_TRANSITIONS,
    RunState,
    SessionState,
    transition,
)
from bridge.wire.errors import ErrorInfo
from bridge.wire.events import (
    Diagnostic,
    EventPayload,
    InteractionRequested,
    InteractionSettled,
    ProviderPayload,
    RunCompleted,
    RunFailed,
    RunInterrupted,
    RunStarted,
    SessionClosed,
    TextDelta,
    ThinkingDelta,
)
from bridge.wire.interactions import ApprovalAnswer, InteractionRequest, SettledStatus
from bridge.wire.methods import (
    EventsReadParams,
    RecoveryRecord,
    RunInput,
    RunInterruptResult,
    RunStartParams,
    RunStartResult,
    SessionInfo,
)
from bridge.wire.providers import ProviderDescriptor
from bridge.workspace import resolve_workspace

__all__ = ["Host", "Run", "Runtime", "Session"]

log = logging.getLogger("agent_bridge.runtime")

WIRE_VERSION: Final = 1
EVENTS_READ_MAX: Final = 1000

_encode = msgspec.json.encode
_provider_payload_decoder: Final = msgspec.json.Decoder(ProviderPayload)
_request_decoder: Final = msgspec.json.Decoder(InteractionRequest)


class Host(Protocol):
    """The runtime's view of the host connection."""

    def publish(self, envelope: bytes) -> bool:
        """Send one encoded :class:`EventEnvelope` to the host (never blocks); return
        whether the host is now congested (producers should await :meth:`drained`)."""
        ...

    @property
    def congested(self) -> bool:
        """Whether the host is behind and producers should wait for :meth:`drained`."""
        ...

    async def drained(self) -> None:
        """Wait until the host has caught up."""
        ...

    def can_answer(self, kind: str) -> bool:
        """Whether the host declared it can answer interactions of ``kind``."""
        ...

    async def ask(self, interaction: Interaction) -> None:
        """Deliver ``interaction`` to the host and apply its answer (runs in a task)."""
        ...


class Session:
    """A bridge session: its provider session, event log, runs and state."""

    def __init__(
        self,
        session_id: str,
        provider: AgentProvider,
        descriptor: ProviderDescriptor,
        workspace: str | None,
        title: str | None,
        options: dict[str, Any],
        created_at: str,
    ) -> None:
        self.id = session_id
        self.provider = provider
        self.descriptor = descriptor
        self.workspace = workspace
        self.title = title
        self.options = options
        self.created_at = created_at
        self.state: SessionState = "active"
        self.provider_session: ProviderSession | None = None
        self.recovery_opaque: Any = None
        self.log = EventLog()
        # One bytes template per session: stamping an event is a single format operation.
        # eventId is ``evt_<session token>_<sequence in hex>``: unique, and the same whether
        # the event is read live or from history.
        token = session_id.split("_", 1)[-1].encode()
        head = b'{"eventId":"evt_%s_%%x","sessionId":"%s",' % (token, session_id.encode())
        tail = b'"sequence":%d,"occurredAt":"%s","payload":%s}'
        self.envelope_format = head + b'"runId":"%s",' + tail
        self.envelope_format_sessionwide = head + tail
        self.active_runs: dict[str, Run] = {}
        self.tg: anyio.abc.TaskGroup | None = None
        self.closed = anyio.Event()
        self.finished = anyio.Event()

    def info(self) -> SessionInfo:
        """Return the wire view of this session."""
        active = next(iter(self.active_runs), None)
        return SessionInfo(
            session_id=self.id,
            provider_id=self.provider.id,
            state=self.state,
            created_at=self.created_at,
            workspace=self.workspace,
            title=self.title,
            active_run_id=active,
            last_sequence=self.log.last_sequence,
        )


class Run:
    """One run of a session."""

    def __init__(self, run_id: str, session: Session, input: RunInput) -> None:
        self.id = run_id
        self.session = session
        self.input = input
        self.state: RunState = "starting"
        self.provider_run: ProviderRun | None = None
        self.pending: dict[str, Interaction] = {}
        self.done = anyio.Event()
        self.interrupt_reason = ""

    @property
    def terminal(self) -> bool:
        """Whether the run has reached completed, failed or interrupted."""
        return self.state in RUN_TERMINAL


class _RunContext:
    """The :class:`bridge.spi.RunContext` handed to a provider run."""

    __slots__ = ("_host", "_publish", "_run", "_runtime", "_session")

    def __init__(self, runtime: Runtime, run: Run) -> None:
        self._runtime = runtime
        self._run = run
        self._session = run.session
        self._host = runtime.host
        self._publish = runtime.publish

    @property
    def run_id(self) -> str:
        return self._run.id

    @property
    def interrupt_requested(self) -> bool:
        return self._run.state == "interrupting"

    def emit_nowait(self, payload: ProviderPayload) -> None:
        self._emit(payload)

    def _emit(self, payload: ProviderPayload) -> bool:
        """Validate and publish; return whether the host is congested."""
        run = self._run
        if run.state in RUN_TERMINAL:
            log.warning("run %s: provider emitted after the run ended; dropped", run.id)
            return False
        kind = type(payload)
        if kind is TextDelta or kind is ThinkingDelta:
            # Frozen structs with one str field: checking the type is the whole validation
            # and the object itself is the snapshot.
            if type(payload.text) is not str:  # type: ignore[union-attr]
                return self._contract_violation("payload of the wrong shape")
        else:
            try:
                # A round trip validates every field and takes a deep snapshot.
                payload = _provider_payload_decoder.decode(_encode(payload))
            except (msgspec.DecodeError, TypeError, ValueError, RecursionError):
                return self._contract_violation("payload of the wrong shape")
        return self._publish(self._session, run.id, payload)

    async def emit(self, payload: ProviderPayload) -> None:
        if self._emit(payload):
            await self._host.drained()

    def _contract_violation(self, what: str) -> bool:
        log.warning("run %s: provider contract violation: %s", self._run.id, what)
        return self._publish(
            self._run.session,
            self._run.id,
            Diagnostic(level="error", code="provider_contract", message=what),
        )

    def open_interaction(self, request: InteractionRequest) -> Interaction:
        return self._runtime.open_interaction(self._run, request)

    async def ask(self, request: InteractionRequest) -> InteractionOutcome:
        return await self.open_interaction(request).wait()


class Runtime:
    """Sessions, runs and interactions; use as ``async with Runtime(...) as rt``."""

    def __init__(
        self,
        registry: ProviderRegistry,
        host: Host,
        *,
        ids: IdFactory | None = None,
        clock: Clock | None = None,
        interrupt_grace: float = 5.0,
        dispose_timeout: float = 10.0,
    ) -> None:
        self.registry = registry
        self.host = host
        self.ids = ids or IdFactory()
        self.clock = clock or Clock()
        self.interrupt_grace = interrupt_grace
        self.dispose_timeout = dispose_timeout
        self.sessions: dict[str, Session] = {}
        self.runs: dict[str, Run] = {}
        self.interactions: dict[str, Interaction] = {}
        self._receipts: dict[str, tuple[bytes, RunStartResult]] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._tg_cm: Any = None

    async def __aenter__(self) -> Runtime:
        self._tg_cm = anyio.create_task_group()
        self._tg = await self._tg_cm.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> bool | None:
        try:
            await self.shutdown()
        finally:
            assert self._tg is not None
            self._tg.cancel_scope.cancel()
            result: bool | None = await self._tg_cm.__aexit__(*exc)
        return result

    # ------------------------------------------------------------------ events

    def publish(self, session: Session, run_id: str | None, payload: EventPayload) -> bool:
        """Stamp ``payload`` with id, sequence and time (an :class:`EventEnvelope`), append
        it to the session's log and send it to the host; return whether the host is
        congested."""
        sequence = session.log.last_sequence + 1
        if run_id is None:
            body = session.envelope_format_sessionwide % (
                sequence,
                sequence,
                self.clock.now_iso_bytes(),
                _encode(payload),
            )
        else:
            body = session.envelope_format % (
                sequence,
                run_id.encode(),
                sequence,
                self.clock.now_iso_bytes(),
                _encode(payload),
            )
        session.log.append(body)
        return self.host.publish(body)

    def read_events(self, params: EventsReadParams) -> msgspec.Raw:
        """Return a page of a session's events as an encoded ``EventsReadResult``."""
        session = self._session(params.session_id)
        limit = max(1, min(params.limit, EVENTS_READ_MAX))
        page, has_more = session.log.page(after=params.after, before=params.before, limit=limit)
        return msgspec.Raw(
            b'{"events":[%s],"hasMore":%s,"exact":true,"lastSequence":%d}'
            % (b",".join(page), b"true" if has_more else b"false", session.log.last_sequence)
        )

    # ------------------------------------------------------------------ sessions

    def _session(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise BridgeError("session_not_found")
        return session

    async def _session_host(
        self, session: Session, *, task_status: anyio.abc.TaskStatus[None]
    ) -> None:
        try:
            async with anyio.create_task_group() as tg:
                session.tg = tg
                task_status.started()
                await session.closed.wait()
                tg.cancel_scope.cancel()
        finally:
            session.finished.set()

    async def _open_session(
        self,
        provider_id: str,
        workspace: str | None,
        options: dict[str, Any],
        title: str | None,
        start: Callable[[AgentProvider, SessionContext], Any],
    ) -> SessionInfo:
        provider = self.registry.get(provider_id)
        descriptor = provider.describe()
        resolved = resolve_options(descriptor.options, options, "session")
        real_workspace = resolve_workspace(workspace)
        session = Session(
            self.ids.new("ses"),
            provider,
            descriptor,
            real_workspace,
            title,
            resolved,
            self.clock.now_iso(),
        )
        assert self._tg is not None, "runtime not started"
        await self._tg.start(self._session_host, session)
        assert session.tg is not None
        ctx = SessionContext(session.id, real_workspace, resolved, session.tg)
        try:
            session.provider_session = await start(provider, ctx)
        except BaseException as exc:
            session.state = "closed"
            session.closed.set()
            if isinstance(exc, BridgeError):
                raise
            if isinstance(exc, Exception):
                log.exception("provider %s failed to start a session", provider_id)
                raise BridgeError("provider_failed") from None
            raise
        self.sessions[session.id] = session
        return session.info()

    async def create_session(
        self,
        provider_id: str,
        *,
        workspace: str | None = None,
        options: dict[str, Any] | None = None,
        title: str | None = None,
    ) -> SessionInfo:
        """Create a session; raises ``provider_not_found``, ``invalid_option``,
        ``workspace_invalid`` or the provider's classified failure."""
        return await self._open_session(
            provider_id,
            workspace,
            options or {},
            title,
            lambda provider, ctx: provider.create_session(ctx),
        )

    async def resume_session(
        self,
        record: RecoveryRecord,
        *,
        workspace: str | None = None,
        options: dict[str, Any] | None = None,
        title: str | None = None,
    ) -> SessionInfo:
        """Create a session that continues the provider session in ``record``."""
        provider = self.registry.get(record.provider_id)
        descriptor = provider.describe()
        if not descriptor.capabilities.recovery.resume:
            raise BridgeError("unsupported")
        if record.wire_version != WIRE_VERSION or record.opaque is None:
            raise BridgeError("recovery_invalid")
        info = await self._open_session(
            record.provider_id,
            workspace,
            options or {},
            title,
            lambda p, ctx: p.resume_session(ctx, record.opaque),
        )
        return info

    def export_session(self, session_id: str) -> RecoveryRecord:
        """Return the recovery record of a session (raises ``unsupported`` when the
        provider cannot resume)."""
        session = self._session(session_id)
        if not session.descriptor.capabilities.recovery.resume:
            raise BridgeError("unsupported")
        opaque = (
            session.provider_session.export_recovery_record()
            if session.provider_session is not None
            else session.recovery_opaque
        )
        if opaque is None:
            raise BridgeError("recovery_invalid")
        return RecoveryRecord(session.provider.id, session.descriptor.version, WIRE_VERSION, opaque)

    def list_sessions(self, provider: str | None = None, limit: int = 100) -> list[SessionInfo]:
        """Return sessions newest first, optionally only those of ``provider``."""
        out: list[SessionInfo] = []
        for session in reversed(self.sessions.values()):
            if provider is None or session.provider.id == provider:
                out.append(session.info())
                if len(out) >= limit:
                    break
        return out

    async def close_session(self, session_id: str, reason: str = "closed") -> SessionInfo:
        """Interrupt the active run, dispose the provider session, publish
        ``session.closed``.  Closing a closed session returns it unchanged."""
        session = self._session(session_id)
        if session.state != "active":
            await session.closed.wait()
            return session.info()
        session.state = transition(SESSION_TRANSITIONS, "session", session.state, "closing")
        with anyio.CancelScope(shield=True):
            for run in list(session.active_runs.values()):
                if not run.terminal and run.state != "interrupting":
                    self._begin_interrupt(run, reason)
            with anyio.move_on_after(self.interrupt_grace + 1):
                for run in list(session.active_runs.values()):
                    await run.done.wait()
            for run in list(session.active_runs.values()):
                self._finish(run, RunOutcome.interrupted(), forced=True)
            await self._dispose_provider(session)
            self.publish(session, None, SessionClosed(reason=reason))
            session.state = transition(SESSION_TRANSITIONS, "session", session.state, "closed")
            session.closed.set()
            await session.finished.wait()
        return session.info()

    async def _dispose_provider(self, session: Session) -> None:
        provider_session, session.provider_session = session.provider_session, None
        if provider_session is None:
            return
        try:
            session.recovery_opaque = provider_session.export_recovery_record()
        except Exception:
            log.exception("session %s: export_recovery_record failed", session.id)
        with anyio.CancelScope(shield=True), anyio.move_on_after(self.dispose_timeout):
            try:
                await provider_session.dispose()
            except Exception:
                log.exception("session %s: dispose failed", session.id)

    async def shutdown(self) -> None:
        """Close every active session (concurrently, bounded)."""
        active = [s for s in self.sessions.values() if s.state == "active"]
        if not active:
            return
        with (
            anyio.CancelScope(shield=True),
            anyio.move_on_after(self.interrupt_grace + self.dispose_timeout + 5),
        ):
            async with anyio.create_task_group() as tg:
                for session in active:
                    tg.start_soon(self.close_session, session.id, "shutdown")

    # ------------------------------------------------------------------ runs

    async def start_run(self, params: RunStartParams) -> RunStartResult:
        """Start a run and return at once with its id; events follow.

        Raises ``session_not_found``, ``session_closed``, ``run_active``,
        ``invalid_option``, ``command_conflict``.  A provider that fails to start the run
        produces a ``run.failed`` event, not an error reply.
        """
        session = self._session(params.session_id)
        receipt_key = b""
        if params.command_id is not None:
            receipt_key = _encode((params.session_id, params.input, params.options))
            previous = self._receipts.get(params.command_id)
            if previous is not None:
                if previous[0] != receipt_key:
                    raise BridgeError("command_conflict")
                first = previous[1]
                return RunStartResult(first.run_id, first.session_id, duplicate=True)
        if session.state != "active":
            raise BridgeError("session_closed")
        limit = session.descriptor.capabilities.run.max_concurrent_runs
        if len(session.active_runs) >= limit:
            raise BridgeError("run_active")
        options = resolve_options(session.descriptor.options, params.options, "run")
        if session.provider_session is None:
            await self._revive(session)
        run = Run(self.ids.new("run"), session, params.input)
        self.runs[run.id] = run
        session.active_runs[run.id] = run
        result = RunStartResult(run.id, session.id)
        if params.command_id is not None:
            self._receipts[params.command_id] = (receipt_key, result)
        self.publish(session, run.id, RunStarted(input=params.input.text))
        assert session.tg is not None and session.provider_session is not None
        provider_session = session.provider_session
        ctx = _RunContext(self, run)
        try:
            run.provider_run = await provider_session.start_run(params.input, options, ctx)
        except ProviderFailure as exc:
            log.warning("run %s failed to start: %s (%s)", run.id, exc.error_code, exc.detail)
            self._finish(run, RunOutcome.failed(exc.error_code, exc.detail))
            return result
        except BridgeError as exc:
            self._finish(run, RunOutcome.failed(exc.error_code))
            return result
        except Exception:
            log.exception("run %s: provider start_run raised", run.id)
            self._finish(run, RunOutcome.failed("provider_contract"))
            return result
        if run.state == "starting":
            run.state = transition(RUN_TRANSITIONS, "run", run.state, "running")
        session.tg.start_soon(self._drive, run)
        if run.state == "interrupting":
            session.tg.start_soon(self._deliver_interrupt, run)
        return result

    async def _revive(self, session: Session) -> None:
        """Resume a provider session that was stopped by a forced interrupt."""
        if session.recovery_opaque is None or not session.descriptor.capabilities.recovery.resume:
            raise BridgeError("session_closed")
        assert session.tg is not None
        ctx = SessionContext(session.id, session.workspace, session.options, session.tg)
        session.provider_session = await session.provider.resume_session(
            ctx, session.recovery_opaque
        )

    async def _drive(self, run: Run) -> None:
        assert run.provider_run is not None
        try:
            outcome = await run.provider_run.wait()
        except ProviderFailure as exc:
            outcome = RunOutcome.failed(exc.error_code, exc.detail)
        except Exception:
            log.exception("run %s: provider wait() raised", run.id)
            outcome = RunOutcome.failed("provider_contract")
        self._finish(run, outcome)

    def _finish(self, run: Run, outcome: RunOutcome, *, forced: bool = False) -> bool:
        """Publish the run's one terminal event; return ``False`` if it already ended."""
        if run.terminal:
            return False
        session = run.session
        if outcome.state == "completed" and run.pending:
            log.warning("run %s: provider reported success with a pending interaction", run.id)
            self.publish(
                session,
                run.id,
                Diagnostic(
                    level="error",
                    code="provider_contract",
                    message="the provider reported success while an interaction was pending",
                ),
            )
            outcome = RunOutcome.failed("provider_contract")
        for interaction in list(run.pending.values()):
            interaction.settle("cancelled", auto=True)
        payload: EventPayload
        if outcome.state == "completed":
            payload = RunCompleted(stop_reason=outcome.stop_reason)
        elif outcome.state == "interrupted":
            payload = RunInterrupted(reason=run.interrupt_reason or "provider", forced=forced)
        else:
            code = outcome.error_code or "provider_failed"
            if outcome.detail:
                log.info("run %s failed: %s: %s", run.id, code, outcome.detail)
            payload = RunFailed(error=ErrorInfo.of(code))
        run.state = transition(RUN_TRANSITIONS, "run", run.state, outcome.state)
        self.publish(session, run.id, payload)
        session.active_runs.pop(run.id, None)
        run.done.set()
        return True

    def _run(self, run_id: str) -> Run:
        run = self.runs.get(run_id)
        if run is None:
            raise BridgeError("run_not_found")
        return run

    def interrupt_run(self, run_id: str, reason: str = "user") -> RunInterruptResult:
        """Accept an interrupt; the terminal event follows.  A second interrupt while the
        first is in progress (or after it ended the run) is answered the same way; a run
        that completed or failed is ``run_not_active``; a provider without interrupt
        support is ``unsupported``."""
        run = self._run(run_id)
        if run.state == "interrupted":
            return RunInterruptResult(run.id, "interrupted")  # already done: idempotent
        if run.terminal:
            raise BridgeError("run_not_active")
        if run.state != "interrupting":
            if run.session.descriptor.capabilities.run.interrupt == "unsupported":
                raise BridgeError("unsupported")
            self._begin_interrupt(run, reason)
        return RunInterruptResult(run.id, "interrupting")

    def _begin_interrupt(self, run: Run, reason: str) -> None:
        run.state = transition(RUN_TRANSITIONS, "run", run.state, "interrupting")
        run.interrupt_reason = reason
        assert run.session.tg is not None
        if run.provider_run is not None:
            # Scheduled before the cancellations below wake the provider, so the
            # provider learns of the interrupt before it sees a cancelled answer.
            run.session.tg.start_soon(self._deliver_interrupt, run)
        for interaction in list(run.pending.values()):
            interaction.settle("cancelled", auto=True)

    async def _deliver_interrupt(self, run: Run) -> None:
        assert run.provider_run is not None
        with anyio.move_on_after(self.interrupt_grace):
            try:
                await run.provider_run.interrupt(run.interrupt_reason)
            except Exception:
                log.exception("run %s: provider interrupt() raised", run.id)
            await run.done.wait()
        if not run.terminal:
            log.warning("run %s ignored its interrupt; stopping the provider", run.id)
            self._finish(run, RunOutcome.interrupted(), forced=True)
            await self._dispose_provider(run.session)

    async def steer_run(self, run_id: str, input: RunInput) -> None:
        """Give an active run more input (``unsupported`` unless the descriptor says so)."""
        run = self._run(run_id)
        if not run.session.descriptor.capabilities.run.steer:
            raise BridgeError("unsupported")
        if run.terminal or run.state == "interrupting" or run.provider_run is None:
            raise BridgeError("run_not_active")
        await run.provider_run.steer(input)

    # ------------------------------------------------------------------ interactions

    def open_interaction(self, run: Run, request: InteractionRequest) -> Interaction:
        """Raise an interaction for ``run`` (see :meth:`bridge.spi.RunContext.open_interaction`)."""
        interaction = Interaction(self.ids.new("int"), run.session.id, run.id, request)
        try:
            interaction.request = _request_decoder.decode(_encode(request))
        except (msgspec.DecodeError, TypeError, ValueError, RecursionError):
            interaction.settle("cancelled", auto=True)
            self.publish(
                run.session,
                run.id,
                Diagnostic(
                    level="error", code="provider_contract", message="invalid interaction request"
                ),
            )
            return interaction
        if run.state not in ("running", "awaiting_input"):
            interaction.settle("cancelled", auto=True)
            self.publish(
                run.session,
                run.id,
                Diagnostic(
                    level="warning",
                    code="provider_contract",
                    message="interaction requested while the run was not running",
                ),
            )
            return interaction
        self.interactions[interaction.interaction_id] = interaction
        run.pending[interaction.interaction_id] = interaction
        if run.state == "running":
            run.state = transition(RUN_TRANSITIONS, "run", run.state, "awaiting_input")
        self.publish(
            run.session,
            run.id,
            InteractionRequested(interaction.interaction_id, interaction.request),
        )
        interaction.on_settle.append(lambda i: self._on_settled(run, i))
        if self.host.can_answer(interaction.kind):
            assert run.session.tg is not None
            run.session.tg.start_soon(self.host.ask, interaction)
        elif interaction.kind == "approval":
            self.publish(
                run.session,
                run.id,
                Diagnostic(
                    level="warning",
                    code="approval_auto_denied",
                    message="the host cannot answer approvals, so the request was denied",
                ),
            )
            interaction.settle("responded", ApprovalAnswer(decision="deny"), auto=True)
        else:
            self.publish(
                run.session,
                run.id,
                Diagnostic(
                    level="warning",
                    code="question_auto_cancelled",
                    message="the host cannot answer questions, so the question was cancelled",
                ),
            )
            interaction.settle("cancelled", auto=True)
        return interaction

    def _on_settled(self, run: Run, interaction: Interaction) -> None:
        run.pending.pop(interaction.interaction_id, None)
        self.publish(
            run.session,
            run.id,
            InteractionSettled(
                interaction.interaction_id,
                cast(SettledStatus, interaction.status),
                interaction.answer,
                interaction.auto,
            ),
        )
        if run.state == "awaiting_input" and not run.pending:
            run.state = transition(RUN_TRANSITIONS, "run", run.state, "running")

    def respond(self, interaction_id: str, answer: Any) -> Literal["applied", "duplicate"]:
        """Settle an interaction with a host's answer (``interaction/respond``)."""
        interaction = self.interactions.get(interaction_id)
        if interaction is None:
            raise BridgeError("interaction_not_found")
        return interaction.respond(answer)
