"""The bridge-protocol front-end: one host connection, translated onto the runtime.

One :class:`BridgeFrontend` serves one host over one pair of byte streams: the lifecycle,
the method handlers (bound by name from :data:`~agent_bridge.wire.catalog.CATALOG`, the one
method table) and the host's side of the runtime (it is the host's
:class:`~agent_bridge.runtime.Subscriber`).  Requests before ``initialize`` are refused
(``-32002``), ``initialize`` twice is ``already_initialized``, and after ``shutdown`` only
``exit`` is accepted.  When the host closes its end (or writing to it fails)
:meth:`BridgeFrontend.serve` detaches the host from the runtime and returns; the sessions
go on for as long as the runtime runs (``agent-bridge serve`` then shuts it down).
While it serves, the host is told every change of the journal's health
(``journal/status``, out of band).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final, Literal, TypeVar

import msgspec

from agent_bridge.errors import BridgeError
from agent_bridge.frontends.handshake import EXPERIMENTAL_METHODS, Handshake, agree
from agent_bridge.rpc.connection import ByteReceiver, ByteSender, Connection, Limits, Method
from agent_bridge.rpc.errors import METHOD_NOT_FOUND, RpcError
from agent_bridge.rpc.framing import FramingKind
from agent_bridge.rpc.messages import loggable
from agent_bridge.runtime import Interaction, Released, Runtime
from agent_bridge.spi import AgentProvider
from agent_bridge.wire.catalog import CATALOG, handler_name
from agent_bridge.wire.common import SUPPORTED_PROTOCOL_VERSIONS
from agent_bridge.wire.inputs import BlobReadParams, BlobReadResult, SessionCommandsResult
from agent_bridge.wire.interactions import Answer
from agent_bridge.wire.methods import (
    Empty,
    EventsReadParams,
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
    MAX_PAGE,
    NativeSessionsContinueParams,
    NativeSessionsContinueResult,
    NativeSessionsListParams,
    NativeSessionsListResult,
    NativeSessionsReadParams,
    NativeSessionsReadResult,
)
from agent_bridge.wire.settings import SessionConfigureParams, SessionSettings
from agent_bridge.workspace import workspace_filter

__all__ = ["FIRST_REQUEST_ID", "BridgeFrontend"]

log = logging.getLogger("agent_bridge.server")

_T = TypeVar("_T")


async def _ready(value: _T) -> _T:
    """``value``, awaitable: a synchronous call's result where an awaitable is wanted."""
    return value


_EVENT_HEAD: Final = b'{"jsonrpc":"2.0","method":"event","params":'
_EVENT_TAIL: Final = b"}"

#: The id of the bridge's first request to a host (``interaction/request``), then counting
#: up.  Far above any host's own request counter, so a client that matches responses by id
#: alone (Vim 9.0's LSP channel hands a request whose id equals one of its own pending
#: ids to that request's callback) never confuses the two.  Vim keeps that id in a C
#: ``int``, so it compares ids on their low 32 bits: ids from 2**40 would collide again
#: (2**40 + 6 is its request 6).  2**31 has the 32nd bit set, so no 32-bit view of the
#: bridge's ids (2**31 up to 2**32, reached after two billion requests) equals a host's
#: small positive ids, and every JSON number implementation carries them exactly.
FIRST_REQUEST_ID: Final = 2**31
#: Seconds the host's requests in flight when it closes its output may still answer (a
#: harness that pipes a file of requests reads every reply); then the sessions close.
EOF_GRACE: Final = 10.0

Phase = Literal["new", "initialized", "shutdown"]


class BridgeFrontend:
    """Serves the agent-bridge protocol to one host (see module docstring)."""

    def __init__(
        self,
        runtime: Runtime,
        receive: ByteReceiver,
        send: ByteSender,
        *,
        framing: FramingKind = "auto",
        limits: Limits = Limits(),  # noqa: B008 - frozen
        interaction_timeout: float | None = None,
        owns_runtime: bool = True,
    ) -> None:
        self.runtime = runtime
        #: whether this host is the runtime's only one (``agent-bridge serve``): then its
        #: ``shutdown`` closes every session
        self.owns_runtime = owns_runtime
        self.phase: Phase = "new"
        self._interaction_timeout = interaction_timeout
        self._answers: set[str] = set()
        self._experimental: set[str] = set()
        methods, notifications = self._handlers()
        self.conn = Connection(
            receive,
            send,
            methods=methods,
            notifications=notifications,
            framing=framing,
            limits=limits,
            gate=self._gate,
            name="host",
            overloaded=lambda: BridgeError("overloaded"),
            first_request_id=FIRST_REQUEST_ID,
            eof_grace=EOF_GRACE,
        )

    # ------------------------------------------------------------------ host port

    def publish(self, events: Released) -> bool:
        """Send the events' envelopes, as encoded by the runtime, in order, as ``event``
        notifications; return whether the host is congested."""
        return self.conn.notify_encoded(events.bodies, _EVENT_HEAD, _EVENT_TAIL, events.size)

    @property
    def congested(self) -> bool:
        """Whether the host is behind on reading."""
        return self.conn.congested

    async def drained(self) -> None:
        """Wait until the host has caught up."""
        await self.conn.drained()

    def journal_status(self, status: JournalStatusParams) -> None:
        """Tell the host the journal's health changed (``journal/status``, no sequence)."""
        self.conn.notify("journal/status", status)

    def can_answer(self, kind: str) -> bool:
        """Whether the host declared it can answer interactions of ``kind``."""
        return kind in self._answers

    async def ask(self, interaction: Interaction) -> None:
        """Send ``interaction/request`` and apply the host's answer; withdraw the request
        (``$/cancelRequest``) when the interaction is settled some other way first."""
        params = InteractionRequestParams(
            interaction.interaction_id,
            interaction.session_id,
            interaction.run_id,
            interaction.request,
        )
        entry = self.conn.open_request(
            "interaction/request", params, result_type=Answer, timeout=self._interaction_timeout
        )

        def withdraw(_interaction: Interaction) -> None:
            self.conn.cancel_request(entry)

        interaction.on_settle.append(withdraw)
        try:
            answer = await self.conn.wait(entry)
        except RpcError as exc:
            if self.conn.closed:
                # The host went away without answering: that withdraws only its offer.
                # The interaction stays pending for the other hosts, and the next one to
                # attach (or, over stdio, the shutdown that follows cancels it).
                return
            if interaction.pending:
                log.info(
                    "interaction %s: host answered with an error (%s); cancelled",
                    interaction.interaction_id,
                    exc.code,
                )
                interaction.settle(
                    "expired" if entry.state == "timeout" else "cancelled", auto=True
                )
            return
        if not interaction.pending:
            return
        try:
            interaction.respond(answer)
        except BridgeError as exc:
            log.info(
                "interaction %s: host's answer rejected (%s)",
                interaction.interaction_id,
                exc.error_code,
            )
            interaction.settle("cancelled", auto=True)

    # ------------------------------------------------------------------ lifecycle

    def _gate(self, method: str) -> None:
        """Checked before every request while the phase needs it (not at all while
        initialized without experimental methods: the hot path has no gate)."""
        if self.phase == "new":
            if method != "initialize":
                raise BridgeError("not_initialized")
        elif self.phase == "initialized":
            if method in EXPERIMENTAL_METHODS and method not in self._experimental:
                raise RpcError(METHOD_NOT_FOUND, "Method Not Found: " + method)
        elif method != "exit":
            raise BridgeError("shutting_down")

    def _initialize(self, params: InitializeParams) -> InitializeResult:
        if self.phase != "new":
            raise BridgeError("already_initialized")
        handshake = agree(params, durable=self.runtime.history.durable)
        if handshake is None:
            raise BridgeError(
                "unsupported_protocol_version",
                details={"supported": list(SUPPORTED_PROTOCOL_VERSIONS)},
            )
        self.adopt(params, handshake)
        return handshake.result

    def adopt(self, params: InitializeParams, handshake: Handshake) -> None:
        """Be initialized by ``params`` as ``handshake`` agreed (its result was sent:
        by :meth:`_initialize`, or before this front-end existed by
        :mod:`~agent_bridge.frontends.first_reply`)."""
        self._answers = handshake.answers
        self._experimental = handshake.experimental
        self.phase = "initialized"
        if set(EXPERIMENTAL_METHODS) <= self._experimental:
            self.conn.set_gate(None)
        log.info(
            "initialized by %s %s (protocol %d)",
            loggable(params.client_info.name),
            loggable(params.client_info.version or ""),
            params.protocol_version,
        )

    async def _shutdown(self, _params: Empty) -> None:
        self.phase = "shutdown"
        self.conn.set_gate(self._gate)
        if self.owns_runtime:
            await self.runtime.shutdown()
        # else (a daemon connection): shutdown ends this host's connection only; its
        # sessions go on for the other hosts and the next attach

    def _initialized(self, _params: Any) -> None:
        return None

    def _exit(self, _params: Any) -> None:
        # Replies already produced (and a ``shutdown`` still finishing) are written first.
        self.conn.finish()

    # ------------------------------------------------------------------ methods

    def _bridge_ping(self, params: PingParams) -> PingResult:
        return PingResult(params.data)

    async def _providers_list(self, params: ProvidersListParams) -> ProvidersListResult:
        return ProvidersListResult(tuple(await self.runtime.describe_providers(params.probe)))

    async def _provider_limits(self, params: ProviderLimitsParams) -> ProviderLimitsResult:
        return await self.runtime.provider_limits(params.provider)

    async def _session_create(self, params: SessionCreateParams) -> SessionResult:
        return SessionResult(await self.runtime.create_placed(params, self))

    async def _session_resume(self, params: SessionResumeParams) -> SessionResult:
        if (params.record is None) == (params.session_id is None):
            raise BridgeError("invalid_params", details={"field": "record"})
        if params.session_id is not None:
            info = await self.runtime.reopen_session(
                params.session_id,
                after=params.after,
                workspace=params.workspace,
                options=params.options,
                title=params.title,
                subscriber=self,
            )
        else:
            assert params.record is not None
            info = await self.runtime.resume_session(
                params.record,
                workspace=params.workspace,
                options=params.options,
                title=params.title,
                subscriber=self,
            )
        return SessionResult(info)

    async def _session_fork(self, params: SessionForkParams) -> SessionForkResult:
        return await self.runtime.fork_session(
            params.session_id, at_event=params.at_event, title=params.title, subscriber=self
        )

    async def _session_attach(self, params: SessionAttachParams) -> SessionAttachResult:
        return await self.runtime.attach(params.session_id, self, params.after)

    async def _session_close(self, params: SessionRef) -> SessionResult:
        async def here() -> SessionResult:
            return SessionResult(await self.runtime.close_session(params.session_id))

        return await self._here_or_owner("session/close", params, here)

    async def _session_delete(self, params: SessionRef) -> SessionDeleteResult:
        return await self.runtime.delete_session(params.session_id)

    async def _session_list(self, params: SessionListParams) -> SessionListResult:
        limit = max(1, min(params.limit, 1000))
        sessions, cursor = await self.runtime.list_sessions(
            params.provider, limit, workspace=params.workspace, cursor=params.cursor
        )
        return SessionListResult(tuple(sessions), next_cursor=cursor)

    async def _session_export(self, params: SessionRef) -> SessionExportResult:
        return SessionExportResult(await self.runtime.export_session(params.session_id))

    async def _run_start(self, params: RunStartParams) -> RunStartResult:
        return await self._here_or_owner(
            "run/start", params, lambda: self.runtime.start_run(params)
        )

    async def _run_interrupt(self, params: RunInterruptParams) -> RunInterruptResult:
        return await self._here_or_owner(
            "run/interrupt",
            params,
            lambda: _ready(self.runtime.interrupt_run(params.run_id, params.reason)),
        )

    async def _run_steer(self, params: RunSteerParams) -> Empty:
        await self._here_or_owner(
            "run/steer", params, lambda: self.runtime.steer_run(params.run_id, params.input)
        )
        return Empty()

    async def _here_or_owner(
        self, method: str, params: Any, here: Callable[[], Awaitable[_T]]
    ) -> _T:
        """``here()``'s result; when it raises :class:`~agent_bridge.errors.BridgeError`
        (the session or run is in another fleet member's hands), that member's answer to ``method``
        (:meth:`~agent_bridge.runtime.Runtime.route`, which re-raises the error here
        when no member has it)."""
        try:
            return await here()
        except BridgeError as exc:
            result: _T = await self.runtime.route(method, params, exc)
            return result

    async def _interaction_respond(
        self, params: InteractionRespondParams
    ) -> InteractionRespondResult:
        runtime = self.runtime
        try:
            status = await runtime.answer(params.interaction_id, params.answer)
        except BridgeError as exc:  # pending in another fleet member: answered there
            result: InteractionRespondResult = await runtime.route(
                "interaction/respond", params, exc
            )
            return result
        await runtime.durable()  # the settlement is durable before the reply
        return InteractionRespondResult(params.interaction_id, status)

    async def _events_read(self, params: EventsReadParams) -> msgspec.Raw:
        return await self.runtime.read_events(params)

    async def _session_commands(self, params: SessionRef) -> SessionCommandsResult:
        return await self._here_or_owner(
            "session/commands", params, lambda: self.runtime.session_commands(params.session_id)
        )

    async def _session_settings(self, params: SessionRef) -> SessionSettings:
        return await self._here_or_owner(
            "session/settings", params, lambda: self.runtime.session_settings(params.session_id)
        )

    async def _session_configure(self, params: SessionConfigureParams) -> SessionSettings:
        return await self._here_or_owner(
            "session/configure", params, lambda: self.runtime.configure_session(params)
        )

    async def _blob_read(self, params: BlobReadParams) -> BlobReadResult:
        return await self.runtime.read_blob(params)

    def _native_provider(
        self, provider_id: str, use: Literal["list", "read"], limit: int
    ) -> tuple[AgentProvider, int]:
        """The provider whose own sessions ``provider/sessions/<use>`` pages, and ``limit``
        within 1..``MAX_PAGE``.  Raises ``provider_not_found`` for an unknown provider,
        ``unsupported`` when its descriptor says it cannot ``use`` them."""
        provider = self.runtime.registry.get(provider_id)
        native = provider.describe().capabilities.native_sessions
        if (native.list if use == "list" else native.read) == "unsupported":
            raise BridgeError("unsupported")
        return provider, max(1, min(limit, MAX_PAGE))

    async def _provider_sessions_list(
        self, params: NativeSessionsListParams
    ) -> NativeSessionsListResult:
        provider, limit = self._native_provider(params.provider, "list", params.limit)
        workspace = workspace_filter(params.workspace)
        page = await provider.list_native_sessions(workspace, params.cursor, limit)
        bound = await self.runtime.bound_sessions(
            provider.id, [entry.session_ref for entry in page.sessions]
        )
        if not bound:
            return page
        sessions = tuple(
            msgspec.structs.replace(entry, bridge_session_id=bound[entry.session_ref])
            if entry.session_ref in bound
            else entry
            for entry in page.sessions
        )
        return msgspec.structs.replace(page, sessions=sessions)

    async def _provider_sessions_continue(
        self, params: NativeSessionsContinueParams
    ) -> NativeSessionsContinueResult:
        return await self.runtime.continue_native(
            params.provider,
            params.session_ref,
            workspace=params.workspace,
            options=params.options,
            title=params.title,
            subscriber=self,
            import_limit=params.import_limit,
        )

    async def _provider_sessions_read(
        self, params: NativeSessionsReadParams
    ) -> NativeSessionsReadResult:
        provider, limit = self._native_provider(params.provider, "read", params.limit)
        return await provider.read_native_session(
            params.session_ref, params.cursor, limit, params.from_
        )

    def _handlers(self) -> tuple[dict[str, Method], dict[str, Method]]:
        """The request and notification handlers, one per host->bridge method of the
        catalog, bound by name (``session/create`` -> ``_session_create``)."""
        methods: dict[str, Method] = {}
        notifications: dict[str, Method] = {}
        for info in CATALOG:
            if info.direction != "host->bridge":
                continue
            handler = getattr(self, handler_name(info.name))
            if info.kind == "notification":
                notifications[info.name] = Method(handler)  # params ignored
            else:
                is_async = inspect.iscoroutinefunction(handler)
                methods[info.name] = Method(
                    handler, info.params, is_async=is_async, cancellable=info.cancellable
                )
        return methods, notifications

    # ------------------------------------------------------------------ serving

    async def serve(self) -> None:
        """Serve until the host's EOF, ``exit`` or a write failure; then detach the host
        from the runtime and return."""
        self.runtime.watch(self)
        try:
            await self.conn.run()
        finally:
            self.runtime.unwatch(self)
            self.runtime.detach(self)
