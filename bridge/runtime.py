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

Everything it decides is recorded in its :class:`~bridge.journal.base.History`: the
journal on disk (see ``docs/journal.md``) or memory.  With a journal an event reaches the
host only once it is committed (:mod:`bridge.outbox`), and a command's reply
(``session/create``, ``run/start``, ``interaction/respond``, ``session/close``…) is sent
only after what it changed is committed.

The runtime talks to the host only through :class:`Host`, so it can be driven in-process
by tests as well as by the JSON-RPC server.
"""

from __future__ import annotations

import collections
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final, Literal, Protocol, cast

import anyio
import anyio.abc
import msgspec

from agent_bridge.envelope import EnvelopeFormat
from agent_bridge.errors import BridgeError, ProviderFailure
from agent_bridge.ids import Clock, IdFactory
from agent_bridge.interactions import Interaction
from agent_bridge.journal.base import History, SessionRecord
from agent_bridge.journal.blocks import TYPE_CODES
from agent_bridge.journal.errors import JournalError
from agent_bridge.journal.memory import MemoryHistory
from agent_bridge.journal.paging import page_range
from agent_bridge.journal.raw import encode_raw
from agent_bridge.journal.settle import settle
from agent_bridge.options import resolve_options
from agent_bridge.outbox import Outbox
from agent_bridge.registry import ProviderRegistry
from agent_bridge.spi import (
    AgentProvider,
    InteractionOutcome,
    ProviderRun,
    ProviderSession,
    RunOutcome,
    SessionContext,
)
from agent_bridge.states import (
    RUN_TERMINAL,
    RUN_TRANSITIONS,
    SESSION_TRANSITIONS,
    RunState,
    SessionState,
    transition,
)
from agent_bridge.wire.errors import ErrorInfo
from agent_bridge.wire.events import (
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
    SessionResumed,
    TextDelta,
    ThinkingDelta,
)
from agent_bridge.wire.interactions import ApprovalAnswer, InteractionRequest, SettledStatus
from agent_bridge.wire.methods import (
    EventsReadParams,
    RecoveryRecord,
    RunInput,
    RunInterruptResult,
    RunStartParams,
    RunStartResult,
    SessionAttachResult,
    SessionDeleteResult,
    SessionInfo,
)
from agent_bridge.wire.providers import ProviderDescriptor
from agent_bridge.workspace import resolve_workspace

__all__ = ["Host", "Run", "Runtime", "Session"]

log = logging.getLogger("agent_bridge.runtime")

WIRE_VERSION: Final = 1
EVENTS_READ_MAX: Final = 1000

_encode = msgspec.json.encode
_provider_payload_decoder: Final = msgspec.json.Decoder(ProviderPayload)
_request_decoder: Final = msgspec.json.Decoder(InteractionRequest)
_receipt_decoder: Final = msgspec.json.Decoder(RunStartResult)
_TYPE_CODES: Final = TYPE_CODES


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
    """A bridge session open in this process: its provider session, runs and state."""

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
        self.updated_at = created_at
        self.state: SessionState = "active"
        self.provider_session: ProviderSession | None = None
        self.recovery_opaque: Any = None
        self.saved_recovery = b""
        self.last_sequence = 0
        fmt = EnvelopeFormat(session_id)
        self.envelope_format = fmt.run
        self.envelope_format_sessionwide = fmt.sessionwide
        self.run_id_str: str | None = None
        self.run_id_bytes = b""
        # delivery (see bridge.outbox)
        self.held: collections.deque[tuple[int, bytes]] | None = None
        self.paused = False
        # the raw record of the latest emit that had one, and its id
        self.raw_object: Any = None
        self.raw_id = 0
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
            last_sequence=self.last_sequence,
            updated_at=self.updated_at,
        )


def _record_info(record: SessionRecord) -> SessionInfo:
    """The wire view of a session that is not open in this process."""
    return SessionInfo(
        session_id=record.session_id,
        provider_id=record.provider_id,
        state=record.state,
        created_at=record.created_at,
        workspace=record.workspace,
        title=record.title,
        last_sequence=record.last_sequence,
        updated_at=record.updated_at,
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

    __slots__ = ("_publish", "_run", "_runtime", "_session")

    def __init__(self, runtime: Runtime, run: Run) -> None:
        self._runtime = runtime
        self._run = run
        self._session = run.session
        self._publish = runtime.publish

    @property
    def run_id(self) -> str:
        return self._run.id

    @property
    def interrupt_requested(self) -> bool:
        return self._run.state == "interrupting"

    def emit_nowait(self, payload: ProviderPayload, raw: Any = None) -> None:
        self._emit(payload, raw)

    def _emit(self, payload: ProviderPayload, raw: Any) -> bool:
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
                return self._contract_violation("payload of the wrong shape", raw)
        else:
            try:
                # A round trip validates every field and takes a deep snapshot.
                payload = _provider_payload_decoder.decode(_encode(payload))
            except (msgspec.DecodeError, TypeError, ValueError, RecursionError):
                return self._contract_violation("payload of the wrong shape", raw)
        return self._publish(self._session, run.id, payload, raw)

    async def emit(self, payload: ProviderPayload, raw: Any = None) -> None:
        if self._emit(payload, raw):
            await self._runtime.drained()

    def _contract_violation(self, what: str, raw: Any) -> bool:
        log.warning("run %s: provider contract violation: %s", self._run.id, what)
        return self._publish(
            self._run.session,
            self._run.id,
            Diagnostic(level="error", code="provider_contract", message=what),
            raw,
        )

    def open_interaction(self, request: InteractionRequest) -> Interaction:
        return self._runtime.open_interaction(self._run, request)

    async def ask(self, request: InteractionRequest) -> InteractionOutcome:
        return await self.open_interaction(request).wait()


class Runtime:
    """Sessions, runs and interactions; use as ``async with Runtime(...) as rt``.

    ``history`` is where they are recorded (default: memory only); the runtime starts it
    on entry and closes it on exit.
    """

    def __init__(
        self,
        registry: ProviderRegistry,
        host: Host,
        *,
        ids: IdFactory | None = None,
        clock: Clock | None = None,
        interrupt_grace: float = 5.0,
        dispose_timeout: float = 10.0,
        history: History | None = None,
    ) -> None:
        self.registry = registry
        self.host = host
        self.ids = ids or IdFactory()
        self.clock = clock or Clock()
        self.interrupt_grace = interrupt_grace
        self.dispose_timeout = dispose_timeout
        self.history: History = history if history is not None else MemoryHistory()
        self.sessions: dict[str, Session] = {}
        self.runs: dict[str, Run] = {}
        self.interactions: dict[str, Interaction] = {}
        self._receipts: dict[str, tuple[bytes, RunStartResult]] = {}
        self._outbox = Outbox(host, self.history)
        #: sessions with an active run: their recovery record is refreshed after commits
        self._running: dict[Session, None] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._tg_cm: Any = None

    async def __aenter__(self) -> Runtime:
        await self.history.start(self._committed)
        self._tg_cm = anyio.create_task_group()
        self._tg = await self._tg_cm.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> bool | None:
        try:
            try:
                await self.shutdown()
            finally:
                assert self._tg is not None
                self._tg.cancel_scope.cancel()
                result: bool | None = await self._tg_cm.__aexit__(*exc)
        finally:
            await self.history.aclose()
        return result

    # ------------------------------------------------------------------ events

    def publish(
        self, session: Session, run_id: str | None, payload: EventPayload, raw: Any = None
    ) -> bool:
        """Stamp ``payload`` with id, sequence and time (an :class:`EventEnvelope`), record
        it (with the raw record it came from, if any) and send it to the host once it is
        durable; return whether producers should wait (:meth:`drained`)."""
        sequence = session.last_sequence + 1
        session.last_sequence = sequence
        if run_id is None:
            body = session.envelope_format_sessionwide % (
                sequence,
                sequence,
                self.clock.now_iso_bytes(),
                _encode(payload),
            )
        else:
            if run_id is not session.run_id_str:  # one encode per run, not per event
                session.run_id_str = run_id
                session.run_id_bytes = run_id.encode()
            body = session.envelope_format % (
                sequence,
                session.run_id_bytes,
                sequence,
                self.clock.now_iso_bytes(),
                _encode(payload),
            )
        if raw is None:
            raw_id = 0
        elif raw is session.raw_object:
            raw_id = session.raw_id
        else:
            raw_id = self._raw_id(session, raw, sequence)
        history = self.history
        history.append(session.id, sequence, _TYPE_CODES[type(payload)], body, raw_id)
        if history.durable or session.held is not None:
            return self._outbox.hold(session, body)
        return self.host.publish(body)

    def _committed(self) -> None:
        """After each commit: send what is now durable, and keep the recovery records of
        running sessions up to date (an adapter's record may change in the middle of a
        run, e.g. once the provider has named its conversation), so the record a crash
        leaves is never older than the events committed before it."""
        self._outbox.release()
        for session in list(self._running):
            self._save_recovery(session)

    def _raw_id(self, session: Session, raw: Any, sequence: int) -> int:
        """Record ``raw``, a raw record not seen in the previous emit, as the one the event
        at ``sequence`` was projected from; return its id (0 if it cannot be encoded)."""
        record = encode_raw(raw)
        if record is None:
            log.warning("session %s: a raw record that cannot be encoded was dropped", session.id)
            return 0
        session.raw_object = raw
        session.raw_id = sequence
        self.history.add_raw(session.id, sequence, record)
        return sequence

    async def _ask_host(self, interaction: Interaction) -> None:
        """Send ``interaction`` to the host once its ``interaction.requested`` event (and
        everything before it) is durable and so released to the host: a host never gets
        the request ahead of the events that led to it."""
        await self.flush()
        if interaction.pending:
            await self.host.ask(interaction)

    async def drained(self) -> None:
        """Wait until the journal and the host have caught up (backpressure)."""
        await self._outbox.drained()

    async def flush(self) -> None:
        """Wait until everything recorded so far is durable."""
        history = self.history
        await history.committed_through(history.mark())

    async def _guard(self, read: Awaitable[Any]) -> Any:
        """Await a history read; a failed journal is ``history_unavailable``."""
        try:
            return await read
        except JournalError:
            raise BridgeError("history_unavailable") from None

    async def read_events(self, params: EventsReadParams) -> msgspec.Raw:
        """Return a page of a session's events as an encoded ``EventsReadResult``.

        Raises ``session_not_found``, ``invalid_params`` (a settled raw view) and
        ``history_unavailable`` (the journal cannot be read now).
        """
        settled = params.projection == "settled"
        if settled and params.view == "raw":
            raise BridgeError("invalid_params", details={"field": "projection"})
        limit = max(1, min(params.limit, EVENTS_READ_MAX))
        session_id = params.session_id
        session = self.sessions.get(session_id)
        if session is not None and session.state != "closed":
            await self.flush()
            last = self._outbox.committed_sequence(session)
        else:  # closed here (and committed), or not open in this process
            record = await self._guard(self.history.load_session(session_id))
            if record is None:
                raise BridgeError("session_not_found")
            last = record.last_sequence
        lo, hi, has_more = page_range(last, params.after, params.before, limit)
        page: list[bytes] = []
        raw = b""
        if hi >= lo:
            page = await self._guard(self.history.read_events(session_id, lo, hi))
            if len(page) != hi - lo + 1:
                raise BridgeError("history_unavailable")
            if params.view == "raw":
                records = await self._guard(self.history.read_raw(session_id, lo, hi))
                if records:
                    raw = b',"raw":' + _encode(records)
        if settled:
            page = settle(page)
        return msgspec.Raw(
            b'{"events":[%s],"hasMore":%s,"exact":%s,"lastSequence":%d%s}'
            % (
                b",".join(page),
                b"true" if has_more else b"false",
                b"false" if settled else b"true",
                last,
                raw,
            )
        )

    # ------------------------------------------------------------------ sessions

    async def _open_here(self, session_id: str) -> Session:
        """Return the session if it is open in this process (or was, and is closed);
        otherwise raise ``session_closed`` / ``session_in_use`` for a stored session and
        ``session_not_found`` for an unknown one."""
        session = self.sessions.get(session_id)
        if session is not None:
            return session
        record = await self._guard(self.history.load_session(session_id))
        if record is None:
            raise BridgeError("session_not_found")
        raise BridgeError("session_closed" if record.state == "closed" else "session_in_use")

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

    async def _start_provider(
        self,
        session: Session,
        start: Callable[[AgentProvider, SessionContext], Awaitable[ProviderSession]],
    ) -> None:
        """Give ``session`` its task group and provider session; on failure the session
        is closed and the provider's classified error (or ``provider_failed``) raised."""
        assert self._tg is not None, "runtime not started"
        await self._tg.start(self._session_host, session)
        assert session.tg is not None
        ctx = SessionContext(session.id, session.workspace, session.options, session.tg)
        try:
            session.provider_session = await start(session.provider, ctx)
        except BaseException as exc:
            session.state = "closed"
            session.closed.set()
            if isinstance(exc, BridgeError):
                raise
            if isinstance(exc, Exception):
                log.exception("provider %s failed to start a session", session.provider.id)
                raise BridgeError("provider_failed") from None
            raise

    async def _open_session(
        self,
        provider_id: str,
        workspace: str | None,
        options: dict[str, Any],
        title: str | None,
        start: Callable[[AgentProvider, SessionContext], Awaitable[ProviderSession]],
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
        await self._start_provider(session, start)
        self.sessions[session.id] = session
        self.history.add_session(
            SessionRecord(
                session_id=session.id,
                provider_id=provider.id,
                provider_version=descriptor.version,
                workspace=real_workspace,
                title=title,
                created_at=session.created_at,
                updated_at=session.updated_at,
                options=resolved,
            )
        )
        self._save_recovery(session)
        await self.flush()
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

    async def reopen_session(
        self,
        session_id: str,
        *,
        after: int | None = None,
        workspace: str | None = None,
        options: dict[str, Any] | None = None,
        title: str | None = None,
    ) -> SessionInfo:
        """Reopen a stored session by id (``session/resume {sessionId}``), in this or a
        later bridge process: same id, its sequence continues after ``session.resumed``.
        A session already open here is returned as it is.  With ``after``, its events
        after that sequence are replayed first (as :meth:`attach`).

        Raises ``session_not_found``, ``session_in_use`` (open in another live bridge),
        ``unsupported`` (the provider cannot resume), ``recovery_invalid``,
        ``workspace_invalid``, ``invalid_option`` or the provider's classified failure.
        """
        live = self.sessions.get(session_id)
        if live is not None and live.state == "closing":
            await live.closed.wait()
        if live is not None and live.state == "active":
            if after is not None:
                await self.attach(session_id, after)
            return live.info()
        await self.flush()
        status, record = await self._guard(self.history.claim(session_id))
        if status == "not_found" or record is None:
            raise BridgeError("session_not_found" if status != "in_use" else "session_in_use")
        try:
            session = self._reopened(record, workspace, options, title)
            opaque = record.recovery

            def start(provider: AgentProvider, ctx: SessionContext) -> Awaitable[ProviderSession]:
                if opaque is None:
                    return provider.create_session(ctx)
                return provider.resume_session(ctx, opaque)

            await self._start_provider(session, start)
        except BaseException:
            self.history.update_session(session_id, state="closed")
            raise
        self.sessions[session_id] = session
        if after is not None:
            # held from here, so session.resumed reaches the host once, in the replay
            self._outbox.pause(session)
        session.updated_at = self.clock.now_iso()
        self.history.update_session(
            session_id,
            state="active",
            updated_at=session.updated_at,
            title=session.title,
            workspace=session.workspace,
            options=session.options,
        )
        self.publish(session, None, SessionResumed())
        self._save_recovery(session)
        if after is not None:
            await self._attach_open(session, after)
        else:
            await self.flush()
        return session.info()

    def _reopened(
        self,
        record: SessionRecord,
        workspace: str | None,
        options: dict[str, Any] | None,
        title: str | None,
    ) -> Session:
        """A :class:`Session` continuing ``record``, with the overrides applied."""
        provider = self.registry.get(record.provider_id)
        descriptor = provider.describe()
        if not descriptor.capabilities.recovery.resume:
            raise BridgeError("unsupported")
        resolved = (
            resolve_options(descriptor.options, options, "session") if options else record.options
        )
        session = Session(
            record.session_id,
            provider,
            descriptor,
            resolve_workspace(workspace if workspace is not None else record.workspace),
            title if title is not None else record.title,
            resolved,
            record.created_at,
        )
        session.last_sequence = record.last_sequence
        return session

    async def attach(self, session_id: str, after: int = 0) -> SessionAttachResult:
        """Send the session's events after sequence ``after`` to the host, in order, then
        let its live events follow (no gap, no duplicate), and ask its pending
        interactions again.  Works for stored sessions not open here too (history only).
        Raises ``session_not_found`` or ``history_unavailable``."""
        session = self.sessions.get(session_id)
        if session is None or session.state == "closed":
            record = await self._guard(self.history.load_session(session_id))
            if record is None:
                raise BridgeError("session_not_found")
            info = _record_info(record)
            replayed = await self._replay(session_id, after, info.last_sequence)
            return SessionAttachResult(info, replayed, info.last_sequence)
        return await self._attach_open(session, after)

    async def _attach_open(self, session: Session, after: int) -> SessionAttachResult:
        """:meth:`attach` for a session open here: live events are held while what is
        committed is replayed from history, then released."""
        self._outbox.pause(session)
        try:
            await self.flush()
            last = self._outbox.drop_committed(session)
            replayed = await self._replay(session.id, after, last)
        finally:
            self._outbox.resume(session)
        assert session.tg is not None
        for run in session.active_runs.values():
            for interaction in run.pending.values():
                if self.host.can_answer(interaction.kind):
                    session.tg.start_soon(self.host.ask, interaction)
        return SessionAttachResult(session.info(), replayed, last)

    async def _replay(self, session_id: str, after: int, last: int) -> int:
        """Send the stored events ``after + 1``..``last`` to the host; return how many."""
        sent = 0
        lo = max(0, after) + 1
        while lo <= last:
            hi = min(last, lo + EVENTS_READ_MAX - 1)
            page = await self._guard(self.history.read_events(session_id, lo, hi))
            if len(page) != hi - lo + 1:
                raise BridgeError("history_unavailable")
            for body in page:
                if self.host.publish(body):
                    await self.host.drained()
            sent += len(page)
            lo = hi + 1
        return sent

    async def export_session(self, session_id: str) -> RecoveryRecord:
        """Return the recovery record of a session, open here or stored (raises
        ``session_not_found``, ``unsupported`` when the provider cannot resume, and
        ``recovery_invalid`` when there is no record)."""
        session = self.sessions.get(session_id)
        if session is None:
            stored = await self._guard(self.history.load_session(session_id))
            if stored is None:
                raise BridgeError("session_not_found")
            descriptor = self.registry.get(stored.provider_id).describe()
            if not descriptor.capabilities.recovery.resume:
                raise BridgeError("unsupported")
            if stored.recovery is None:
                raise BridgeError("recovery_invalid")
            return RecoveryRecord(
                stored.provider_id, stored.provider_version, WIRE_VERSION, stored.recovery
            )
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

    def _save_recovery(self, session: Session, opaque: Any = None) -> None:
        """Record the session's latest recovery record (``opaque``, or exported now) if it
        changed."""
        if not session.descriptor.capabilities.recovery.resume:
            return
        if opaque is None and session.provider_session is not None:
            try:
                opaque = session.provider_session.export_recovery_record()
            except Exception:
                log.exception("session %s: export_recovery_record failed", session.id)
                return
        if opaque is None:
            return
        try:
            data = _encode(opaque)
        except (TypeError, ValueError, OverflowError, RecursionError):
            log.warning("session %s: the recovery record is not JSON; not saved", session.id)
            return
        if data != session.saved_recovery:
            session.saved_recovery = data
            self.history.update_session(session.id, recovery=data)

    async def list_sessions(
        self,
        provider: str | None = None,
        limit: int = 100,
        *,
        workspace: str | None = None,
        cursor: str | None = None,
    ) -> tuple[list[SessionInfo], str | None]:
        """Return sessions newest first (those of ``provider`` in ``workspace`` only, when
        given) from history, and the cursor of the next page."""
        if workspace is not None:
            # a workspace that does not exist (any more) is matched as given
            with contextlib.suppress(BridgeError):
                workspace = resolve_workspace(workspace)
        records, next_cursor = await self._guard(
            self.history.list_sessions(provider, workspace, cursor, limit)
        )
        out = [
            self.sessions[r.session_id].info() if r.session_id in self.sessions else _record_info(r)
            for r in records
        ]
        return out, next_cursor

    async def close_session(self, session_id: str, reason: str = "closed") -> SessionInfo:
        """Interrupt the active run, dispose the provider session, publish
        ``session.closed``.  Closing a closed session returns it unchanged; a session
        open in another bridge process is ``session_in_use``."""
        session = self.sessions.get(session_id)
        if session is None:
            record = await self._guard(self.history.load_session(session_id))
            if record is None:
                raise BridgeError("session_not_found")
            if record.state != "closed":
                raise BridgeError("session_in_use")
            return _record_info(record)
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
            session.updated_at = self.clock.now_iso()
            self.history.update_session(session.id, state="closed", updated_at=session.updated_at)
            session.state = transition(SESSION_TRANSITIONS, "session", session.state, "closed")
            session.closed.set()
            await session.finished.wait()
            await self.flush()
        return session.info()

    async def delete_session(self, session_id: str) -> SessionDeleteResult:
        """Close the session if it is open here, then delete its history, receipts and
        recovery record.  Raises ``session_not_found``, ``session_in_use`` (open in
        another live bridge) or ``history_unavailable``."""
        session = self.sessions.get(session_id)
        if session is not None and session.state != "closed":
            await self.close_session(session_id)
        status = await self._guard(self.history.delete(session_id))
        if status == "in_use":
            raise BridgeError("session_in_use")
        if status == "not_found" and session is None:
            raise BridgeError("session_not_found")
        self.sessions.pop(session_id, None)
        for run_id in [r for r, run in self.runs.items() if run.session.id == session_id]:
            del self.runs[run_id]
        self._receipts = {k: v for k, v in self._receipts.items() if v[1].session_id != session_id}
        return SessionDeleteResult(session_id, deleted=True)

    async def _dispose_provider(self, session: Session) -> None:
        provider_session, session.provider_session = session.provider_session, None
        if provider_session is None:
            return
        try:
            session.recovery_opaque = provider_session.export_recovery_record()
        except Exception:
            log.exception("session %s: export_recovery_record failed", session.id)
        else:
            self._save_recovery(session, session.recovery_opaque)
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
        """Start a run and return at once with its id (once the start is durable);
        events follow.

        Raises ``session_not_found``, ``session_closed``, ``session_in_use``,
        ``run_active``, ``invalid_option``, ``command_conflict``.  A provider that fails to
        start the run produces a ``run.failed`` event, not an error reply.  The same
        ``commandId`` with the same payload returns the first receipt (``duplicate``),
        also after a restart of the bridge.
        """
        result = await self._start_run(params)
        await self.flush()
        return result

    async def _receipt(self, command_id: str) -> tuple[bytes, RunStartResult] | None:
        known = self._receipts.get(command_id)
        if known is not None:
            return known
        stored = await self._guard(self.history.find_receipt(command_id))
        known = self._receipts.get(command_id)  # made while we waited?
        if known is not None or stored is None:
            return known
        return stored[0], _receipt_decoder.decode(stored[1])

    async def _start_run(self, params: RunStartParams) -> RunStartResult:
        receipt_key = b""
        if params.command_id is not None:
            receipt_key = _encode((params.session_id, params.input, params.options))
            previous = await self._receipt(params.command_id)
            if previous is not None:
                if previous[0] != receipt_key:
                    raise BridgeError("command_conflict")
                first = previous[1]
                return RunStartResult(first.run_id, first.session_id, duplicate=True)
        session = await self._open_here(params.session_id)
        if session.state != "active":
            raise BridgeError("session_closed")
        limit = session.descriptor.capabilities.run.max_concurrent_runs
        if len(session.active_runs) >= limit:
            raise BridgeError("run_active")
        options = resolve_options(session.descriptor.options, params.options, "run")
        run_id = self.ids.new("run")
        result = RunStartResult(run_id, session.id)
        if params.command_id is not None:
            # reserved now, so a retry racing this start is answered as a duplicate
            self._receipts[params.command_id] = (receipt_key, result)
        if session.provider_session is None:
            try:
                await self._revive(session)
            except BaseException:
                if params.command_id is not None:
                    self._receipts.pop(params.command_id, None)
                raise
        run = Run(run_id, session, params.input)
        self.runs[run.id] = run
        session.active_runs[run.id] = run
        self._running[session] = None
        now = self.clock.now_iso()
        if params.command_id is not None:
            self.history.save_receipt(
                params.command_id, session.id, receipt_key, _encode(result), now
            )
        self.publish(session, run.id, RunStarted(input=params.input.text))
        self.history.run_started(session.id, run.id, session.last_sequence)
        session.updated_at = now
        self.history.update_session(session.id, updated_at=now)
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
        self._save_recovery(session)
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
        self.history.run_ended(session.id, run.id, session.last_sequence, run.state)
        session.updated_at = self.clock.now_iso()
        self.history.update_session(session.id, updated_at=session.updated_at)
        self._save_recovery(session)
        session.active_runs.pop(run.id, None)
        if not session.active_runs:
            self._running.pop(session, None)
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
        self.history.interaction_opened(
            run.session.id, interaction.interaction_id, run.id, _encode(interaction.request)
        )
        interaction.on_settle.append(lambda i: self._on_settled(run, i))
        if self.host.can_answer(interaction.kind):
            assert run.session.tg is not None
            run.session.tg.start_soon(self._ask_host, interaction)
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
        self.history.interaction_settled(
            run.session.id,
            interaction.interaction_id,
            interaction.status,
            None if interaction.answer is None else _encode(interaction.answer),
        )
        if run.state == "awaiting_input" and not run.pending:
            run.state = transition(RUN_TRANSITIONS, "run", run.state, "running")

    def respond(self, interaction_id: str, answer: Any) -> Literal["applied", "duplicate"]:
        """Settle an interaction with a host's answer (``interaction/respond``); the
        settlement is durable once :meth:`flush` returns."""
        interaction = self.interactions.get(interaction_id)
        if interaction is None:
            raise BridgeError("interaction_not_found")
        return interaction.respond(answer)
