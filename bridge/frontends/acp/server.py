"""The ACP agent front-end: one ACP client (an editor) over stdio, onto the runtime.

:class:`AcpFrontend` serves the Agent Client Protocol as an *agent*: newline-delimited
JSON-RPC 2.0, the client's requests translated into runtime commands, the sessions'
events sent back as ``session/update`` notifications, and approvals and questions put to
the client as ``session/request_permission`` / ``elicitation/create`` requests
(:mod:`~agent_bridge.frontends.acp.asking`).  The client is a runtime
:class:`~agent_bridge.runtime.Subscriber` of every session it created or loaded.

``session/prompt`` starts a run and answers once its terminal event has been sent, so
every update of the turn precedes the reply; a failed run is a JSON-RPC error whose
``data`` is the bridge's classified :class:`~agent_bridge.wire.errors.ErrorInfo`.
``session/cancel`` interrupts the run (its pending interactions are settled
``cancelled`` at once and their requests withdrawn) and the prompt ends ``cancelled``;
a cancel that arrives before the turn's run has started (in the same write as the
prompt, say) is kept on the turn and interrupts the run as soon as it starts.  ACP's
``$/cancel_request`` of the ``session/prompt`` request itself interrupts its run too; the
prompt is answered ``-32800`` once the run has ended.  So that a
prompt and a cancel read together are seen in the order they were sent, the cancel is
handled as a task started after the prompt's (the prompt's task registers its turn
before its first wait).  On a fleet, a cancel while the member running the turn is dead
and no member has continued it yet ends the prompt ``cancelled`` at once; the run is
kept to be interrupted when a member resumes the session (its ``session.resumed``,
while this client is connected), so a member continuing it later does not undo the
cancel.
Errors use ACP's codes (``-32000`` authentication required, ``-32002`` resource not
found, ``-32602`` invalid params, ``-32603`` otherwise), always with ``data``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

import anyio
import anyio.abc
import msgspec

from agent_bridge import __version__
from agent_bridge.errors import BridgeError
from agent_bridge.frontends.acp import asking
from agent_bridge.frontends.acp.options import (
    PROVIDER_CONFIG_ID,
    apply_choice,
    config_options,
    mcp_options,
    mode_option,
    mode_state,
    settings_model,
    settings_modes,
)
from agent_bridge.frontends.acp.prompt import prompt_capabilities, prompt_texts, run_input
from agent_bridge.frontends.acp.updates import (
    UpdateMapper,
    available_command,
    is_terminal,
    stop_reason,
)
from agent_bridge.rpc.connection import (
    ACP_CANCEL,
    ByteReceiver,
    ByteSender,
    Connection,
    Limits,
    Method,
)
from agent_bridge.rpc.errors import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, RpcError
from agent_bridge.rpc.messages import loggable
from agent_bridge.runtime import Interaction, Released, Runtime
from agent_bridge.runtime.inputs import prepare
from agent_bridge.runtime.native import native_session_id
from agent_bridge.runtime.routing import SessionReconfigure, SessionRetitle, SessionState
from agent_bridge.wire import acp
from agent_bridge.wire.events import (
    EventPayload,
    RunFailed,
    SessionClosed,
    SessionResumed,
    SettingsUpdated,
)
from agent_bridge.wire.inputs import InputKind, SessionCommandsResult
from agent_bridge.wire.methods import (
    RunInput,
    RunInterruptParams,
    RunInterruptResult,
    RunStartParams,
    RunStartResult,
    SessionCreateParams,
    SessionRef,
)
from agent_bridge.wire.providers import ProviderDescriptor
from agent_bridge.wire.settings import SessionConfigureParams, SessionSetting, SessionSettings

__all__ = ["CREDENTIALS_METHOD", "LOGIN_ARGS", "AcpFrontend", "acp_error"]

log = logging.getLogger("agent_bridge.acp")

_T = TypeVar("_T")

_encode: Final = msgspec.json.encode
#: a ``session/update`` notification around one encoded update: ``head % session id``
#: (encoded), the update, the tail; the bytes ``Connection.notify`` would make of
#: ``{"sessionId": ..., "update": ...}``
_UPDATE_HEAD: Final = (
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%s,"update":'
)
_UPDATE_TAIL: Final = b"}}"

#: ACP code of the bridge's error codes that ACP names; the rest are ``-32603``.
_ACP_CODES: Final = {
    "provider_auth_required": acp.AUTH_REQUIRED,
    "session_not_found": acp.RESOURCE_NOT_FOUND,
    "run_not_found": acp.RESOURCE_NOT_FOUND,
    "provider_not_found": acp.RESOURCE_NOT_FOUND,
    "invalid_params": INVALID_PARAMS,
    "invalid_option": INVALID_PARAMS,
    "workspace_invalid": INVALID_PARAMS,
    "unsupported": INVALID_PARAMS,
}
#: The arguments of ``agent-bridge acp`` that run the provider's own login command
#: (the ``terminal`` authentication method).
LOGIN_ARGS: Final = ("--login",)
#: The ``agent`` authentication method: the provider's existing login, checked by a probe.
CREDENTIALS_METHOD: Final = "provider-credentials"
#: Seconds ``authenticate`` lets a provider's probe take.
PROBE_TIMEOUT: Final = 15.0


def acp_error(error: BridgeError) -> RpcError:
    """The ACP form of a classified error: ACP's code where ACP has one, the
    :class:`ErrorInfo` as ``data``."""
    return RpcError(
        _ACP_CODES.get(error.error_code, INTERNAL_ERROR), error.info.message, error.data
    )


def _translated(handler: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Awaitable[Any]]:
    async def call(params: Any) -> Any:
        try:
            return await handler(params)
        except BridgeError as exc:
            raise acp_error(exc) from None

    return call


#: the longest title taken from a first prompt, in characters
TITLE_CHARS: Final = 80
#: The most of the provider's own sessions ``session/list`` adds (one page, newest first).
NATIVE_LISTED: Final = 50


def prompt_title(text: str) -> str | None:
    """A session title from its first prompt's ``text``: the first line with text, its
    whitespace collapsed, cut at a word within :data:`TITLE_CHARS` (then ending in
    ``…``); ``None`` when there is no text."""
    line = next((" ".join(s.split()) for s in text.splitlines() if s.strip()), "")
    if not line:
        return None
    if len(line) <= TITLE_CHARS:
        return line
    cut = line[: TITLE_CHARS - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > TITLE_CHARS // 2 else cut).rstrip() + "…"


#: how long a turn whose session was closed ``bridge_crashed`` (the fleet member running
#: it died while the run waited on an interaction, and the run was left open for a member
#: that continues it) waits for that member's ``session.resumed`` before the prompt is
#: answered ``session_in_use``: when no live member can run the session, none comes
TAKEOVER_WAIT: Final = 15.0


_CUT_OR_RESUMED: Final = (SessionClosed, SessionResumed)

#: how long a ``session/prompt`` cancelled by ``$/cancel_request`` waits for its
#: interrupted run to end before it is answered ``-32800``
CANCEL_WAIT: Final = 10.0


class _Turn:
    """The one prompt turn in progress of a session."""

    __slots__ = ("cancelled", "cut_at", "done", "run_id", "terminal", "wake")

    def __init__(self) -> None:
        self.run_id: str | None = None
        #: a ``session/cancel`` arrived (possibly before the run started)
        self.cancelled = False
        self.terminal: EventPayload | None = None
        self.done = anyio.Event()
        #: when the session was closed ``bridge_crashed`` and not resumed since
        self.cut_at: float | None = None
        #: set at the terminal event, the crash's ``session.closed`` and ``session.resumed``
        self.wake = anyio.Event()

    async def ended(self) -> None:
        """Return at the run's terminal event, or at once when cancelled while its owner
        is dead (:attr:`terminal` is then ``None``); raises ``session_in_use`` (retryable) when
        the session was closed ``bridge_crashed`` and not resumed within
        :data:`TAKEOVER_WAIT` (a run left open that no member continues: the prompt
        must not wait for ever)."""
        while not self.done.is_set():
            self.wake = anyio.Event()
            if self.cancelled and self.cut_at is not None:
                return  # cancelled with no owner: ends cancelled (interrupted once resumed)
            if self.cut_at is None:
                await self.wake.wait()
                continue
            left = self.cut_at + TAKEOVER_WAIT - anyio.current_time()
            if left <= 0:
                raise BridgeError(
                    "session_in_use",
                    details={
                        "reason": "the fleet member running the session stopped and no "
                        "member has continued its turn: prompt again once it is resumed"
                    },
                )
            with anyio.move_on_after(left):
                await self.wake.wait()


class AcpFrontend:
    """Serves ACP to one client (see module docstring).

    ``provider`` and ``provider_options`` are what ``session/new`` creates sessions with
    (``agent-bridge acp --provider ID --option K=V``); ``owns_runtime``: the client is the
    runtime's only one, so its sessions close when it goes away.
    """

    def __init__(
        self,
        runtime: Runtime,
        receive: ByteReceiver,
        send: ByteSender,
        *,
        provider: str,
        provider_options: dict[str, Any] | None = None,
        limits: Limits = Limits(),  # noqa: B008 - frozen
        owns_runtime: bool = True,
    ) -> None:
        self.runtime = runtime
        self.provider = provider
        self.provider_options = dict(provider_options or {})
        self.owns_runtime = owns_runtime
        self.initialized = False
        self.client_capabilities: dict[str, Any] = {}
        self._mappers: dict[str, UpdateMapper] = {}
        self._turns: dict[str, _Turn] = {}
        #: runs cancelled while the member running them was dead, by session: each is
        #: interrupted when a member resumes the session (``session.resumed``)
        self._cancel_on_resume: dict[str, str] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._replaying: set[str] = set()
        #: sessions that have had a prompt (their provider cannot change any more)
        self._prompted: set[str] = set()
        #: the provider's own sessions ``session/list`` showed: bridge session id -> ref
        self._native: dict[str, str] = {}
        #: sessions another fleet member runs, followed from here (placed there by
        #: ``session/new``, or loaded or resumed while open there)
        self._remote: set[str] = set()
        #: of those, the ones ``session/new`` placed there (they end with the client)
        self._placed: set[str] = set()
        #: what their owner says of them (``session/state``, routed), kept up to date
        #: from their ``settings.updated`` events and the answers to changes made here
        self._views: dict[str, SessionState] = {}
        #: of those, the ones whose options changed since: their owner starts their
        #: provider session again at the next prompt (its model and mode then known)
        self._restarting: set[str] = set()
        self.conn = Connection(
            receive,
            send,
            methods=self._methods(),
            notifications={
                "session/cancel": Method(
                    self._session_cancel, acp.CancelNotification, is_async=True
                )
            },
            framing="newline",
            limits=limits,
            gate=self._gate,
            name="acp-client",
            cancel=ACP_CANCEL,
        )

    # ------------------------------------------------------------------ dispatch

    def _methods(self) -> dict[str, Method]:
        table: dict[str, tuple[Callable[[Any], Awaitable[Any]], Any, bool]] = {
            "authenticate": (self._authenticate, acp.AuthenticateRequest, True),
            "session/new": (self._session_new, acp.NewSessionRequest, True),
            "session/load": (self._session_load, acp.LoadSessionRequest, True),
            "session/resume": (self._session_resume, acp.ResumeSessionRequest, True),
            "session/fork": (self._session_fork, acp.ForkSessionRequest, True),
            "session/list": (self._session_list, acp.ListSessionsRequest, True),
            "session/close": (self._session_close, acp.CloseSessionRequest, True),
            "session/delete": (self._session_delete, acp.DeleteSessionRequest, True),
            "session/prompt": (self._session_prompt, acp.PromptRequest, True),
            "session/set_mode": (self._session_set_mode, acp.SetSessionModeRequest, True),
            "session/set_config_option": (
                self._session_set_config_option,
                acp.SetSessionConfigOptionRequest,
                True,
            ),
        }
        methods = {
            name: Method(_translated(handler), params, is_async=True, cancellable=cancellable)
            for name, (handler, params, cancellable) in table.items()
        }
        # synchronous, so requests written right behind it find the client initialized
        methods["initialize"] = Method(self._initialize, acp.InitializeRequest)
        return methods

    def _gate(self, method: str) -> None:
        if not self.initialized and method != "initialize":
            raise RpcError(INVALID_REQUEST, "initialize first", {"code": "not_initialized"})

    # ------------------------------------------------------------------ subscriber port

    def publish(self, events: Released) -> bool:
        """Send events as ``session/update`` s (from the payload objects the runtime
        gives: live events are not decoded again); return whether the client is
        congested."""
        try:
            decoded = events.events()
        except msgspec.DecodeError:
            log.exception("an event could not be read")
            return self.conn.congested
        session_id = events.session_id
        mapper = self._mappers.get(session_id)
        if mapper is None:
            mapper = self._mappers[session_id] = UpdateMapper()
        replay = session_id in self._replaying
        # One encode per update, no wrapper dict, method name or params copy per event:
        # the notification's head (with the session id) is encoded once per batch and
        # the outbox frames every update of the batch in one join.
        head = _UPDATE_HEAD % _encode(session_id)
        notify = self.conn.notify_encoded
        bodies: list[bytes] = []
        for run_id, payload in decoded:
            bodies += map(_encode, mapper.updates(payload, replay=replay))
            if type(payload) is SettingsUpdated and not replay and session_id in self._views:
                self._settings_seen(session_id, payload)
            if type(payload) is SettingsUpdated and payload.model is not None and not replay:
                if bodies:  # the updates so far go first
                    notify(bodies, head, _UPDATE_TAIL)
                    bodies = []
                self._model_changed(session_id)
            if is_terminal(payload):
                turn = self._turns.get(session_id)
                if turn is not None and turn.run_id in (None, run_id):
                    turn.terminal = payload
                    turn.done.set()
                    turn.wake.set()
            elif type(payload) in _CUT_OR_RESUMED:
                self._cut_or_resumed(session_id, payload)
        if bodies:
            notify(bodies, head, _UPDATE_TAIL)
        return self.conn.congested

    def _cut_or_resumed(self, session_id: str, payload: EventPayload) -> None:
        """Note on the session's turn that its owner died (``session.closed``
        ``bridge_crashed``) or that a member resumed it; a resumed session's run that was
        cancelled while no member ran it is interrupted now."""
        if isinstance(payload, SessionResumed) and session_id in self._cancel_on_resume:
            run_id = self._cancel_on_resume.pop(session_id)
            if self._tg is not None:
                self._tg.start_soon(self._interrupt, run_id)
        turn = self._turns.get(session_id)
        if turn is None:
            return
        if isinstance(payload, SessionResumed):
            turn.cut_at = None
        elif isinstance(payload, SessionClosed) and payload.reason == "bridge_crashed":
            turn.cut_at = anyio.current_time()
        else:
            return
        turn.wake.set()

    @property
    def congested(self) -> bool:
        """Whether the client is behind on reading."""
        return self.conn.congested

    async def drained(self) -> None:
        """Wait until the client has caught up."""
        await self.conn.drained()

    def can_answer(self, kind: str) -> bool:
        """Every kind: questions a client cannot be asked are declined visibly."""
        return True

    @property
    def _booleans(self) -> bool:
        """Whether the client takes ``boolean`` config options."""
        session = acp.obj(self.client_capabilities.get("session"))
        return isinstance(acp.obj(session.get("configOptions")).get("boolean"), dict)

    @property
    def _elicitation(self) -> bool:
        return isinstance(acp.obj(self.client_capabilities.get("elicitation")).get("form"), dict)

    async def ask(self, interaction: Interaction) -> None:
        """Put ``interaction`` to the client and apply its reply; withdraw the request when
        the interaction is settled some other way first (e.g. ``session/cancel``)."""
        plan = asking.plan_for(
            interaction.session_id,
            interaction.interaction_id,
            interaction.request,
            elicitation=self._elicitation,
        )
        if plan.how == "notice":
            update = asking.unanswerable_notice(interaction.request)
            self.conn.notify(
                "session/update", {"sessionId": interaction.session_id, "update": update}
            )
            if interaction.pending:
                interaction.settle("cancelled", auto=True)
            return
        entry = self.conn.open_request(plan.method, plan.params)

        def withdraw(_interaction: Interaction) -> None:
            if self.conn.cancel_request(entry, notify_peer=False) and not self.conn.closed:
                self.conn.notify("$/cancel_request", {"requestId": entry.id})

        interaction.on_settle.append(withdraw)
        try:
            result = await self.conn.wait(entry)
        except RpcError as exc:
            if not self.conn.closed and interaction.pending:
                log.info("interaction %s: client answered %s", interaction.interaction_id, exc.code)
                interaction.settle("cancelled", auto=True)
            return
        if not interaction.pending:
            return
        if plan.how == "permission":
            answer = asking.permission_answer(plan.request, result)
        else:
            answer = asking.elicitation_answer(plan.request, result)
        if answer is None:
            interaction.settle("cancelled", auto=True)
            return
        try:
            interaction.respond(answer)
        except BridgeError as exc:
            log.info(
                "interaction %s: answer rejected (%s)", interaction.interaction_id, exc.error_code
            )
            interaction.settle("cancelled", auto=True)

    # ------------------------------------------------------------------ lifecycle

    def _descriptor(self, provider_id: str) -> ProviderDescriptor:
        return self.runtime.registry.get(provider_id).describe()

    def _initialize(self, params: acp.InitializeRequest) -> dict[str, Any]:
        if self.initialized:
            raise RpcError(INVALID_REQUEST, "already initialized", {"code": "already_initialized"})
        self.initialized = True
        self.client_capabilities = dict(params.client_capabilities)
        info = acp.obj(params.client_info)
        log.info(
            "initialized by ACP client %s %s (protocol %d)",
            loggable(info.get("name")),
            loggable(info.get("version") or ""),
            params.protocol_version,
        )
        descriptor = self._descriptor(self.provider)
        mcp = "mcpConfig" in {o.name for o in descriptor.options}
        auth_methods: list[dict[str, Any]] = [
            {
                "id": CREDENTIALS_METHOD,
                "name": f"Use {descriptor.display_name}'s own login",
                "description": "Checks the provider's existing login or API key.",
            }
        ]
        if acp.obj(self.client_capabilities.get("auth")).get("terminal") is True:
            auth_methods.append(
                {
                    "type": "terminal",
                    "id": "provider-login",
                    "name": f"Log in to {descriptor.display_name}",
                    "description": "Runs the provider's own login command in a terminal.",
                    "args": [*LOGIN_ARGS],
                }
            )
        session_capabilities: dict[str, Any] = {"list": {}, "resume": {}, "close": {}, "delete": {}}
        if descriptor.capabilities.fork.at_end:
            # ACP's unstable session/fork: the whole history, natively (session/fork)
            session_capabilities["fork"] = {}
        return {
            # ours when the client's is unknown (only 1 exists)
            "protocolVersion": acp.PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": prompt_capabilities(descriptor),
                "mcpCapabilities": {"http": mcp, "sse": False},
                "sessionCapabilities": session_capabilities,
            },
            "authMethods": auth_methods,
            "agentInfo": {"name": "agent-bridge", "title": "agent-bridge", "version": __version__},
        }

    async def _authenticate(self, params: acp.AuthenticateRequest) -> dict[str, Any]:
        """``provider-credentials``: probe the provider (bounded); answer ``{}`` unless it
        says it is not logged in or not installed (``provider_auth_required`` /
        ``provider_unavailable``, with the next step).  The terminal method is run by
        the client itself and never passed here."""
        if params.method_id != CREDENTIALS_METHOD:
            raise RpcError(INVALID_PARAMS, "unknown authentication method", {"field": "methodId"})
        provider = self.runtime.registry.get(self.provider)
        try:
            with anyio.fail_after(PROBE_TIMEOUT):
                availability = await provider.probe()
        except TimeoutError:
            log.warning("authenticate: the probe of %s timed out", self.provider)
            return {}
        details = {"provider": self.provider}
        if availability.next_step:
            details["nextStep"] = availability.next_step[:300]
        if availability.status == "unavailable":
            raise BridgeError("provider_unavailable", details=details)
        if availability.authentication == "unauthenticated":
            raise BridgeError("provider_auth_required", details=details)
        return {}

    # ------------------------------------------------------------------ sessions

    def _state(
        self, session_id: str
    ) -> tuple[ProviderDescriptor, dict[str, Any], SessionSettings | None]:
        """The provider's descriptor, the options and the model and mode of a session
        open here, or of one another fleet member runs as its owner last said
        (:attr:`_views`).  Raises ``KeyError`` for any other."""
        remote = self._views.get(session_id)
        if remote is not None:
            return remote.descriptor, remote.options, remote.settings
        session = self.runtime.sessions[session_id]
        provider_session = session.provider_session
        settings = provider_session.model_and_mode() if provider_session is not None else None
        return session.descriptor, self.runtime.session_options(session_id), settings

    def _session_view(self, session_id: str) -> dict[str, Any]:
        """``modes`` and ``configOptions`` of an open session (here, or another fleet
        member's as its owner said: :meth:`_remote_view`)."""
        descriptor, options, _ = self._state(session_id)
        view: dict[str, Any] = {
            "configOptions": config_options(
                descriptor,
                options,
                self._providers(),
                booleans=self._booleans,
                models=self._live_model(session_id),
            ),
        }
        live = self._live_modes(session_id)
        if live is not None:
            # the permission option says the mode now current, as current_mode_update does
            for option in view["configOptions"]:
                if option.get("category") == "mode" and live["currentModeId"] in {
                    choice["value"] for choice in option.get("options", ())
                }:
                    option["currentValue"] = live["currentModeId"]
        modes = live or mode_state(descriptor, options)
        if modes is not None:
            view["modes"] = modes
        return view

    def _live_modes(self, session_id: str) -> dict[str, Any] | None:
        """The ``modes`` the session's provider names itself (``session/settings``), or
        ``None``: then a permission option stands for them (:func:`mode_state`)."""
        return settings_modes(self._state(session_id)[2])

    def _model_changed(self, session_id: str) -> None:
        """Tell the client the session's ``model`` config option after its provider's
        model changed (``settings.updated``: ``session/set_config_option``, a host's
        ``session/configure``, or the provider itself), when the provider's own models
        make that option."""
        if session_id not in self._views and session_id not in self.runtime.sessions:
            return
        if self._live_model(session_id) is None:
            return
        configs = self._session_view(session_id)["configOptions"]
        self._notify(session_id, "config_option_update", configOptions=configs)

    def _live_model(self, session_id: str) -> dict[str, Any] | None:
        """The ``model`` config option the session's provider's own models make
        (``session/settings``), or ``None``: then its ``model`` option stands for it."""
        return settings_model(self._state(session_id)[2])

    def _providers(self) -> list[str]:
        return [p.id for p in self.runtime.registry.all()]

    def _options_for(
        self, provider_id: str, mcp_servers: list[dict[str, Any]] | None
    ) -> dict[str, Any]:
        options = dict(self.provider_options) if provider_id == self.provider else {}
        options.update(mcp_options(self._descriptor(provider_id), mcp_servers or []))
        return options

    async def _session_new(self, params: acp.NewSessionRequest) -> dict[str, Any]:
        """A session of the agent's provider in ``cwd``: on a fleet, on the member
        placement picks (``session/create``'s: this one when it serves the provider in
        ``cwd``, else the least loaded live member that does), followed from here when
        it is another (``docs/fleet.md``); its turns, cancels and permission requests
        then go through the database.  Such a session has no ``modes`` or
        ``configOptions`` here: they are set where it runs."""
        create = SessionCreateParams(
            self.provider,
            workspace=_absolute(params.cwd),
            options=self._options_for(self.provider, params.mcp_servers),
        )
        info = await self.runtime.create_placed(create, self)
        session_id = info.session_id
        if session_id not in self.runtime.sessions:
            self._remote.add(session_id)
            self._placed.add(session_id)
            return {"sessionId": session_id, **await self._remote_view(session_id)}
        await self._commands_after_reply(session_id)
        return {"sessionId": session_id, **self._session_view(session_id)}

    async def _here_or_owner(
        self, method: str, params: Any, here: Callable[[], Awaitable[_T]]
    ) -> _T:
        """``here()``'s result; when it raises because the session is open in another
        fleet member, that member's answer to ``method`` (routed: the runtime's
        :meth:`~agent_bridge.runtime.Runtime.route`, which re-raises the error here
        when no member has it)."""
        try:
            return await here()
        except BridgeError as exc:
            result: _T = await self.runtime.route(method, params, exc)
            return result

    async def _owner(self, method: str, params: Any) -> Any:
        """The answer of the fleet member that runs the session to ``method`` (routed;
        ``session_in_use`` when no live member has it open)."""
        return await self.runtime.route(
            method,
            params,
            BridgeError(
                "session_in_use", details={"reason": "the session runs on another fleet member"}
            ),
        )

    async def _remote_view(self, session_id: str) -> dict[str, Any]:
        """``modes`` and ``configOptions`` of a session another fleet member runs, from
        what its owner says of it (``session/state``: its provider's descriptor, its
        options, its model and mode), which is kept (:attr:`_views`); its commands are
        sent right after the reply, as for a session here.  ``{}`` when the owner
        cannot say now (logged)."""
        try:
            state: SessionState = await self._owner("session/state", SessionRef(session_id))
        except BridgeError as exc:
            log.warning("session %s: its owner's settings not read (%s)", session_id, exc)
            self._views.pop(session_id, None)
            return {}
        self._views[session_id] = state
        self._send_commands(session_id, state.commands)
        return self._session_view(session_id)

    async def _view_of(self, session_id: str) -> SessionState:
        """What the owner of a session another fleet member runs says of it (kept, else
        asked now).  Raises what routing it raises."""
        state = self._views.get(session_id)
        if state is None:
            state = self._views[session_id] = await self._owner(
                "session/state", SessionRef(session_id)
            )
        return state

    def _settings_seen(self, session_id: str, payload: SettingsUpdated) -> None:
        """Keep a remote session's model and mode as its ``settings.updated`` says."""
        state = self._views[session_id]
        settings = state.settings or SessionSettings()
        model, mode = settings.model, settings.mode
        if payload.model is not None:
            model = msgspec.structs.replace(model or SessionSetting(), current=payload.model)
        if payload.mode is not None:
            mode = msgspec.structs.replace(mode or SessionSetting(), current=payload.mode)
        self._views[session_id] = msgspec.structs.replace(
            state, settings=SessionSettings(model, mode)
        )

    async def _commands_after_reply(self, session_id: str) -> None:
        """Send the session's current commands as an ``available_commands_update`` right
        after the reply of the request that opened it (ACP: a notification after the
        response), when its provider has named them; a list that changes later reaches
        the client as the ``commands.updated`` events of its runs."""
        try:
            listed = await self.runtime.session_commands(session_id)
        except BridgeError as exc:
            log.info("session %s: commands not read (%s)", session_id, exc.error_code)
            return
        self._send_commands(session_id, listed)

    def _send_commands(self, session_id: str, listed: SessionCommandsResult) -> None:
        """An ``available_commands_update`` of ``listed`` after the reply (when known)."""
        if not listed.known:
            return
        update = {
            "sessionUpdate": "available_commands_update",
            "availableCommands": [available_command(c) for c in listed.commands],
        }
        params = {"sessionId": session_id, "update": update}

        def send() -> None:
            self.conn.notify("session/update", params)

        self.conn.after_reply(send)

    async def _reopen(
        self, session_id: str, cwd: str, mcp: list[dict[str, Any]] | None, *, replay: bool
    ) -> dict[str, Any]:
        self._prompted.add(session_id)
        self._mappers[session_id] = UpdateMapper()
        if replay:
            self._replaying.add(session_id)
        try:
            try:
                await self.runtime.reopen_session(
                    session_id,
                    after=0 if replay else None,
                    workspace=_absolute(cwd),
                    subscriber=self,
                )
            except BridgeError as exc:
                # open on another fleet member: followed from here, its turns routed
                if exc.error_code != "session_in_use" or not await self.runtime.follow_elsewhere(
                    session_id, self, 0 if replay else None
                ):
                    raise
                self._remote.add(session_id)
                await self.conn.drained()
                return await self._remote_view(session_id)
        except BridgeError:
            self._forget_unknown(session_id)
            raise
        finally:
            self._replaying.discard(session_id)
        await self.conn.drained()
        await self._commands_after_reply(session_id)
        return self._session_view(session_id)

    def _forget_unknown(self, session_id: str) -> None:
        """Drop what a request noted of ``session_id`` when it is neither open here nor
        followed from here (an unknown or deleted id; a load that failed): what is kept
        by session id stays bounded by the sessions there are, whatever ids a client
        sends."""
        if session_id not in self.runtime.sessions and session_id not in self._remote:
            self._prompted.discard(session_id)
            self._mappers.pop(session_id, None)

    async def _session_load(self, params: acp.LoadSessionRequest) -> dict[str, Any]:
        await self._continue_listed(params.session_id, params.cwd, params.mcp_servers)
        return await self._reopen(params.session_id, params.cwd, params.mcp_servers, replay=True)

    async def _session_resume(self, params: acp.ResumeSessionRequest) -> dict[str, Any]:
        await self._continue_listed(params.session_id, params.cwd, params.mcp_servers)
        return await self._reopen(params.session_id, params.cwd, params.mcp_servers, replay=False)

    async def _continue_listed(
        self, session_id: str, cwd: str, mcp_servers: list[dict[str, Any]] | None
    ) -> None:
        """A provider's own session this connection listed (by the id its bridge session
        gets) is continued first (bound, its earlier turns imported), so loading it
        replays them and its next prompt goes on in the provider's conversation; with the
        options a new session gets (``--option``, the request's MCP servers)."""
        ref = self._native.get(session_id)
        if ref is None or session_id in self.runtime.sessions:
            return
        if await self.runtime.history.load_session(session_id) is not None:
            return
        await self.runtime.continue_native(
            self.provider,
            ref,
            workspace=_absolute(cwd),
            options=self._options_for(self.provider, mcp_servers),
        )

    async def _session_fork(self, params: acp.ForkSessionRequest) -> dict[str, Any]:
        """ACP's unstable ``session/fork``: the bridge's ``session/fork`` at the end of the
        session's history, natively on its provider (its working directory and options
        are the original's; ``cwd`` must be an absolute path).  A provider that cannot
        fork answers -32602 naming ``unsupported``."""
        _absolute(params.cwd)
        info = (await self.runtime.fork_session(params.session_id, subscriber=self)).session
        await self._commands_after_reply(info.session_id)
        return {"sessionId": info.session_id, **self._session_view(info.session_id)}

    async def _session_list(self, params: acp.ListSessionsRequest) -> dict[str, Any]:
        sessions, cursor = await self.runtime.list_sessions(
            None, 50, workspace=params.cwd, cursor=params.cursor
        )
        out: list[dict[str, Any]] = []
        for info in sessions:
            item: dict[str, Any] = {
                "sessionId": info.session_id,
                "cwd": info.workspace or params.cwd or os.getcwd(),
            }
            if info.title:
                item["title"] = info.title
            if info.updated_at or info.created_at:
                item["updatedAt"] = info.updated_at or info.created_at
            out.append(item)
        if cursor is None and params.cwd is not None:
            out.extend(await self._native_entries(params.cwd))
        result: dict[str, Any] = {"sessions": out}
        if cursor is not None:
            result["nextCursor"] = cursor
        return result

    async def _native_entries(self, cwd: str) -> list[dict[str, Any]]:
        """After the last page of the bridge's sessions: the provider's own sessions of
        ``cwd`` that no bridge session continues yet (at most :data:`NATIVE_LISTED`,
        newest first), each under the id continuing it will give its bridge session.
        Nothing when the provider cannot list or continue them, or its store cannot be
        read now (the bridge's sessions are still listed)."""
        provider = self.runtime.registry.get(self.provider)
        native = provider.describe().capabilities.native_sessions
        if native.list != "supported" or native.continue_ != "supported":
            return []
        try:
            page = await provider.list_native_sessions(cwd, None, NATIVE_LISTED)
            refs = [entry.session_ref for entry in page.sessions]
            bound = await self.runtime.bound_sessions(self.provider, refs)
        except BridgeError:
            log.warning("session/list: the provider's own sessions cannot be listed now")
            return []
        out: list[dict[str, Any]] = []
        for entry in page.sessions:
            if entry.session_ref in bound:
                continue  # listed as the bridge session that continues it
            session_id = native_session_id(self.provider, entry.session_ref)
            self._native[session_id] = entry.session_ref
            item: dict[str, Any] = {"sessionId": session_id, "cwd": entry.workspace or cwd}
            if entry.title:
                item["title"] = entry.title
            if entry.updated_at:
                item["updatedAt"] = entry.updated_at
            out.append(item)
        return out

    async def _session_close(self, params: acp.CloseSessionRequest) -> dict[str, Any]:
        session_id = params.session_id
        await self._here_or_owner(
            "session/close", SessionRef(session_id), lambda: self.runtime.close_session(session_id)
        )
        self._remote.discard(session_id)
        self._placed.discard(session_id)
        self._views.pop(session_id, None)
        self._restarting.discard(session_id)
        return {}

    async def _session_delete(self, params: acp.DeleteSessionRequest) -> dict[str, Any]:
        """Close the session if it is open (its turn, if any, ends cancelled) and delete
        it from the journal: it is no longer listed, loaded or resumed."""
        session_id = params.session_id
        await self.runtime.delete_session(session_id)
        self._mappers.pop(session_id, None)
        self._prompted.discard(session_id)
        return {}

    # ------------------------------------------------------------------ prompt turns

    async def _session_prompt(self, params: acp.PromptRequest) -> dict[str, Any]:
        session_id = params.session_id
        if session_id in self._turns:
            raise BridgeError("run_active")
        turn = self._turns[session_id] = _Turn()
        self._prompted.add(session_id)
        try:
            session = self.runtime.sessions.get(session_id)
            remote = self._views.get(session_id)
            kinds: tuple[InputKind, ...] = ("text",)
            offered = None
            if session is not None:
                kinds = session.descriptor.capabilities.input.kinds
                if session.provider_session is not None:
                    offered = session.provider_session.commands()
            elif remote is not None:  # another fleet member's, as its owner said
                kinds = remote.descriptor.capabilities.input.kinds
                offered = remote.commands.commands
            input = run_input(params.prompt, kinds, {c.name for c in offered or ()})
            await self._title_from(session_id, params.prompt, input)
            started = await self._start_turn(session_id, input)
            turn.run_id = started.run_id
            if turn.cancelled:  # cancelled while the run was starting
                await self._interrupt(started.run_id)
            try:
                await turn.ended()
            except anyio.get_cancelled_exc_class():
                # the request itself was cancelled ($/cancel_request): its run is
                # interrupted, not left going with no turn (a next prompt: run_active),
                # and its end awaited, so that it is not taken for the next turn's
                if turn.terminal is None:
                    with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_WAIT):
                        await self._interrupt(started.run_id)
                        await turn.done.wait()
                raise
            if turn.terminal is None:
                # cancelled while its owner was dead: interrupted once a member resumes it
                self._cancel_on_resume[session_id] = started.run_id
            if session_id in self._restarting:
                await self._restarted(session_id)
        finally:
            del self._turns[session_id]
            self._forget_unknown(session_id)
        terminal = turn.terminal
        if isinstance(terminal, RunFailed):
            error = terminal.error
            raise RpcError(
                _ACP_CODES.get(error.code, INTERNAL_ERROR),
                error.message,
                msgspec.to_builtins(error),
            )
        if terminal is None:  # cancelled while its owner was dead (see _Turn.ended)
            return {"stopReason": "cancelled"}
        return {"stopReason": stop_reason(terminal)}  # type: ignore[arg-type]

    async def _start_turn(self, session_id: str, input: RunInput) -> RunStartResult:
        """Start the turn's run, here or (routed) on the member that runs the session.
        A routed start carries a ``commandId``: when its member dies before its answer
        reaches here (``session_in_use``), it is sent again until a member that took the
        session over answers it (the same run, ``duplicate``), for up to
        :data:`TAKEOVER_WAIT`; the run it started is not lost to the prompt."""
        remote = session_id in self._remote
        command = f"acp-{os.urandom(12).hex()}" if remote else None
        start = RunStartParams(session_id, input, command_id=command)
        deadline: float | None = None
        while True:
            try:
                started: RunStartResult = await self._here_or_owner(
                    "run/start", start, lambda: self.runtime.start_run(start)
                )
                return started
            except BridgeError as exc:
                if not remote or exc.error_code != "session_in_use":
                    raise
                now = anyio.current_time()
                deadline = now + TAKEOVER_WAIT if deadline is None else deadline
                if now >= deadline:
                    raise
            await anyio.sleep(0.5)

    async def _session_cancel(self, params: acp.CancelNotification) -> None:
        """Interrupt the session's turn; a turn whose run has not started yet keeps the
        cancel and interrupts its run once started (see the module docstring)."""
        turn = self._turns.get(params.session_id)
        if turn is not None:
            turn.cancelled = True
        if turn is None or turn.run_id is None:
            session = self.runtime.sessions.get(params.session_id)
            run_ids = list(session.active_runs) if session is not None else []
        else:
            run_ids = [turn.run_id]
        for run_id in run_ids:
            await self._interrupt(run_id)
        if turn is not None:
            turn.wake.set()  # its owner dead, none continuing it: the turn ends cancelled

    async def _interrupt(self, run_id: str) -> None:
        """Interrupt the run here, or where it runs (another fleet member's)."""

        async def here() -> RunInterruptResult:
            return self.runtime.interrupt_run(run_id, "user")

        try:
            await self._here_or_owner("run/interrupt", RunInterruptParams(run_id), here)
        except BridgeError as exc:
            log.info("session/cancel: run %s not interrupted (%s)", run_id, exc.error_code)

    # ------------------------------------------------------------------ configuration

    async def _session_set_config_option(
        self, params: acp.SetSessionConfigOptionRequest
    ) -> dict[str, Any]:
        session_id = params.session_id
        if session_id in self._remote:
            return await self._set_remote_option(params)
        session = self.runtime.sessions.get(session_id)
        if session is None or session.state != "active":
            raise BridgeError("session_not_found")
        if params.config_id == PROVIDER_CONFIG_ID:
            await self._switch_provider(session_id, params.value)
        elif params.config_id == "model" and self._live_model(session_id) is not None:
            if not isinstance(params.value, str):
                raise BridgeError(
                    "invalid_params", details={"field": "value", "reason": "a model id"}
                )
            # live: the provider switches now (the client gets config_option_update)
            await self.runtime.configure_session(
                SessionConfigureParams(session_id, model=params.value)
            )
        else:
            options = apply_choice(
                session.descriptor,
                self.runtime.session_options(session_id),
                params.config_id,
                params.value,
                booleans=self._booleans,
            )
            await self.runtime.reconfigure_session(session_id, options)
            mode = mode_option(session.descriptor)
            if mode is not None and mode.name == params.config_id:
                view = mode_state(session.descriptor, options)
                if view is not None:
                    self._notify(
                        session_id, "current_mode_update", currentModeId=view["currentModeId"]
                    )
        return {"configOptions": self._session_view(session_id)["configOptions"]}

    async def _session_set_mode(self, params: acp.SetSessionModeRequest) -> dict[str, Any]:
        """A mode the provider names itself is switched live (``session/configure``: the
        client then gets ``current_mode_update`` from its ``settings.updated``); else the
        provider's permission option is set (the session restarts with it at the next
        prompt)."""
        if params.session_id in self._remote:
            await self._set_remote_mode(params)
            return {}
        session = self.runtime.sessions.get(params.session_id)
        if session is None or session.state != "active":
            raise BridgeError("session_not_found")
        if self._live_modes(params.session_id) is not None:
            configure = SessionConfigureParams(params.session_id, mode=params.mode_id)
            await self.runtime.configure_session(configure)
            return {}
        mode = mode_option(session.descriptor)
        if mode is None:
            raise BridgeError("invalid_params", details={"field": "modeId"})
        options = apply_choice(
            session.descriptor,
            self.runtime.session_options(params.session_id),
            mode.name,
            params.mode_id,
        )
        await self.runtime.reconfigure_session(params.session_id, options)
        configs = self._session_view(params.session_id)["configOptions"]
        self._notify(params.session_id, "config_option_update", configOptions=configs)
        return {}

    async def _set_remote_option(self, params: acp.SetSessionConfigOptionRequest) -> dict[str, Any]:
        """``session/set_config_option`` of a session another fleet member runs: as for a
        session here, each change made by its owner (``session/configure`` for a model
        its provider names, ``session/reconfigure`` for a session option), once; its
        provider cannot change there (``invalid_params``)."""
        session_id = params.session_id
        state = await self._view_of(session_id)
        if params.config_id == PROVIDER_CONFIG_ID:
            if params.value != state.descriptor.id:
                await self._switch_remote_provider(session_id, params.value, state)
        elif params.config_id == "model" and settings_model(state.settings) is not None:
            if not isinstance(params.value, str):
                raise BridgeError(
                    "invalid_params", details={"field": "value", "reason": "a model id"}
                )
            configure = SessionConfigureParams(session_id, model=params.value)
            settings: SessionSettings = await self._owner("session/configure", configure)
            # (its settings.updated brings the client config_option_update)
            self._views[session_id] = msgspec.structs.replace(
                self._views.get(session_id, state), settings=settings
            )
        else:
            options = apply_choice(
                state.descriptor,
                state.options,
                params.config_id,
                params.value,
                booleans=self._booleans,
            )
            state = await self._reconfigure_remote(session_id, state, options)
            mode = mode_option(state.descriptor)
            if mode is not None and mode.name == params.config_id:
                view = mode_state(state.descriptor, state.options)
                if view is not None:
                    self._notify(
                        session_id, "current_mode_update", currentModeId=view["currentModeId"]
                    )
        if session_id not in self._views and session_id not in self.runtime.sessions:
            return {"configOptions": []}  # switched, and its new owner cannot say now
        return {"configOptions": self._session_view(session_id)["configOptions"]}

    def _check_switch(self, session_id: str, value: Any) -> None:
        """Raises ``invalid_params`` unless ``value`` names a provider this bridge has and
        the session has had no prompt yet (a provider changes only before the first)."""
        if not isinstance(value, str) or value not in self._providers():
            raise BridgeError("invalid_params", details={"field": "value"})
        if session_id in self._prompted:
            raise BridgeError(
                "invalid_params",
                details={
                    "field": "configId",
                    "reason": "the provider can change only before the first prompt",
                },
            )

    async def _switch_remote_provider(
        self, session_id: str, value: Any, state: SessionState
    ) -> None:
        """A session another fleet member runs, before its first prompt, goes to the
        provider ``value`` as one here does (deleted and created again under its id), on
        the member placement picks for that provider in its workspace: closed by its
        owner, deleted, created there (``session/recreate``) or here, and followed from
        here again when it is elsewhere.  When no member can open it on ``value``, it
        is created again, placed the same way, on the provider and with the options its
        owner said it had (``state``), and the error raised."""
        self._check_switch(session_id, value)
        workspace = (await self.runtime.stored(session_id)).workspace
        await self._owner("session/close", SessionRef(session_id))
        self.runtime.unfollow(session_id, self)
        self._remote.discard(session_id)
        self._placed.discard(session_id)
        self._views.pop(session_id, None)
        self._restarting.discard(session_id)
        await self.runtime.delete_session(session_id)
        create = SessionCreateParams(
            value, workspace=workspace, options=self._options_for(value, None)
        )
        try:
            await self.runtime.create_placed(create, self, session_id)
        except BridgeError as exc:
            log.info("session %s: not switched to %s (%s)", session_id, value, exc.error_code)
            had = state.descriptor.id
            options = {**self._options_for(had, None), **state.options}
            again = SessionCreateParams(had, workspace=workspace, options=options)
            with anyio.CancelScope(shield=True):
                try:
                    await self.runtime.create_placed(again, self, session_id)
                except BridgeError as lost:
                    log.warning(
                        "session %s: not reopened on %s after a refused switch (%s)",
                        session_id,
                        had,
                        lost.error_code,
                    )
                    raise exc from None
                await self._follow_placed(session_id)
            raise
        await self._follow_placed(session_id)

    async def _follow_placed(self, session_id: str) -> None:
        """Follow a session just created under ``session_id`` when placement put it on
        another fleet member (its view read from its owner)."""
        if session_id not in self.runtime.sessions:
            self._remote.add(session_id)
            self._placed.add(session_id)
            await self._remote_view(session_id)

    async def _set_remote_mode(self, params: acp.SetSessionModeRequest) -> None:
        """``session/set_mode`` of a session another fleet member runs: its provider's own
        modes switched by its owner (``session/configure``: the client then gets
        ``current_mode_update`` from its ``settings.updated``), else its permission
        option (``session/reconfigure``)."""
        session_id = params.session_id
        state = await self._view_of(session_id)
        if settings_modes(state.settings) is not None:
            configure = SessionConfigureParams(session_id, mode=params.mode_id)
            settings: SessionSettings = await self._owner("session/configure", configure)
            self._views[session_id] = msgspec.structs.replace(
                self._views.get(session_id, state), settings=settings
            )
            return
        mode = mode_option(state.descriptor)
        if mode is None:
            raise BridgeError("invalid_params", details={"field": "modeId"})
        options = apply_choice(state.descriptor, state.options, mode.name, params.mode_id)
        await self._reconfigure_remote(session_id, state, options)
        configs = self._session_view(session_id)["configOptions"]
        self._notify(session_id, "config_option_update", configOptions=configs)

    async def _reconfigure_remote(
        self, session_id: str, state: SessionState, options: dict[str, Any]
    ) -> SessionState:
        """Have the owner give the session ``options``: only what differs from ``state``
        (what the journal keeps of them) travels, so options withheld from the journal
        keep their values there; keep and return what the owner answers."""
        before = state.options
        changed = {k: v for k, v in options.items() if k not in before or before[k] != v}
        dropped = tuple(k for k in before if k not in options)
        if not changed and not dropped:
            return state
        request = SessionReconfigure(session_id, changed, dropped)
        after: SessionState = await self._owner("session/reconfigure", request)
        self._views[session_id] = after
        self._restarting.add(session_id)
        return after

    async def _restarted(self, session_id: str) -> None:
        """After the first prompt since its options changed, read again what the owner
        says of a session another fleet member runs (its provider session started again
        with them: its model, mode and commands); kept as it was when it cannot say."""
        self._restarting.discard(session_id)
        try:
            self._views[session_id] = await self._owner("session/state", SessionRef(session_id))
        except BridgeError as exc:
            log.info("session %s: its owner's settings not read (%s)", session_id, exc)

    async def _switch_provider(self, session_id: str, value: Any) -> None:
        """Delete the session and create it again under its id on the provider
        ``value``; when that provider cannot open it (not installed, not logged in, an
        option it refuses), the session is created again on the provider it had, with
        the options it had, and the error raised: a refused switch leaves the client's
        session usable, never deleted."""
        session = self.runtime.sessions[session_id]
        if value == session.provider.id:
            return
        self._check_switch(session_id, value)
        workspace = session.workspace
        had = session.provider.id, self.runtime.session_options(session_id)
        await self.runtime.delete_session(session_id)
        try:
            await self.runtime.create_session(
                value,
                workspace=workspace,
                options=self._options_for(value, None),
                subscriber=self,
                session_id=session_id,
            )
        except BridgeError as exc:
            log.info("session %s: not switched to %s (%s)", session_id, value, exc.error_code)
            with anyio.CancelScope(shield=True):
                await self._restore(session_id, had, workspace)
            raise

    async def _restore(
        self, session_id: str, had: tuple[str, dict[str, Any]], workspace: str | None
    ) -> None:
        """Create a session again on the provider and with the options it ``had`` after a
        switch its new provider refused (logged when even that fails: the client then
        gets ``session_not_found`` for it, as for any session gone)."""
        provider, options = had
        try:
            await self.runtime.create_session(
                provider,
                workspace=workspace,
                options=options,
                subscriber=self,
                session_id=session_id,
            )
        except BridgeError as exc:
            log.warning(
                "session %s: not reopened on %s after a refused switch (%s)",
                session_id,
                provider,
                exc.error_code,
            )

    async def _title_from(self, session_id: str, prompt: acp.Prompt, input: RunInput) -> None:
        """Title an untitled session after the text blocks of its first prompt (ACP's
        ``session/new`` has no title; ``session/list`` shows it, in every bridge on the
        journal) and tell the client with a ``session_info_update``; one another fleet
        member runs is titled by its owner (``session/retitle``, when it has no title
        there either).  The title comes before the turn's updates, so before its run
        starts: a prompt with blocks is first checked as ``run/start`` checks them (paths,
        images; raises what that raises), so a prompt refused there titles nothing."""
        if session_id in self._remote:
            await self._title_remote(session_id, prompt)
            return
        session = self.runtime.sessions.get(session_id)
        if session is None or session.state != "active" or session.title is not None:
            return
        title = prompt_title("\n".join(prompt_texts(prompt)))
        if title is None:
            return
        if input.content:
            await prepare(
                input, session.input_capabilities(), session.workspace, session.command_names()
            )
        self.runtime.retitle_session(session_id, title)
        self._notify(session_id, "session_info_update", title=title)

    async def _title_remote(self, session_id: str, prompt: acp.Prompt) -> None:
        state = self._views.get(session_id)
        if state is not None and state.title is not None:
            return
        title = prompt_title("\n".join(prompt_texts(prompt)))
        if title is None:
            return
        try:
            given = await self._owner("session/retitle", SessionRetitle(session_id, title))
        except BridgeError as exc:
            log.info("session %s: not titled (%s)", session_id, exc.error_code)
            return
        if state is not None:
            self._views[session_id] = msgspec.structs.replace(
                self._views.get(session_id, state), title=given.title or state.title or title
            )
        if given.title is not None:
            self._notify(session_id, "session_info_update", title=given.title)

    def _notify(self, session_id: str, kind: str, **fields: Any) -> None:
        update = {"sessionUpdate": kind, **fields}
        self.conn.notify("session/update", {"sessionId": session_id, "update": update})

    # ------------------------------------------------------------------ serving

    async def serve(self) -> None:
        """Serve until the client's EOF or a write failure; then detach it from the
        runtime and return (``agent-bridge acp`` then shuts the runtime down)."""
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                await self.conn.run()
                tg.cancel_scope.cancel()
        finally:
            self._tg = None
            self.runtime.detach(self)
            if self.owns_runtime:
                await self._close_remote()

    async def _close_remote(self) -> None:
        """The sessions ``session/new`` placed on other fleet members for this client end
        with it, as its sessions here do when ``agent-bridge acp`` exits (each close
        routed to its member; one that cannot be closed now is logged).  Sessions it
        only loaded or resumed there go on (another host runs them)."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(10):
            for session_id in sorted(self._placed):
                try:
                    await self.runtime.route(
                        "session/close", SessionRef(session_id), BridgeError("session_in_use")
                    )
                except BridgeError as exc:
                    log.warning("session %s: not closed (%s)", session_id, exc.error_code)


def _absolute(cwd: str) -> str:
    """``cwd`` if it is absolute; raises ``invalid_params`` otherwise (ACP requires it)."""
    if not os.path.isabs(cwd):
        raise BridgeError("invalid_params", details={"field": "cwd"})
    return cwd
