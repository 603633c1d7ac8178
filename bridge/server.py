"""The bridge's JSON-RPC server: the lifecycle, the method handlers and the host port.

One :class:`BridgeServer` serves one host over one pair of byte streams.  Requests before
``initialize`` are refused (``-32002``), ``initialize`` twice is ``already_initialized``,
and after ``shutdown`` only ``exit`` is accepted.  When the host closes its end (or
writing to it fails) every session is closed, which stops every provider process through
its escalation, and :meth:`BridgeServer.serve` returns.
"""

from __future__ import annotations

import logging
from typing import Any, Final, Literal

import anyio
import msgspec

from agent_bridge import __version__
from agent_bridge.errors import BridgeError
from agent_bridge.interactions import Interaction
from agent_bridge.journal.base import History
from agent_bridge.journal.memory import MemoryHistory
from agent_bridge.registry import ProviderRegistry
from agent_bridge.rpc.connection import ByteReceiver, ByteSender, Connection, Limits, Method
from agent_bridge.rpc.errors import RpcError
from agent_bridge.rpc.framing import FramingKind
from agent_bridge.runtime import Runtime
from agent_bridge.wire.catalog import CATALOG
from agent_bridge.wire.common import SUPPORTED_PROTOCOL_VERSIONS
from agent_bridge.wire.interactions import Answer
from agent_bridge.wire.methods import (
    Empty,
    EventsReadParams,
    InitializeParams,
    InitializeResult,
    InteractionRequestParams,
    InteractionRespondParams,
    InteractionRespondResult,
    PingParams,
    PingResult,
    ProvidersListParams,
    ProvidersListResult,
    RunInterruptParams,
    RunInterruptResult,
    RunStartParams,
    RunStartResult,
    RunSteerParams,
    ServerCapabilities,
    ServerInfo,
    SessionAttachParams,
    SessionAttachResult,
    SessionCreateParams,
    SessionDeleteResult,
    SessionExportResult,
    SessionListParams,
    SessionListResult,
    SessionRef,
    SessionResult,
    SessionResumeParams,
)
from agent_bridge.wire.providers import ProviderDescriptor

__all__ = ["BridgeServer"]

log = logging.getLogger("agent_bridge.server")

_EVENT_HEAD: Final = b'{"jsonrpc":"2.0","method":"event","params":'
_STABLE_METHODS: Final = tuple(
    m.name for m in CATALOG if m.direction == "host->bridge" and m.stability == "stable"
)
_EXPERIMENTAL_METHODS: Final = tuple(
    m.name for m in CATALOG if m.direction == "host->bridge" and m.stability == "experimental"
)

Phase = Literal["new", "initialized", "shutdown"]


class BridgeServer:
    """Serves the agent-bridge protocol to one host (see module docstring)."""

    def __init__(
        self,
        receive: ByteReceiver,
        send: ByteSender,
        *,
        registry: ProviderRegistry,
        framing: FramingKind = "auto",
        limits: Limits = Limits(),  # noqa: B008 - frozen
        interrupt_grace: float = 5.0,
        interaction_timeout: float | None = None,
        history: History | None = None,
    ) -> None:
        self.registry = registry
        self.history: History = history if history is not None else MemoryHistory()
        self.phase: Phase = "new"
        self._interrupt_grace = interrupt_grace
        self._interaction_timeout = interaction_timeout
        self._answers: set[str] = set()
        self._experimental: set[str] = set()
        self.runtime: Runtime | None = None
        self.conn = Connection(
            receive,
            send,
            methods=self._methods(),
            notifications={
                "initialized": Method(lambda _p: None),
                "exit": Method(self._on_exit),
            },
            framing=framing,
            limits=limits,
            gate=self._gate,
            name="host",
            overloaded=lambda: BridgeError("overloaded"),
        )

    # ------------------------------------------------------------------ host port

    def publish_many(self, envelopes: list[bytes]) -> bool:
        """Send several event envelopes, in order, as ``event`` notifications; return
        whether the host is congested."""
        return self.conn.notify_encoded_many(envelopes, _EVENT_HEAD, b"}")

    def publish(self, envelope: bytes) -> bool:
        """Send one event envelope as an ``event`` notification; return whether the host
        is congested."""
        return self.conn.notify_encoded(_EVENT_HEAD + envelope + b"}")

    @property
    def congested(self) -> bool:
        """Whether the host is behind on reading."""
        return self.conn.congested

    async def drained(self) -> None:
        """Wait until the host has caught up."""
        await self.conn.drained()

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
            if method in _EXPERIMENTAL_METHODS and method not in self._experimental:
                raise RpcError(-32601, "Method Not Found: " + method)
        elif method != "exit":
            raise BridgeError("shutting_down")

    def _initialize(self, params: InitializeParams) -> InitializeResult:
        if self.phase != "new":
            raise BridgeError("already_initialized")
        if params.protocol_version not in SUPPORTED_PROTOCOL_VERSIONS:
            raise BridgeError(
                "unsupported_protocol_version",
                details={"supported": ",".join(map(str, SUPPORTED_PROTOCOL_VERSIONS))},
            )
        support = params.capabilities.interactions
        self._answers = {
            kind
            for kind, declared in (
                ("approval", support.approval),
                ("question", support.question),
                ("questionSet", support.question_set),
            )
            if declared is True
        }
        self._experimental = set(params.capabilities.experimental) & set(_EXPERIMENTAL_METHODS)
        self.phase = "initialized"
        if set(_EXPERIMENTAL_METHODS) <= self._experimental:
            self.conn.set_gate(None)
        log.info(
            "initialized by %s %s (protocol %d)",
            params.client_info.name,
            params.client_info.version or "",
            params.protocol_version,
        )
        return InitializeResult(
            protocol_version=params.protocol_version,
            server_info=ServerInfo("agent-bridge", __version__),
            capabilities=ServerCapabilities(
                methods=_STABLE_METHODS,
                experimental=tuple(sorted(self._experimental)),
                durable_history=self.history.durable,
            ),
        )

    async def _shutdown(self, _params: Empty) -> None:
        self.phase = "shutdown"
        self.conn.set_gate(self._gate)
        if self.runtime is not None:
            await self.runtime.shutdown()

    def _on_exit(self, _params: Any) -> None:
        self.conn.close()

    # ------------------------------------------------------------------ methods

    def _rt(self) -> Runtime:
        assert self.runtime is not None, "serve() not running"
        return self.runtime

    async def _providers_list(self, params: ProvidersListParams) -> ProvidersListResult:
        out: list[ProviderDescriptor] = []
        for provider in self.registry.all():
            descriptor = provider.describe()
            if params.probe:
                try:
                    with anyio.fail_after(15):
                        availability = await provider.probe()
                except Exception:
                    log.exception("probe of %s failed", provider.id)
                    availability = None
                descriptor = msgspec.structs.replace(descriptor, availability=availability)
            out.append(descriptor)
        return ProvidersListResult(tuple(out))

    async def _session_create(self, params: SessionCreateParams) -> SessionResult:
        info = await self._rt().create_session(
            params.provider, workspace=params.workspace, options=params.options, title=params.title
        )
        return SessionResult(info)

    async def _session_resume(self, params: SessionResumeParams) -> SessionResult:
        if (params.record is None) == (params.session_id is None):
            raise BridgeError("invalid_params", details={"field": "record"})
        if params.session_id is not None:
            info = await self._rt().reopen_session(
                params.session_id,
                after=params.after,
                workspace=params.workspace,
                options=params.options,
                title=params.title,
            )
        else:
            assert params.record is not None
            info = await self._rt().resume_session(
                params.record,
                workspace=params.workspace,
                options=params.options,
                title=params.title,
            )
        return SessionResult(info)

    async def _session_attach(self, params: SessionAttachParams) -> SessionAttachResult:
        return await self._rt().attach(params.session_id, params.after)

    async def _session_close(self, params: SessionRef) -> SessionResult:
        return SessionResult(await self._rt().close_session(params.session_id))

    async def _session_delete(self, params: SessionRef) -> SessionDeleteResult:
        return await self._rt().delete_session(params.session_id)

    async def _session_list(self, params: SessionListParams) -> SessionListResult:
        limit = max(1, min(params.limit, 1000))
        sessions, cursor = await self._rt().list_sessions(
            params.provider, limit, workspace=params.workspace, cursor=params.cursor
        )
        return SessionListResult(tuple(sessions), next_cursor=cursor)

    async def _session_export(self, params: SessionRef) -> SessionExportResult:
        return SessionExportResult(await self._rt().export_session(params.session_id))

    async def _run_start(self, params: RunStartParams) -> RunStartResult:
        return await self._rt().start_run(params)

    def _run_interrupt(self, params: RunInterruptParams) -> RunInterruptResult:
        return self._rt().interrupt_run(params.run_id, params.reason)

    async def _run_steer(self, params: RunSteerParams) -> Empty:
        await self._rt().steer_run(params.run_id, params.input)
        return Empty()

    async def _interaction_respond(
        self, params: InteractionRespondParams
    ) -> InteractionRespondResult:
        runtime = self._rt()
        status = runtime.respond(params.interaction_id, params.answer)
        await runtime.flush()  # the settlement is durable before the reply
        return InteractionRespondResult(params.interaction_id, status)

    async def _events_read(self, params: EventsReadParams) -> msgspec.Raw:
        return await self._rt().read_events(params)

    def _methods(self) -> dict[str, Method]:
        table: dict[str, Method] = {
            "initialize": Method(self._initialize, InitializeParams),
            "shutdown": Method(self._shutdown, Empty, is_async=True),
            "bridge/ping": Method(lambda p: PingResult(p.data), PingParams),
            "providers/list": Method(self._providers_list, ProvidersListParams, is_async=True),
            "session/create": Method(self._session_create, SessionCreateParams, is_async=True),
            "session/list": Method(self._session_list, SessionListParams, is_async=True),
            "session/close": Method(self._session_close, SessionRef, is_async=True),
            "session/export": Method(self._session_export, SessionRef, is_async=True),
            "session/resume": Method(self._session_resume, SessionResumeParams, is_async=True),
            "session/attach": Method(self._session_attach, SessionAttachParams, is_async=True),
            "session/delete": Method(self._session_delete, SessionRef, is_async=True),
            "run/start": Method(self._run_start, RunStartParams, is_async=True),
            "run/interrupt": Method(self._run_interrupt, RunInterruptParams),
            "run/steer": Method(self._run_steer, RunSteerParams, is_async=True),
            "interaction/respond": Method(
                self._interaction_respond, InteractionRespondParams, is_async=True
            ),
            "events/read": Method(self._events_read, EventsReadParams, is_async=True),
        }
        served = {m.name for m in CATALOG if m.direction == "host->bridge" and m.kind == "request"}
        assert served == set(table), f"catalog and handlers differ: {served ^ set(table)}"
        return table

    # ------------------------------------------------------------------ serving

    async def serve(self) -> None:
        """Serve until the host's EOF, ``exit`` or a write failure; then close every
        session (stopping provider processes) and return."""
        async with Runtime(
            self.registry, self, interrupt_grace=self._interrupt_grace, history=self.history
        ) as runtime:
            self.runtime = runtime
            await self.conn.run()
            with anyio.CancelScope(shield=True):
                await runtime.shutdown()
