"""One ACP session: a resident agent process and one ACP session in it.

The agent speaks JSON-RPC 2.0, one object a line.  The adapter drives it as the kit's
:class:`~agent_bridge.adapters.kit.rpc_child.RpcChild` (the project's own
:class:`~agent_bridge.rpc.connection.Connection` over a resident child): the requests it sends
(``initialize``, ``authenticate``, ``session/new``/``load``/``resume``, ``session/prompt``,
``session/set_mode``) are in the request-ID ledger and all fail at once at EOF; the
agent's callbacks that the session enabled are served, every other one is answered
``-32601`` by the connection (so an agent that calls an unadvertised method learns it at
once).  ``session/update`` notifications become events through
:func:`~agent_bridge.adapters.acp.mapping.update_payloads`, each with its ACP record kept
as the raw record; updates while a ``session/load`` replays history are not re-emitted.

A run is one ``session/prompt``; interrupt sends ``session/cancel`` (and every pending
permission request is answered ``cancelled``, as ACP requires); the run ends when the
prompt returns, ``interrupted`` for ``stopReason: cancelled``.  The runtime bounds the
wait by its grace.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import anyio
import msgspec

from agent_bridge import __version__ as BRIDGE_VERSION
from agent_bridge.adapters.acp import mapping
from agent_bridge.adapters.acp import protocol as p
from agent_bridge.adapters.acp.callbacks import Callbacks
from agent_bridge.adapters.acp.launch import AgentSpec, Hints
from agent_bridge.adapters.acp.profiles import BY_KEY, effective_hints, profile_for
from agent_bridge.adapters.kit.resident import StopGraces
from agent_bridge.adapters.kit.rpc_child import (
    RpcChild,
    RpcChildSpec,
    open_rpc_child,
    prose,
    start_rpc_child,
)
from agent_bridge.adapters.kit.runs import RunHandle, check_can_start, end_quietly
from agent_bridge.adapters.kit.tasks import TaskSupervisor
from agent_bridge.errors import BridgeError, ProviderFailure
from agent_bridge.rpc.connection import Method
from agent_bridge.rpc.errors import RpcError
from agent_bridge.rpc.messages import loggable
from agent_bridge.spi import (
    InteractionHandle,
    ProviderRun,
    ProviderSession,
    RunContext,
    RunOutcome,
    SessionContext,
)
from agent_bridge.wire.events import (
    Diagnostic,
    EventPayload,
    ProviderPayload,
    RunStarted,
    SettingsUpdated,
)
from agent_bridge.wire.inputs import CommandInfo
from agent_bridge.wire.methods import RunInput
from agent_bridge.wire.providers import InputCapabilities
from agent_bridge.wire.settings import SessionSetting, SessionSettings

if TYPE_CHECKING:
    from agent_bridge.adapters.acp.provider import AcpProvider

__all__ = ["AcpRun", "AcpSession", "Settings"]

log = logging.getLogger("agent_bridge.acp")

STARTUP_TIMEOUT: Final = 60.0
REQUEST_TIMEOUT: Final = 60.0
EXIT_DRAIN_GRACE: Final = 0.5
STOP_GRACES: Final = StopGraces(eof=1.0, term=1.5, kill=3.0)


@dataclass(slots=True)
class Settings:
    """Everything needed to start the agent and open its session."""

    spec: AgentSpec
    executable: str
    argv: tuple[str, ...]
    cwd: str
    env: dict[str, str]
    workspace: str | None
    fs: bool = False
    terminal: bool = False
    elicitation: bool = True
    auth_method: str | None = None
    mcp_servers: list[Any] = field(default_factory=list)
    mode: str | None = None
    #: ``model`` / ``thoughtLevel`` options → the values to set.
    config: dict[str, str] = field(default_factory=dict)
    acp_session_id: str | None = None
    #: Continuing the agent's own session (``provider/sessions/continue``): load it with
    #: ``session/load`` where the agent can, and keep what it replays for the import.
    replay_history: bool = False


#: The most replayed payloads kept for the import of a continued session (older ones are
#: dropped, and the import says so).
MAX_REPLAYED: Final = 10_000


class AcpRun(RunHandle):
    """One ``session/prompt``."""

    def __init__(self, session: AcpSession, ctx: RunContext) -> None:
        super().__init__()
        self._session = session
        self.ctx = ctx
        self.state = mapping.TurnState()
        self.pending: set[InteractionHandle] = set()
        self.interrupt_wanted = False
        self.cancel_sent = False
        #: ``session/update`` notifications attributed to this run so far
        self.updates = 0

    async def interrupt(self, reason: str) -> None:
        self.interrupt_wanted = True
        self._session.send_cancel(self)

    def emit(self, payload: ProviderPayload, raw: Any = None) -> None:
        if self.finished:
            return
        try:
            self.ctx.emit_nowait(payload, raw=raw)
        except Exception:
            log.exception("acp: emit failed")

    def finish(self, outcome: RunOutcome, *, emit: bool = True) -> bool:
        if self.finished:
            return False
        if emit:
            for payload in mapping.open_tools_failed(self.state):
                self.emit(payload)
        super().finish(outcome)
        self._session.run_finished(self)
        return True


class AcpSession(ProviderSession):
    """A resident ACP agent and one session in it."""

    def __init__(self, ctx: SessionContext, settings: Settings, provider: AcpProvider) -> None:
        self._ctx = ctx
        self.settings = settings
        self._provider = provider
        self._label = f"acp agent {settings.spec.id}"
        self._tasks = TaskSupervisor(
            ctx.task_group,
            log,
            owner=f"acp session ({settings.spec.id})",
            on_failure=self._task_failed,
        )
        self._proc: RpcChild | None = None
        self._run: AcpRun | None = None
        self._disposed = False
        self._loading = False
        #: a session/new or session/fork is in flight (updates name an id not known yet)
        self._opening = False
        #: what a session/load of a continued session replayed (payload, record), newest
        #: MAX_REPLAYED, and whether older ones were dropped
        self._replayed: deque[tuple[EventPayload, bytes]] | None = None
        self._replay_dropped = False
        self._replay_state = mapping.TurnState()
        #: The last run was cancelled and the agent must be restarted before the next
        #: (hint ``restart_after_cancel``).
        self._restart = False
        #: The last run was cancelled: the next prompt's answer is checked before it is
        #: taken as that run's (:func:`mapping.answers_a_cancelled_turn`).
        self._after_cancel = False
        self.info: p.AgentInfo | None = None
        #: the agent's commands (its last ``available_commands_update``)
        self._commands: tuple[CommandInfo, ...] | None = None
        #: the session's mode and model as the agent offered them (``session/settings``),
        #: and the config option that sets the model (``None``: ``session/set_model``)
        self._mode: SessionSetting | None = None
        self._model: SessionSetting | None = None
        self._model_option: str | None = None
        #: The entry's hints completed by the agent's profile (known once the agent has
        #: answered ``initialize``; until then the profile a built-in expects).
        self.hints: Hints = effective_hints(
            settings.spec.hints, BY_KEY.get(settings.spec.profile or "")
        )
        self.callbacks = Callbacks(
            workspace=settings.workspace,
            session_id=lambda: self.settings.acp_session_id,
            task_group=ctx.task_group,
            log=log,
        )

    # ------------------------------------------------------------------ lifecycle

    def _methods(self) -> dict[str, Method]:
        s = self.settings
        methods: dict[str, Method] = {
            "session/request_permission": Method(self._on_permission, msgspec.Raw, is_async=True),
        }
        if s.elicitation:
            methods["elicitation/create"] = Method(self._on_elicitation, msgspec.Raw, is_async=True)
        if s.fs:
            methods.update(self.callbacks.fs_methods())
        if s.terminal:
            methods.update(self.callbacks.terminal_methods())
        return methods

    async def open(self, *, resume: bool, fork: bool = False) -> None:
        """Start the agent, initialize, authenticate if asked, and open (or continue) the
        session.  Raises classified errors; the agent is stopped first."""
        await open_rpc_child(self._spawn, self._forget, self._handshake, resume=resume, fork=fork)

    async def _spawn(self) -> RpcChild:
        s = self.settings
        spec = RpcChildSpec(
            s.argv,
            s.cwd,
            s.env,
            label=self._label,
            name=s.spec.id,
            missing=s.spec.argv[0],
            option="args",
            jsonrpc=True,
            graces=STOP_GRACES,
            drain_grace=EXIT_DRAIN_GRACE,
        )
        proc = await start_rpc_child(
            spec,
            self._ctx.task_group,
            self._tasks,
            log=log,
            methods=self._methods(),
            notifications={"session/update": Method(self._on_update, msgspec.Raw)},
            serve=self._serve,
        )
        self._proc = proc
        return proc

    def _forget(self) -> None:
        """Drop the agent that failed to open (it is stopped already)."""
        self._proc = None

    async def _serve(self, proc: RpcChild) -> None:
        try:
            await proc.serve()
        finally:
            run = self._run
            if not self._disposed and not proc.resident.stopping:
                proc.resident.log_exit("unexpectedly")
                if run is not None:
                    run.finish(RunOutcome.failed("provider_crashed", "the agent exited"))

    def _task_failed(self, code: Any, detail: str) -> None:
        run = self._run
        if run is not None:
            run.finish(RunOutcome.failed(code, detail))

    async def _call(self, proc: RpcChild, method: str, params: Any, timeout: float) -> Any:
        try:
            return await proc.call(method, params, timeout=timeout)
        except RpcError as exc:
            raise await self._failure(proc, exc, method) from None

    async def _failure(self, proc: RpcChild, exc: RpcError, method: str) -> BridgeError:
        """Classify a failed request; what the agent said goes to the log only."""
        failure = await proc.failure(exc, method, exit_is_unavailable=method == "initialize")
        if failure is not None:
            return failure
        log.warning(
            "acp %s: %s failed (%d): %s",
            self.settings.spec.id,
            method,
            exc.code,
            prose(exc.message),
        )
        classified = mapping.classify_rpc_error(exc.code, method)
        if classified in ("recovery_invalid", "unsupported"):
            return BridgeError(classified)
        details = mapping.limit_failure_details(exc.code, exc.message)
        return ProviderFailure(classified, f"{method} failed ({exc.code})", details=details)

    async def _handshake(self, proc: RpcChild, *, resume: bool, fork: bool = False) -> None:
        s = self.settings
        caps = p.client_capabilities(fs=s.fs, terminal=s.terminal, elicitation=s.elicitation)
        result = await self._call(
            proc, "initialize", p.initialize_params(BRIDGE_VERSION, caps), STARTUP_TIMEOUT
        )
        info = self.info = p.AgentInfo.from_result(result)
        self._provider.learned(info)
        profile = profile_for(info)
        if profile is not None:  # (else the profile a built-in expects stays)
            self.hints = effective_hints(s.spec.hints, profile)
            log.debug("acp %s: recognised as %s %s", s.spec.id, profile.key, info.version)
        if info.protocol_version != p.PROTOCOL_VERSION:
            log.warning("acp %s speaks protocol %d", s.spec.id, info.protocol_version)
            raise ProviderFailure("provider_unavailable", "unsupported ACP protocol version")
        method = s.auth_method
        if method is not None:
            if method not in info.auth_methods:
                raise BridgeError("invalid_option", details={"option": "authMethod"})
            await self._call(proc, "authenticate", {"methodId": method}, STARTUP_TIMEOUT)
        base = {"cwd": s.cwd, "mcpServers": list(s.mcp_servers)}
        if resume:
            assert s.acp_session_id is not None
            params = {**base, "sessionId": s.acp_session_id}
            if self.hints.resume is False:
                raise BridgeError("unsupported", details={"reason": "resume_defect"})
            replay = s.replay_history and info.load_session
            if info.session_resume and not replay:
                result = await self._call(proc, "session/resume", params, STARTUP_TIMEOUT)
            elif info.load_session:
                if replay:
                    self._replayed = deque(maxlen=MAX_REPLAYED)
                self._loading = True
                try:
                    result = await self._call(proc, "session/load", params, STARTUP_TIMEOUT)
                finally:
                    self._loading = False
                    s.replay_history = False  # a later restart resumes as usual
            else:
                raise BridgeError("unsupported", details={"reason": "agent_cannot_resume"})
        else:
            method = "session/new"
            if fork:
                # a fork of the session in acp_session_id (ACP's unstable session/fork)
                if not info.session_fork:
                    raise BridgeError("unsupported")
                assert s.acp_session_id is not None
                method = "session/fork"
                base = {**base, "sessionId": s.acp_session_id}
            self._opening = True  # its id is not known until the answer
            try:
                result = await self._call(proc, method, base, STARTUP_TIMEOUT)
            finally:
                self._opening = False
            session_id = p.obj(result).get("sessionId")
            if not p.session_id_ok(session_id):
                # the session's identity in the recovery record and in every later
                # request: one that cannot be kept whole is not kept (nor logged)
                log.warning(
                    "acp %s: %s answered no usable sessionId (missing, empty, not "
                    "printable or over %d characters)",
                    s.spec.id,
                    method,
                    p.MAX_SESSION_ID,
                )
                raise ProviderFailure("provider_contract", f"{method} returned no usable sessionId")
            s.acp_session_id = session_id
        self._provider.learned_session(p.obj(result))
        self._mode = p.mode_setting(p.obj(result).get("modes"))
        self._model, self._model_option = p.model_setting(p.obj(result))
        if s.mode is not None:
            if s.mode not in p.mode_ids(p.obj(result).get("modes")):
                raise BridgeError("invalid_option", details={"option": "mode"})
            await self._call(
                proc,
                "session/set_mode",
                {"sessionId": s.acp_session_id, "modeId": s.mode},
                REQUEST_TIMEOUT,
            )
            self._mode = self._with_current(self._mode, s.mode)
        from agent_bridge.adapters.acp.provider import CONFIG_CATEGORIES

        offered = p.config_options(p.obj(result).get("configOptions"))
        for name, value in s.config.items():
            option = next(
                (o for o in offered if o.get("category") == CONFIG_CATEGORIES[name]), None
            )
            if option is None or value not in p.select_values(option):
                raise BridgeError("invalid_option", details={"option": name})
            await self._call(
                proc,
                "session/set_config_option",
                {"sessionId": s.acp_session_id, "configId": option.get("id"), "value": value},
                REQUEST_TIMEOUT,
            )
            if name == "model":
                self._model = self._with_current(self._model, value)

    def _keep_replayed(self, update: Mapping[str, Any], record: bytes) -> None:
        """Keep what a ``session/load`` of a continued session replayed: a user message
        as ``run.started``, the rest as a live update maps."""
        replayed = self._replayed
        assert replayed is not None
        if update.get("sessionUpdate") == "user_message_chunk":
            text = p.obj(update.get("content")).get("text")
            payloads: list[EventPayload] = [RunStarted(input=text)] if isinstance(text, str) else []
        else:
            payloads = list(mapping.update_payloads(self._replay_state, update))
        for payload in payloads:
            if len(replayed) == replayed.maxlen:
                self._replay_dropped = True
            replayed.append((payload, record))

    def replayed_history(self) -> tuple[list[tuple[EventPayload, bytes]], bool]:
        """What the agent replayed when this continued session was loaded (once; then
        forgotten)."""
        replayed, self._replayed = self._replayed, None
        return (list(replayed) if replayed is not None else []), self._replay_dropped

    def export_recovery_record(self) -> Any:
        """The ACP session to continue; marked ``resumable: false`` for an agent whose
        profile (or entry) says a new process cannot continue it, so a resume is refused
        ``unsupported`` instead of silently starting a fresh session."""
        s = self.settings
        if s.acp_session_id is None:
            return None
        record: dict[str, Any] = {"agent": s.spec.id, "sessionId": s.acp_session_id, "cwd": s.cwd}
        if self.hints.resume is False:
            record["resumable"] = False
        return record

    async def dispose(self) -> None:
        self._disposed = True
        end_quietly(self._run)
        proc, self._proc = self._proc, None
        with anyio.CancelScope(shield=True):
            await self.callbacks.close()
            if proc is not None:
                await proc.stop()
        self._tasks.cancel_all()

    # ------------------------------------------------------------------ runs

    async def start_run(
        self, input: RunInput, options: Mapping[str, Any], ctx: RunContext
    ) -> ProviderRun:
        check_can_start(self._disposed, self._run)
        if self._restart:
            await self._restart_agent()
        proc = self._proc
        if proc is None or proc.closed:
            raise ProviderFailure("provider_crashed", "the agent is no longer running")
        run = AcpRun(self, ctx)
        self._run = run
        suspect, self._after_cancel = self._after_cancel, False
        self._tasks.start(
            self._prompt, proc, run, p.prompt_blocks(input), suspect, name="session/prompt"
        )
        return run

    def model_and_mode(self) -> SessionSettings | None:
        """The models and modes the agent offered for this session, current ones kept up
        to date (``session/configure``, ``current_mode_update``, ``config_option_update``)."""
        if self._model is None and self._mode is None:
            return None
        return SessionSettings(self._model, self._mode)

    async def configure(self, model: str | None, mode: str | None) -> None:
        """``session/set_mode`` for ``mode``; for ``model`` the agent's model config option
        (``session/set_config_option``) or else the unstable ``session/set_model``.
        Raises ``unsupported`` when the agent offers no such choice, ``invalid_params``
        for a value it does not offer, or the classified failure."""
        proc = self._proc
        if self._disposed or proc is None or proc.closed:
            raise ProviderFailure("provider_crashed", "the agent is no longer running")
        for name, value, setting in (("mode", mode, self._mode), ("model", model, self._model)):
            if value is None:
                continue
            if setting is None:
                raise BridgeError("unsupported", details={"field": name})
            if value not in {v.id for v in setting.available}:
                reason = f"the agent does not offer this {name}"
                raise BridgeError("invalid_params", details={"field": name, "reason": reason})
        sid = self.settings.acp_session_id
        if mode is not None:
            await self._call(
                proc, "session/set_mode", {"sessionId": sid, "modeId": mode}, REQUEST_TIMEOUT
            )
            self._mode = self._with_current(self._mode, mode)
        if model is not None:
            if self._model_option is not None:
                params = {"sessionId": sid, "configId": self._model_option, "value": model}
                await self._call(proc, "session/set_config_option", params, REQUEST_TIMEOUT)
            else:
                params = {"sessionId": sid, "modelId": model}
                await self._call(proc, "session/set_model", params, REQUEST_TIMEOUT)
            self._model = self._with_current(self._model, model)

    @staticmethod
    def _with_current(setting: SessionSetting | None, current: str) -> SessionSetting | None:
        return None if setting is None else SessionSetting(current, setting.available)

    def _settings_update(self, update: Mapping[str, Any]) -> bool:
        """Follow a ``current_mode_update`` / ``config_option_update``; whether the
        current mode or model changed."""
        kind = update.get("sessionUpdate")
        before = (self._model, self._mode)
        if kind == "current_mode_update" and isinstance(update.get("currentModeId"), str):
            self._mode = self._with_current(self._mode, update["currentModeId"])
        elif kind == "config_option_update" and self._model_option is not None:
            option = p.model_option(update.get("configOptions"))
            if option is not None and isinstance(option.get("currentValue"), str):
                self._model = self._with_current(self._model, option["currentValue"])
        return (self._model, self._mode) != before

    def commands(self) -> tuple[CommandInfo, ...] | None:
        """The agent's commands from its last ``available_commands_update`` (``None``
        until it sent one)."""
        return self._commands

    def input_capabilities(self) -> InputCapabilities:
        """What this agent's prompts may hold, from its ``initialize`` answer
        (:func:`~agent_bridge.adapters.acp.protocol.input_capabilities`): the generic
        provider's descriptor cannot know it, a built-in's only once an agent answered."""
        return p.input_capabilities(self.info)

    async def _prompt(
        self, proc: RpcChild, run: AcpRun, prompt: list[dict[str, Any]], suspect: bool
    ) -> None:
        """Send ``session/prompt`` and settle ``run`` with its answer -- once the answer
        is known to be this prompt's (correlate before settling).  ``suspect``: the turn
        before was cancelled, and an agent may still answer with that turn's result."""
        entry = proc.conn.open_request(
            "session/prompt",
            {"sessionId": self.settings.acp_session_id, "prompt": prompt},
        )
        try:
            result = await proc.conn.wait(entry)
        except RpcError as exc:
            if run.finished:
                return
            failure = await self._failure(proc, exc, "session/prompt")
            code = failure.error_code
            run.finish(
                RunOutcome.failed(
                    code if code != "unsupported" else "provider_failed",
                    f"session/prompt failed ({exc.code})",
                    failure.info.details,
                )
            )
            return
        if (
            suspect
            and not run.finished
            and not run.interrupt_wanted
            and mapping.answers_a_cancelled_turn(result, run.updates)
        ):
            await self._reattribute(proc, run, prompt)
            return
        run.finish(mapping.prompt_outcome(result, interrupt_requested=run.interrupt_wanted))

    async def _reattribute(self, proc: RpcChild, run: AcpRun, prompt: list[dict[str, Any]]) -> None:
        """The agent answered ``run``'s prompt with a cancelled turn's result, and holds
        this prompt's reply for a later one: that process can no longer be trusted to
        answer in order.  Say so (a diagnostic), and when the agent can continue the
        session elsewhere, continue it in a new process and ask again there; otherwise
        fail the run and stop the agent (its next answer would be this prompt's)."""
        log.warning(
            "acp %s: session/prompt answered with a cancelled turn's result",
            self.settings.spec.id,
        )
        run.emit(mapping.UNATTRIBUTED)
        info = self.info
        resumable = (
            info is not None
            and info.can_resume
            and self.settings.acp_session_id is not None
            and self.hints.resume is not False
        )
        if not resumable:
            self._proc = None
            with anyio.CancelScope(shield=True):
                await proc.stop()
            run.finish(RunOutcome.failed("provider_contract", "prompt answered out of turn"))
            return
        try:
            await self._restart_agent()
        except BridgeError as exc:
            run.finish(RunOutcome.failed(exc.error_code, "could not continue the session"))
            return
        fresh = self._proc
        if run.finished or run.interrupt_wanted or fresh is None or fresh.closed:
            run.finish(
                RunOutcome.interrupted()
                if run.interrupt_wanted
                else RunOutcome.failed("provider_crashed", "the agent is no longer running")
            )
            return
        await self._prompt(fresh, run, prompt, suspect=False)

    def run_finished(self, run: AcpRun) -> None:
        if self._run is run:
            self._run = None
        outcome = run.outcome
        if outcome is not None and outcome.state == "interrupted":
            self._after_cancel = True
            if self.hints.restart_after_cancel:
                self._restart = True

    async def _restart_agent(self) -> None:
        """Stop the agent and continue the session in a new process (the workaround for
        an agent that is not usable after a cancel)."""
        self._restart = False
        proc, self._proc = self._proc, None
        log.info("acp %s: restarting the agent after a cancelled run", self.settings.spec.id)
        if proc is not None:
            with anyio.CancelScope(shield=True):
                await proc.stop()
        info = self.info
        if info is None or not info.can_resume or self.settings.acp_session_id is None:
            raise ProviderFailure("provider_failed", "the agent cannot continue the session")
        await self.open(resume=True)

    def send_cancel(self, run: AcpRun) -> None:
        """``session/cancel`` (once), and every pending permission answered cancelled."""
        proc = self._proc
        if run.finished or run.cancel_sent or proc is None:
            return
        run.cancel_sent = True
        proc.conn.notify("session/cancel", {"sessionId": self.settings.acp_session_id})
        for handle in list(run.pending):
            handle.withdraw()

    # ------------------------------------------------------------------ agent → client

    def _decode(self, raw: msgspec.Raw) -> Mapping[str, Any]:
        try:
            return p.obj(msgspec.json.decode(bytes(raw)))
        except msgspec.DecodeError:
            return {}

    def _current(self, params: Mapping[str, Any]) -> AcpRun | None:
        run = self._run
        if run is None or run.finished:
            return None
        if params.get("sessionId") != self.settings.acp_session_id:
            # not this run's, and not shown; but a run whose agent speaks of another
            # session is told once (it would otherwise end as if the agent said nothing)
            for payload in mapping.once(run.state, "other_session", mapping.OTHER_SESSION):
                run.emit(payload)
            return None
        return run

    def _on_update(self, raw: msgspec.Raw) -> None:
        params = self._decode(raw)
        update = p.obj(params.get("update"))
        changed = False
        if self._opening or params.get("sessionId") == self.settings.acp_session_id:
            # another session's commands and settings are not this session's
            if update.get("sessionUpdate") == "available_commands_update":
                self._commands = mapping.commands_of(update)  # kept in or outside a run
            changed = self._settings_update(update)
        if self._loading:
            if self._replayed is not None:
                self._keep_replayed(update, bytes(raw))
            return  # history replayed by session/load: already in the journal
        run = self._current(params)
        if run is None:
            log.debug("acp: update %s outside a run ignored", loggable(update.get("sessionUpdate")))
            return
        run.updates += 1
        record = bytes(raw)
        for payload in mapping.update_payloads(run.state, update):
            run.emit(payload, raw=record)
        if changed:
            current = SettingsUpdated(
                model=self._model.current if self._model is not None else None,
                mode=self._mode.current if self._mode is not None else None,
            )
            run.emit(current, raw=record)

    async def _on_permission(self, raw: msgspec.Raw) -> dict[str, Any]:
        params = self._decode(raw)
        run = self._current(params)
        if run is None or run.interrupt_wanted:
            return dict(mapping.CANCELLED)
        call = p.obj(params.get("toolCall"))
        known = (
            run.state.described.get(call["toolCallId"])
            if isinstance(call.get("toolCallId"), str)
            else None
        )
        tool_id = call.get("toolCallId")
        parent = run.state.parents.get(tool_id) if isinstance(tool_id, str) else None
        permission = mapping.permission_request(params, self.settings.cwd, known, parent)
        if isinstance(call.get("toolCallId"), str):
            for payload in mapping.tool_payloads(run.state, {**call, "status": "pending"}):
                run.emit(payload, raw=bytes(raw))
        if permission.allow_once is None and permission.allow_always is None:
            # nothing to allow with: asking would take an "allow" the agent cannot get
            for payload in mapping.once(run.state, "cannot_allow", mapping.CANNOT_ALLOW):
                run.emit(payload, raw=bytes(raw))
            return mapping.refusal(permission)
        handle = run.ctx.open_interaction(permission.request)
        run.pending.add(handle)
        try:
            outcome = await handle.wait()
        finally:
            run.pending.discard(handle)
        return mapping.permission_reply(permission, outcome, cancelling=run.interrupt_wanted)

    async def _on_elicitation(self, raw: msgspec.Raw) -> dict[str, Any]:
        params = self._decode(raw)
        run = self._current(params)
        if run is None or run.interrupt_wanted:
            return {"action": "cancel"}
        asked = mapping.elicitation_request(params)
        if asked is None:
            for payload in mapping.once(
                run.state,
                ("elicitation", params.get("mode")),
                Diagnostic(
                    level="warning",
                    code="acp_elicitation_unsupported",
                    message="The agent asked for input in a form the bridge cannot ask "
                    "(URL mode or an unsupported field); it was declined",
                ),
            ):
                run.emit(payload, raw=bytes(raw))
            return {"action": "decline"}
        request, fields = asked
        handle = run.ctx.open_interaction(request)
        run.pending.add(handle)
        try:
            outcome = await handle.wait()
        finally:
            run.pending.discard(handle)
        if run.interrupt_wanted:
            return {"action": "cancel"}
        return mapping.elicitation_reply(fields, outcome)


def default_cwd(workspace: str | None) -> str:
    """ACP needs an absolute ``cwd``: the workspace, else the bridge's own directory."""
    return workspace if workspace is not None else os.getcwd()
