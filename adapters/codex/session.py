"""One Codex session: a resident ``codex app-server`` child and one thread in it.

The child speaks newline-delimited JSON-RPC without a ``"jsonrpc"`` member.  The adapter
drives it as the kit's :class:`~agent_bridge.adapters.kit.rpc_child.RpcChild` (the
project's own :class:`~agent_bridge.rpc.connection.Connection`, the same engine and
request-ID ledger the bridge uses toward hosts): requests it sends
(``initialize``, ``thread/start``/``thread/resume``, ``turn/start``, ``turn/steer``,
``turn/interrupt``) are recorded in the ledger and all fail at once at EOF; server→client
requests it understands become bridge interactions, every other one is answered
``-32601`` by the connection; notifications become events through one table
(notification → handler) after correlation.  The child, its exit watcher and every
background task come from the adapter kit, so an exception in one of them fails the
active run instead of escaping into the runtime.

Correlation: every notification and server request carries a ``threadId`` and most a
``turnId``.  Anything for another thread, or for another turn of this thread while a run
is active, never touches the run: it becomes one ``codex_stray_frame`` diagnostic per
(thread, turn) and is dropped.  Frames that arrive while ``turn/start`` is still in
flight (its result names the turn) are held and replayed in order once the id is known.

Upstream text (warnings, error messages, stderr) goes to the log, redacted; events carry
fixed diagnostic codes and messages only.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

import anyio
import msgspec

from agent_bridge import __version__ as BRIDGE_VERSION
from agent_bridge.adapters.codex import agents, mapping
from agent_bridge.adapters.codex import protocol as p
from agent_bridge.adapters.codex.launch import EFFORTS, Settings
from agent_bridge.adapters.codex.probe import parse_version
from agent_bridge.adapters.kit.limits import merge_meters
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
from agent_bridge.rpc.connection import Method, current_request_id
from agent_bridge.rpc.errors import ConnectionClosed, RequestTimedOut, RpcError
from agent_bridge.rpc.ledger import LedgerEntry
from agent_bridge.spi import (
    InteractionHandle,
    InteractionOutcome,
    ProviderRun,
    ProviderSession,
    RunContext,
    RunOutcome,
    SessionContext,
)
from agent_bridge.wire.errors import ErrorCode
from agent_bridge.wire.events import (
    CommandsUpdated,
    Diagnostic,
    LimitMeter,
    LimitsUpdated,
    ProviderPayload,
    SettingsUpdated,
)
from agent_bridge.wire.inputs import CommandInfo, CommandInput
from agent_bridge.wire.interactions import ApprovalRequest, InteractionRequest
from agent_bridge.wire.methods import RunInput
from agent_bridge.wire.settings import SessionSetting, SessionSettings, SettingValue

__all__ = ["CodexRun", "CodexSession"]

log = logging.getLogger("agent_bridge.codex")

STARTUP_TIMEOUT: Final = 30.0
REQUEST_TIMEOUT: Final = 30.0
CONTROL_TIMEOUT: Final = 10.0
#: After the app-server exits, how long its output may stay open before the adapter
#: stops waiting for EOF (messages it wrote before exiting are read meanwhile).
EXIT_DRAIN_GRACE: Final = 0.5
STOP_GRACES: Final = StopGraces(eof=1.5, term=1.5, kill=3.0)
_MAX_PENDING_DIAGNOSTICS: Final = 16
#: How many notifications of agent threads that outlived their run are kept for the
#: next run (past it the newest are dropped, logged once).
MAX_HELD_CHILD_FRAMES: Final = 2000
#: Frames of not yet known threads a run holds at most (see ``CodexRun.hold``).
_MAX_HELD: Final = 256
#: Pages of ``model/list`` read at most (a page is the server's default size).
_MAX_MODEL_PAGES: Final = 8

_DECODE_ERRORS: Final = (msgspec.DecodeError, msgspec.ValidationError)

#: A handler of a notification correlated with the active run: ``(run, method, params)``.
_TurnHandler = Callable[["CodexRun", str, bytes], None]


def _request_key() -> Any:
    raw = current_request_id()
    if raw is None:
        return None
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return None


# ----------------------------------------------------------------------------- runs


class CodexRun(RunHandle):
    """One turn of the session's thread."""

    def __init__(self, session: CodexSession, ctx: RunContext) -> None:
        super().__init__()
        self._session = session
        self.ctx = ctx
        self.turn_id: str | None = None
        self.turn_known = anyio.Event()
        self.early: list[tuple[str, bytes]] = []
        self.state = mapping.TurnState()
        self.pending: dict[Any, InteractionHandle] = {}
        self.last_error: p.TurnError | None = None
        self.interrupt_wanted = False
        self.interrupt_sent = False
        #: frames of threads not known yet (an agent thread speaks before the spawn
        #: call naming it completes): replayed once a spawn names the thread
        self.unclaimed: dict[str, list[tuple[str, bytes]]] = {}
        self._held = 0
        #: The Codex message being handled: every payload projected from it carries it as
        #: its raw record (provenance), one shared object per message.
        self.raw: bytes | None = None

    # -- ProviderRun

    async def interrupt(self, reason: str) -> None:
        self.interrupt_wanted = True
        self._session.send_interrupt(self)

    async def steer(self, input: RunInput) -> None:
        await self._session.steer(self, input)

    # -- helpers

    def emit(self, payload: ProviderPayload) -> None:
        """Emit ``payload`` (with the current message as its raw record) unless ended."""
        if self.finished:
            return
        try:
            if self.raw is None:
                self.ctx.emit_nowait(payload)
            else:
                self.ctx.emit_nowait(payload, raw=self.raw)
        except Exception:  # the runtime never raises here; be safe anyway
            log.exception("codex: emit failed")

    def emit_all(self, payloads: list[ProviderPayload]) -> None:
        """Emit ``payloads`` (projected from the current message) in order, in one call
        (each its own event) unless ended."""
        if self.finished or not payloads:
            return
        try:
            self.ctx.emit_nowait_many(payloads, raw=self.raw)
        except Exception:  # the runtime never raises here; be safe anyway
            log.exception("codex: emit failed")

    def diagnose_once(self, key: Any, level: Any, code: str, message: str) -> None:
        """Emit a diagnostic the first time ``key`` is reported in this run."""
        self.emit_all(mapping.once(self.state, key, level, code, message))

    def stray(self, thread_id: str | None, turn_id: str | None) -> None:
        log.info("codex: frame for thread %s turn %s ignored", thread_id, turn_id)
        self.diagnose_once(
            ("stray", thread_id, turn_id),
            "warning",
            "codex_stray_frame",
            "Codex sent a message for another thread or turn; it was ignored",
        )

    def hold(self, thread_id: str, method: str, raw: bytes) -> bool:
        """Keep a frame of the unknown thread ``thread_id`` until a spawn call names it
        (at most :data:`_MAX_HELD` frames a run); ``False`` when full."""
        if self._held >= _MAX_HELD:
            return False
        self._held += 1
        self.unclaimed.setdefault(thread_id, []).append((method, raw))
        return True

    def claim(self, thread_ids: list[str]) -> None:
        """The threads ``thread_ids`` are known now: replay their held frames."""
        for thread_id in thread_ids:
            for method, raw in self.unclaimed.pop(thread_id, []):
                self._session.route(method, raw)

    def set_turn(self, turn_id: str) -> None:
        """The turn id is known: replay the frames held meanwhile."""
        self.turn_id = turn_id
        self.turn_known.set()
        early, self.early = self.early, []
        for method, raw in early:
            self._session.route(method, raw)

    def finish(self, outcome: RunOutcome, *, emit: bool = True) -> bool:
        """End the run once; with ``emit``, tools still open are reported ``failed``."""
        if self.finished:
            return False
        if emit:
            for thread_id in list(self.unclaimed):
                self.stray(thread_id, None)  # never claimed by a spawn
            for child in self._session.tree.children():
                self.emit_all(agents.child_payloads(child, child.state.tools.fail_open()))
                self.emit_all(agents.detached(child, self.state))
            self.emit_all(mapping.open_tools_failed(self.state))
        super().finish(outcome)
        self.turn_known.set()  # wake anything still waiting for the turn id
        self._session.run_finished(self)
        return True


class CodexSession(ProviderSession):
    """A resident ``codex app-server`` child and one thread in it."""

    def __init__(self, ctx: SessionContext, settings: Settings) -> None:
        self._ctx = ctx
        self.settings = settings
        self._tasks = TaskSupervisor(
            ctx.task_group, log, owner="codex session", on_failure=self._task_failed
        )
        self._proc: RpcChild | None = None
        self._run: CodexRun | None = None
        self._disposed = False
        #: the rollout reference of the thread, once found (see _rollout_ref)
        self._rollout: str | None = None
        self._lock = anyio.Lock()
        self._pending_diagnostics: list[Diagnostic] = []
        #: the latest figures of every limit meter Codex reported (``account/rateLimits``)
        self.limits: dict[tuple[str, str], LimitMeter] = {}
        #: whether ``account/rateLimits/read`` may tell (it refuses without a ChatGPT
        #: login: an API key or another model provider)
        self._limits_readable = True
        #: a limits update that arrived while no run was active (reported by the next)
        self._pending_limits: LimitsUpdated | None = None
        #: a change of the model or mode Codex made while no run was active (reported by
        #: the next)
        self._pending_settings: SettingsUpdated | None = None
        self._resolved: set[Any] = set()
        #: the models ``model/list`` offered (read once the thread is open)
        self._models: tuple[SettingValue, ...] = ()
        #: ``session/configure`` changed the model or mode: the next ``turn/start``
        #: carries them (Codex keeps a turn's overrides for the turns after it)
        self._overrides_due = False
        #: the agent threads this session's threads spawned (they outlive a run)
        self.tree = agents.AgentTree()
        #: notifications of those threads that came while no run was active (an agent
        #: that outlived the run that spawned it): mapped at the start of the next run
        self._held_children: list[tuple[str, bytes]] = []
        #: set (and replaced) whenever a run starts or the session is disposed: what an
        #: agent's approval asked between runs waits for
        self._run_started = anyio.Event()
        #: the skills ``skills/list`` named, by name: (command, ``SKILL.md`` path);
        #: ``None`` until read
        self._skills: dict[str, tuple[CommandInfo, str]] | None = None
        #: the reload of the skills after ``skills/changed``: none, one running, or
        #: one running and another wanted
        self._skills_reload: Literal["idle", "running", "again"] = "idle"
        #: skills that changed while no run was active (reported by the next)
        self._pending_commands: CommandsUpdated | None = None
        #: The one dispatch of notifications correlated with the active run; a
        #: notification not in it (and not ignored) is reported once as unmapped.
        self._turn_handlers: dict[str, _TurnHandler] = {
            "item/agentMessage/delta": self._on_agent_delta,
            "item/reasoning/summaryTextDelta": self._on_reasoning_delta,
            "item/reasoning/textDelta": self._on_reasoning_delta,
            "item/reasoning/summaryPartAdded": self._on_summary_part,
            "item/commandExecution/outputDelta": self._on_output_delta,
            "item/fileChange/outputDelta": self._on_output_delta,
            "item/started": self._on_item_started,
            "item/completed": self._on_item_completed,
            "thread/tokenUsage/updated": self._on_token_usage,
            "turn/plan/updated": self._on_plan,
            "turn/completed": self._on_turn_completed,
            "error": self._on_error,
            **{method: self._on_upstream_diagnostic for method in mapping.DIAGNOSTICS},
        }
        self._notifications = {
            method: Method(functools.partial(self._on_notification, method), msgspec.Raw)
            for method in p.SERVER_NOTIFICATIONS
        }
        # Settles a server request whichever run it was for: never correlated.
        self._notifications["serverRequest/resolved"] = Method(self._on_resolved, msgspec.Raw)
        self._requests: dict[str, Method] = {
            "item/commandExecution/requestApproval": Method(
                self._on_command_approval, msgspec.Raw, is_async=True
            ),
            "item/fileChange/requestApproval": Method(
                self._on_file_change_approval, msgspec.Raw, is_async=True
            ),
            "item/permissions/requestApproval": Method(
                self._on_permissions_approval, msgspec.Raw, is_async=True
            ),
            "item/tool/requestUserInput": Method(self._on_user_input, msgspec.Raw, is_async=True),
        }

    @property
    def thread_id(self) -> str | None:
        return self.settings.thread_id

    # ------------------------------------------------------------------ lifecycle

    async def open(self, *, resume: bool, fork: tuple[str, str | None] | None = None) -> None:
        """Spawn the child, run the handshake and start (or resume) the thread, or with
        ``fork`` (``(thread id, last turn id)``) start a new thread forked from that one
        through that turn (``thread/fork``; the whole thread without a turn id).

        Raises :class:`BridgeError`/:class:`ProviderFailure`; the child is stopped first.
        """
        await open_rpc_child(self._spawn, self._forget, self._handshake, resume=resume, fork=fork)

    async def _spawn(self) -> RpcChild:
        s = self.settings
        spec = RpcChildSpec(
            s.argv(),
            s.cwd,
            s.env,
            label="codex app-server",
            name="codex app-server",
            missing="codex",
            option="config",
            jsonrpc=False,
            graces=STOP_GRACES,
            drain_grace=EXIT_DRAIN_GRACE,
        )
        proc = await start_rpc_child(
            spec,
            self._ctx.task_group,
            self._tasks,
            log=log,
            methods=self._requests,
            notifications=self._notifications,
            serve=self._serve,
        )
        self._proc = proc
        self._resolved.clear()  # server request ids start again at 0 in a new process
        return proc

    async def _startup_failure(self, proc: RpcChild, exc: RpcError, what: str) -> BridgeError:
        """Classify a failed handshake request; log what the child said.  A non-zero
        exit at start-up is a configuration or installation problem (bad config.toml
        under --strict-config, missing CODEX_HOME, ...): ``provider_unavailable``."""
        failure = await proc.failure(exc, what, exit_is_unavailable=True)
        if failure is not None:
            return failure
        log.warning("codex: %s failed: %s", what, prose(exc.message))
        if what in ("thread/resume", "thread/fork"):
            return BridgeError("recovery_invalid")
        return ProviderFailure("provider_failed", f"{what} failed")

    async def _handshake(
        self, proc: RpcChild, *, resume: bool, fork: tuple[str, str | None] | None = None
    ) -> None:
        s = self.settings
        try:
            init = await proc.call(
                "initialize",
                {
                    "clientInfo": {
                        "name": "agent_bridge",
                        "title": "agent-bridge",
                        "version": BRIDGE_VERSION,
                    }
                },
                result_type=p.InitializeResponse,
                timeout=STARTUP_TIMEOUT,
            )
        except RpcError as exc:
            raise await self._startup_failure(proc, exc, "initialize") from None
        s.cli_version = parse_version(init.user_agent) or s.cli_version
        proc.conn.notify("initialized")
        params: dict[str, Any] = {}
        if s.cwd is not None:
            params["cwd"] = s.cwd
        if s.approval_policy is not None:
            params["approvalPolicy"] = s.approval_policy
        if s.sandbox is not None:
            params["sandbox"] = s.sandbox
        if s.model is not None:
            params["model"] = s.model
        method = "thread/start"
        if resume:
            method = "thread/resume"
            # Without sandbox/approvalPolicy again the resumed thread falls back to
            # read-only; excludeTurns avoids the deprecated full-history hydration.
            params = {"threadId": s.thread_id, "excludeTurns": True, **params}
        elif fork is not None:
            method = "thread/fork"
            source, last_turn = fork
            params = {"threadId": source, "excludeTurns": True, **params}
            if last_turn is not None:
                params["lastTurnId"] = last_turn
        try:
            thread = await proc.call(
                method, params, result_type=p.ThreadResponse, timeout=STARTUP_TIMEOUT
            )
        except RpcError as exc:
            raise await self._startup_failure(proc, exc, method) from None
        if not mapping.thread_id_ok(thread.thread.id):
            # the session's identity in the recovery record and in every later request:
            # a session cannot be resumed from one that is not kept (the id is not logged)
            log.warning("codex: %s: the thread id is not usable (wrong shape or too long)", method)
            raise ProviderFailure("provider_contract", f"{method} answered an unusable thread id")
        if resume and thread.thread.id != s.thread_id:
            # another thread than the one asked for: the session would go on in a
            # conversation that is not its own (its history and the agent's disagree)
            log.warning("codex: thread/resume answered another thread than the one asked for")
            raise ProviderFailure("provider_contract", "thread/resume answered another thread")
        s.thread_id = thread.thread.id
        dropped: list[str] = []
        if thread.model:
            if mapping.model_id_ok(thread.model):
                s.model = thread.model
            else:
                dropped.append("model")
        dropped += self._take_policies(thread.approval_policy, thread.sandbox)
        if thread.cwd and s.cwd is None:  # a session without a workspace takes Codex's
            if mapping.cwd_ok(thread.cwd):
                s.cwd = thread.cwd
            else:
                dropped.append("cwd")
        if dropped:
            self._unexpected(method, dropped)
        if not self._models:
            # in the background: with some logins Codex fetches its catalogue over the
            # network, and a session does not wait for a menu
            self._tasks.start(self._load_models, proc)
        if self._skills is None:
            self._skills = await self._list_skills(proc, reload=False)
        proc.ready = True

    async def _list_skills(
        self, proc: RpcChild, *, reload: bool
    ) -> dict[str, tuple[CommandInfo, str]] | None:
        """The enabled skills ``skills/list`` names for the session's directory (with
        ``reload``, read from disk again), or ``None`` when it fails (logged)."""
        params: dict[str, Any] = {"forceReload": reload}
        if self.settings.cwd is not None:
            params["cwds"] = [self.settings.cwd]
        try:
            listed = await proc.call(
                "skills/list", params, result_type=p.SkillsListResponse, timeout=CONTROL_TIMEOUT
            )
        except RpcError as exc:
            log.info("codex: skills/list failed: %s", prose(exc.message))
            return None
        return mapping.skills_of(listed)

    def commands(self) -> tuple[CommandInfo, ...] | None:
        """Codex's skills (``skills/list``, kept current on ``skills/changed``), each a
        command a ``command`` block invokes as a ``$name`` mention; ``None`` until
        listed (or when listing failed)."""
        if self._skills is None:
            return None
        return tuple(command for command, _path in self._skills.values())

    def _skill_paths(self, input: RunInput) -> dict[str, str]:
        """The ``SKILL.md`` paths of the skills ``input``'s command blocks name.  Raises
        ``invalid_params`` for a name that is not one of the session's skills."""
        paths: dict[str, str] = {}
        for index, block in enumerate(input.content):
            if not isinstance(block, CommandInput):
                continue
            found = (self._skills or {}).get(block.name)
            if found is None:
                reason = f"{block.name} is not one of the session's commands"
                field = f"input.content[{index}].name"
                raise BridgeError("invalid_params", details={"field": field, "reason": reason})
            paths[block.name] = found[1]
        return paths

    def _on_skills_changed(self) -> None:
        """``skills/changed``: list them again (in one task; the reader must not wait, and
        a burst of changes while a reload runs makes one more reload, not one each)."""
        proc = self._proc
        if proc is None or self._disposed:
            return
        if self._skills_reload == "idle":
            self._skills_reload = "running"
            self._tasks.start(self._reload_skills, proc)
        else:
            self._skills_reload = "again"

    async def _reload_skills(self, proc: RpcChild) -> None:
        """Read the skills again (again while changes came meanwhile)."""
        try:
            while True:
                self._skills_reload = "running"
                await self._reload_skills_once(proc)
                if not self._reload_wanted():
                    return
        finally:
            self._skills_reload = "idle"

    def _reload_wanted(self) -> bool:
        """Whether skills changed again while the reload ran."""
        return self._skills_reload == "again"

    async def _reload_skills_once(self, proc: RpcChild) -> None:
        """Read the skills again; when they differ, report ``commands.updated`` in the
        active run, else at the start of the next."""
        skills = await self._list_skills(proc, reload=True)
        if skills is None or self._disposed:
            return
        before = self.commands()
        self._skills = skills
        commands = self.commands()
        if commands is None or commands == before:
            return
        update = CommandsUpdated(commands)
        run = self._run
        if run is not None and not run.finished and run.turn_id is not None:
            run.emit(update)
        else:
            self._pending_commands = update

    async def _load_models(self, proc: RpcChild) -> None:
        """Keep the models ``model/list`` offers (see :meth:`_list_models`)."""
        models = await self._list_models(proc)
        if models:
            self._models = models

    async def _list_models(self, proc: RpcChild) -> tuple[SettingValue, ...]:
        """The models ``model/list`` offers (its catalogue, whichever model provider is
        configured); empty when it fails or is not answered in time (logged: the session
        works without the list)."""
        found: list[p.ModelInfo] = []
        cursor: str | None = None
        try:
            for _ in range(_MAX_MODEL_PAGES):
                page = await proc.call(
                    "model/list",
                    {} if cursor is None else {"cursor": cursor},
                    result_type=p.ModelListResponse,
                    timeout=CONTROL_TIMEOUT,
                )
                found += page.data
                cursor = page.next_cursor
                if not cursor:
                    break
        except RpcError as exc:
            log.info("codex: model/list failed: %s", prose(exc.message))
        return mapping.models_of(found)

    def model_and_mode(self) -> SessionSettings:
        """The model (the thread's; ``available``: ``model/list``'s catalogue, though
        Codex takes any model its model provider knows) and the mode (one of its
        approval presets, :data:`~agent_bridge.adapters.codex.mapping.MODES`; no current
        one when the session's approval policy and sandbox make none of them)."""
        s = self.settings
        modes = tuple(SettingValue(m.id, m.name) for m in mapping.MODES)
        return SessionSettings(
            SessionSetting(s.model, self._models),
            SessionSetting(mapping.mode_of(s.approval_policy, s.sandbox), modes),
        )

    async def configure(self, model: str | None, mode: str | None) -> None:
        """Take the model and/or mode for the next ``turn/start`` (its per-turn
        ``model``, ``approvalPolicy`` and ``sandboxPolicy``, which Codex keeps for the
        turns after it; a restarted child resumes the thread with them).  Raises
        ``invalid_params`` for a mode that is not one of the presets."""
        preset = None
        if mode is not None:
            preset = next((m for m in mapping.MODES if m.id == mode), None)
            if preset is None:
                reason = "not one of Codex's approval presets"
                raise BridgeError("invalid_params", details={"field": "mode", "reason": reason})
        if self._disposed:
            raise BridgeError("session_closed")
        s = self.settings
        if model is not None:
            s.model = model
        if preset is not None:
            s.approval_policy = preset.approval_policy
            s.sandbox = preset.sandbox
        self._overrides_due = True

    async def _serve(self, proc: RpcChild) -> None:
        """Serve the connection; at EOF, end the active run as crashed."""
        await proc.serve()
        if proc.resident.stopping or not proc.ready or self._disposed or proc is not self._proc:
            return
        run = self._run
        code = await proc.exit_status(1)
        if run is not None:
            details = {"cause": "cli_exited"}
            if code is not None:
                details["exitStatus"] = str(code)
            run.finish(RunOutcome.failed("provider_crashed", "codex closed its output", details))
        log.warning(
            "codex app-server closed its output (status %s); stderr tail:\n%s",
            code,
            proc.resident.stderr_tail(),
        )
        await proc.stop()

    def _forget(self) -> None:
        """Drop the child that failed to open (it is stopped already)."""
        self._proc = None

    def _task_failed(self, code: ErrorCode, detail: str) -> None:
        """A supervised task failed: the active run ends with ``code``."""
        run = self._run
        if run is not None:
            run.finish(RunOutcome.failed(code, detail))

    def export_recovery_record(self) -> Any:
        s = self.settings
        if s.thread_id is None:
            return None
        record: dict[str, Any] = {"threadId": s.thread_id}
        for key, value in (
            ("cwd", s.cwd),
            ("codexHome", s.codex_home),
            ("sandbox", s.sandbox),
            ("approvalPolicy", s.approval_policy),
            ("model", s.model),
            ("reasoningEffort", s.reasoning_effort),
            ("cliVersion", s.cli_version),
            ("rollout", self._rollout_ref(s.thread_id)),
        ):
            if value is not None:
                record[key] = value
        return record

    def _rollout_ref(self, thread: str) -> str | None:
        """The reference of the thread's rollout file (``provider/sessions/list``'s), once
        Codex has written it: looked up (a few small directory reads) until found, then
        kept."""
        found = self._rollout
        if found is None or not found.endswith(thread):
            from agent_bridge.adapters.codex.native import ref_for

            found = ref_for(thread, self.settings.codex_home)
            self._rollout = found
        return found

    async def dispose(self) -> None:
        self._disposed = True
        self._run_started.set()  # an agent's approval held for the next run: declined
        end_quietly(self._run)
        proc, self._proc = self._proc, None
        if proc is not None:
            with anyio.CancelScope(shield=True):
                await proc.stop()
                tail = proc.resident.stderr_tail()
                if tail:
                    log.debug("codex stderr tail:\n%s", tail)
        self._tasks.cancel_all()

    # ------------------------------------------------------------------ runs

    async def start_run(
        self, input: RunInput, options: Mapping[str, Any], ctx: RunContext
    ) -> ProviderRun:
        check_can_start(self._disposed, self._run)
        skills = self._skill_paths(input)
        async with self._lock:
            proc = self._proc
            if proc is None or proc.closed:
                # The child died (crash, EOF): start a new one on the same thread.
                log.info("codex: restarting the app-server for thread %s", self.thread_id)
                await self.open(resume=True)
                proc = self._proc
                assert proc is not None
            run = CodexRun(self, ctx)
            self._run = run
            pending, self._pending_diagnostics = self._pending_diagnostics, []
            run.emit_all(list(pending))
            if self._pending_limits is not None:
                run.emit(self._pending_limits)
                self._pending_limits = None
            if self._pending_commands is not None:
                run.emit(self._pending_commands)
                self._pending_commands = None
            if self._pending_settings is not None:
                run.emit(self._pending_settings)
                self._pending_settings = None
            self._replay_held_children(run)
            started, self._run_started = self._run_started, anyio.Event()
            started.set()
            params: dict[str, Any] = {
                "threadId": self.thread_id,
                "input": p.user_input(input, skills),
            }
            s = self.settings
            if s.reasoning_effort is not None:
                params["effort"] = s.reasoning_effort
            overrides = self._overrides_due
            if overrides:
                if s.model is not None:
                    params["model"] = s.model
                if s.approval_policy is not None:
                    params["approvalPolicy"] = s.approval_policy
                if s.sandbox is not None:
                    params["sandboxPolicy"] = mapping.sandbox_policy(s.sandbox)
            try:
                started = await proc.call(
                    "turn/start", params, result_type=p.TurnStartResponse, timeout=REQUEST_TIMEOUT
                )
            except RpcError as exc:
                if self._run is run:
                    self._run = None
                if isinstance(exc, ConnectionClosed):
                    raise ProviderFailure("provider_crashed", "codex exited") from None
                if isinstance(exc, RequestTimedOut):
                    raise ProviderFailure("provider_timeout", "turn/start timed out") from None
                log.warning("codex: turn/start failed: %s", prose(exc.message))
                raise ProviderFailure("provider_failed", "turn/start failed") from None
            # No await from here on: the runtime marks the run running as soon as this
            # returns, before any approval handler waiting for the turn id resumes.
            if overrides:
                self._overrides_due = False
            run.set_turn(started.turn.id)
            if run.interrupt_wanted:
                self.send_interrupt(run)
            return run

    def run_finished(self, run: CodexRun) -> None:
        if self._run is run:
            self._run = None

    def send_interrupt(self, run: CodexRun) -> None:
        """Send ``turn/interrupt`` for ``run`` (once); the run ends on ``turn/completed``."""
        proc = self._proc
        if run.finished or run.interrupt_sent or run.turn_id is None or proc is None:
            return
        run.interrupt_sent = True
        entry = proc.conn.open_request(
            "turn/interrupt",
            {"threadId": self.thread_id, "turnId": run.turn_id},
            timeout=CONTROL_TIMEOUT,
        )
        self._tasks.start(self._settle_interrupt, proc, entry, run)

    async def _settle_interrupt(
        self, proc: RpcChild, entry: LedgerEntry[Any], run: CodexRun
    ) -> None:
        """Wait for the answer to ``turn/interrupt``.  A refusal ("no active turn to
        interrupt") means the turn ended meanwhile, or that Codex has not made it active
        yet (an interrupt right after ``turn/start``): then it is sent again with the
        turn's next notification (see :meth:`route`), so an early interrupt is not lost."""
        try:
            await proc.conn.wait(entry)
        except RpcError as exc:
            log.info("codex: %s: %s", entry.method, prose(exc.message))
            if not run.finished and self._run is run:
                run.interrupt_sent = False

    async def steer(self, run: CodexRun, input: RunInput) -> None:
        if run.finished:
            raise BridgeError("run_not_active")
        await run.turn_known.wait()
        proc = self._proc
        if run.finished or proc is None:
            raise BridgeError("run_not_active")
        params = {
            "threadId": self.thread_id,
            "expectedTurnId": run.turn_id,
            "input": p.user_input(input, self._skill_paths(input)),
        }
        try:
            await proc.call(
                "turn/steer", params, result_type=p.TurnSteerResponse, timeout=CONTROL_TIMEOUT
            )
        except ConnectionClosed:
            raise ProviderFailure("provider_crashed", "codex exited at turn/steer") from None
        except RequestTimedOut:
            raise ProviderFailure("provider_timeout", "turn/steer timed out") from None
        except RpcError as exc:
            log.info("codex: turn/steer refused: %s", prose(exc.message))
            raise BridgeError("run_not_active") from None

    # ------------------------------------------------------------------ notifications

    def _on_notification(self, method: str, raw: msgspec.Raw) -> None:
        self.route(method, bytes(raw))

    def route(self, method: str, raw: bytes) -> None:
        """Correlate one notification with the active run and hand it to its handler."""
        if method in mapping.IGNORED:
            return
        if method == "account/rateLimits/updated":
            self._on_rate_limits(raw)
            return
        if method == "skills/changed":
            self._on_skills_changed()
            return
        if method == "thread/settings/updated":
            self._on_settings(raw)
            return
        thread_id: str | None
        turn_id: str | None
        try:
            if method == "turn/completed":
                completed = p.decode(p.TurnCompleted, raw)
                thread_id, turn_id = completed.thread_id, completed.turn.id
            else:
                scope = p.decode(p.Scope, raw)
                thread_id, turn_id = scope.thread_id, scope.turn_id
        except _DECODE_ERRORS:
            self._unexpected(method)
            return
        run = self._run
        if thread_id is not None and self.thread_id is not None and thread_id != self.thread_id:
            child = self.tree.get(thread_id)
            if child is not None and run is not None and run.turn_id is None:
                run.early.append((method, raw))
            elif child is not None and run is not None:
                self._child_record(run, child, method, raw)
            elif run is not None and run.turn_id is None:
                run.early.append((method, raw))  # a spawn of this turn may name it yet
            elif run is not None and not run.hold(thread_id, method, raw):
                run.stray(thread_id, None)  # one diagnostic per unknown thread, as at the end
            elif child is not None and run is None:
                self._hold_child_frame(method, raw)
            else:
                log.info("codex: %s for another thread ignored", method)
            return
        if run is None:
            self._between_runs(method, raw)
            return
        if run.turn_id is None:
            run.early.append((method, raw))
            return
        if turn_id is not None and turn_id != run.turn_id:
            run.stray(thread_id, turn_id)
            return
        handler = self._turn_handlers.get(method, self._on_unmapped)
        run.raw = b'{"method":%s,"params":%s}' % (msgspec.json.encode(method), raw)
        try:
            handler(run, method, raw)
        except _DECODE_ERRORS:
            self._unexpected(method)
        finally:
            run.raw = None
        if run.interrupt_wanted and not run.interrupt_sent:
            self.send_interrupt(run)  # refused before the turn was active: again now

    def _hold_child_frame(self, method: str, raw: bytes) -> None:
        """Keep a notification of an agent thread that came between runs (its spawning
        run ended while it went on) for the next run, bounded."""
        held = self._held_children
        if len(held) < MAX_HELD_CHILD_FRAMES:
            held.append((method, raw))
        elif len(held) == MAX_HELD_CHILD_FRAMES:
            held.append(("", b""))  # the marker: logged once
            log.warning(
                "codex: agent threads sent more than %d messages between runs; dropped the rest",
                MAX_HELD_CHILD_FRAMES,
            )

    def _replay_held_children(self, run: CodexRun) -> None:
        """At a run's start: what agent threads sent since the last run ended, mapped in
        this run as it came (their tool calls under their spawn call)."""
        held, self._held_children = self._held_children, []
        for method, raw in held:
            if not method:
                continue
            try:
                thread_id = p.decode(p.Scope, raw).thread_id
            except _DECODE_ERRORS:
                continue
            child = self.tree.get(thread_id)
            if child is not None:
                self._child_record(run, child, method, raw)

    def _child_record(self, run: CodexRun, child: agents.Child, method: str, raw: bytes) -> None:
        """A notification of a child (agent) thread during a run: mapped on the child's
        own state and placed under its spawn call (see :mod:`.agents`); what carries
        nothing for the tree (its text, warnings, status) is left out."""
        run.raw = b'{"method":%s,"params":%s}' % (msgspec.json.encode(method), raw)
        try:
            payloads: list[ProviderPayload] = []
            if method in ("item/started", "item/completed"):
                item = p.decode(p.ItemNotification, raw).item
                started = method == "item/started"
                if agents.is_collab(item) or agents.is_activity(item):
                    parent = child.spawn_call
                    if agents.is_activity(item):
                        payloads = agents.activity(child.state, self.tree, item, parent)
                    elif started:
                        payloads = agents.collab_started(child.state, item, parent)
                    else:
                        payloads = agents.collab_completed(child.state, self.tree, item, parent)
                    run.emit_all(agents.child_payloads(child, payloads))
                    payloads = []
                    run.claim(agents.spawned(item))
                elif started:
                    payloads = mapping.item_started(child.state, item)
                else:
                    if item.get("type") == "agentMessage" and isinstance(item.get("text"), str):
                        child.last_message = item["text"]
                    payloads = mapping.item_completed(child.state, item)
            elif method in ("item/commandExecution/outputDelta", "item/fileChange/outputDelta"):
                payloads = mapping.output_delta(child.state, p.decode(p.DeltaNotification, raw))
            elif method == "thread/tokenUsage/updated":
                usage = p.decode(p.TokenUsageUpdated, raw).token_usage
                run.emit_all(agents.child_usage(child, usage.total.total_tokens))
            elif method == "turn/completed":
                turn = p.decode(p.TurnCompleted, raw).turn
                run.emit_all(agents.child_turn_ended(child, turn.status, turn.duration_ms))
            elif method in mapping.DIAGNOSTICS or method == "error":
                log.info("codex: %s from agent thread (spawned by %s)", method, child.spawn_call)
            run.emit_all(agents.child_payloads(child, payloads))
        except _DECODE_ERRORS:
            self._unexpected(method)
        finally:
            run.raw = None

    def _unexpected(self, method: str, dropped: list[str] | None = None) -> None:
        """Log and report (``codex_unexpected_message``, once a run) a message that could
        not be read, or of which the fields ``dropped`` were not kept."""
        if dropped:
            what = ", ".join(dropped)
            log.warning("codex: %s: not kept (wrong type or out of bounds): %s", method, what)
        else:
            log.warning("codex: %s did not have the expected shape", method)
        self._diagnose(
            ("unexpected", method),
            Diagnostic(
                level="warning",
                code="codex_unexpected_message",
                message="Codex sent a message the adapter could not read; it was ignored",
            ),
        )

    def _declined(self, method: str, what: str) -> None:
        """Log and report (``codex_request_declined``, once a run for ``method``) a
        request declined without asking because it could not be shown whole: what is
        approved is what was shown (the values are not logged)."""
        log.warning("codex: %s: declined unasked (out of bounds)", method)
        self._diagnose(
            ("declined", method),
            Diagnostic(
                level="warning",
                code="codex_request_declined",
                message=f"Codex asked to approve {what} too large or malformed to show; declined",
            ),
        )

    def _diagnose(self, key: Any, diagnostic: Diagnostic) -> None:
        """Report ``diagnostic`` in the active run (once a run for ``key``), else at the
        start of the next."""
        run = self._run
        if run is not None and not run.finished:
            run.diagnose_once(key, diagnostic.level, diagnostic.code, diagnostic.message)
        else:
            self._queue_diagnostic(diagnostic)

    def _queue_diagnostic(self, diagnostic: Diagnostic) -> None:
        if len(self._pending_diagnostics) < _MAX_PENDING_DIAGNOSTICS:
            self._pending_diagnostics.append(diagnostic)

    def _log_upstream(self, method: str, raw: bytes) -> None:
        try:
            if method in ("configWarning", "deprecationNotice"):
                note = p.decode(p.ConfigWarning, raw)
                text = note.summary + (f" ({note.details})" if note.details else "")
            else:
                text = p.decode(p.WarningNotification, raw).message
        except _DECODE_ERRORS:
            text = "?"
        log.info("codex %s: %s", method, prose(text))

    def _on_settings(self, raw: bytes) -> None:
        """``thread/settings/updated`` of the session's thread: its model, approval
        policy, sandbox and effort are kept (``session/settings`` and the recovery record
        follow them; what may not be kept is dropped with a ``codex_unexpected_message``
        diagnostic: a model id that is empty, longer than ``session/configure`` takes or
        has a control character, an effort outside the known set, and what
        :meth:`_take_policies` refuses), and when the model or the mode (preset) it makes
        changed — Codex changed them itself; the overrides of a ``session/configure``
        were taken already — ``settings.updated`` is reported in the active run, else at
        the start of the next (without the frame as its raw record when something of it
        was dropped).  Another thread's (an agent's) settings are not the session's."""
        try:
            note = p.decode(p.ThreadSettingsUpdated, raw)
        except _DECODE_ERRORS:
            self._unexpected("thread/settings/updated")
            return
        update = note.thread_settings
        if update is None or note.thread_id is None or note.thread_id != self.thread_id:
            return
        # what is not kept would reach session/settings, the journal and the next turn
        model, effort = update.model, update.effort
        dropped: list[str] = []
        if model is not None and not mapping.model_id_ok(model):
            model = None
            dropped.append("model")
        if effort is not None and effort not in EFFORTS:
            effort = None
            dropped.append("effort")
        s = self.settings
        before = (s.model, mapping.mode_of(s.approval_policy, s.sandbox))
        s.model = model or s.model
        dropped += self._take_policies(update.approval_policy, update.sandbox_policy)
        if effort is not None:
            s.reasoning_effort = effort
        if dropped:
            self._unexpected("thread/settings/updated", dropped)
        after = (s.model, mapping.mode_of(s.approval_policy, s.sandbox))
        if after == before:
            return
        log.info("codex changed the thread's settings itself (model or approval mode)")
        payload = SettingsUpdated(model=after[0], mode=after[1])
        run = self._run
        if run is not None and not run.finished:
            if not dropped:
                run.raw = b'{"method":"thread/settings/updated","params":%s}' % raw
            try:
                run.emit(payload)
            finally:
                run.raw = None
        else:
            self._pending_settings = payload

    def _take_policies(self, approval: Any, sandbox: Any) -> list[str]:
        """Keep the approval policy and sandbox Codex reported (a thread response,
        ``thread/settings/updated``; ``None``: not reported, the session's stay) and
        return the names of those not kept.  A policy
        :func:`~agent_bridge.adapters.codex.mapping.approval_policy_of` refuses (another
        type, an object over its bounds) leaves the session's unknown: no mode, none in
        the recovery record or sent back to Codex.  A sandbox that names no mode (another
        value, or an object of a type not known here: ``externalSandbox``, a newer
        Codex's) leaves the session's as it was, and is reported: the session's mode may
        no longer be Codex's."""
        s = self.settings
        dropped: list[str] = []
        if approval is not None:
            s.approval_policy = mapping.approval_policy_of(approval)
            if s.approval_policy is None:
                dropped.append("approvalPolicy")
        if sandbox is not None:
            mode = mapping.sandbox_mode(sandbox)
            if mode is not None:
                s.sandbox = mode
            else:
                dropped.append("sandbox")
        return dropped

    def _on_rate_limits(self, raw: bytes) -> None:
        """``account/rateLimits/updated`` (account-wide, no thread): kept as the latest
        figures, and reported in the active run, else at the start of the next."""
        run = self._run
        if run is not None and run.turn_id is None:
            run.early.append(("account/rateLimits/updated", raw))  # the run's, once known
            return
        try:
            update = mapping.limits_payload(p.decode(p.RateLimitsUpdated, raw).rate_limits)
        except _DECODE_ERRORS:
            self._unexpected("account/rateLimits/updated")
            return
        if update is None:
            return
        merge_meters(self.limits, update.meters)
        if run is not None and not run.finished:
            run.raw = b'{"method":"account/rateLimits/updated","params":%s}' % raw
            run.emit(update)
            run.raw = None
        else:
            self._pending_limits = update

    async def read_limits(self) -> LimitsUpdated | None:
        """``account/rateLimits/read`` (for ``provider/limits``): the figures now, kept as
        the latest.  ``None`` when they are not available: Codex refuses the read
        without a ChatGPT login (API-key auth, another model provider; then it is not
        asked again in this session), or the child is not running or does not answer in
        time."""
        proc = self._proc
        if not self._limits_readable or self._disposed or proc is None or not proc.ready:
            return None
        try:
            read = await proc.call(
                "account/rateLimits/read",
                None,
                result_type=p.RateLimitsRead,
                timeout=CONTROL_TIMEOUT,
            )
        except (ConnectionClosed, RequestTimedOut):
            return None
        except RpcError as exc:
            if isinstance(exc.data, dict) and exc.data.get("reason") == "invalid_result":
                log.warning("codex: account/rateLimits/read answered an unexpected shape")
                return None
            self._limits_readable = False
            log.info("codex: rate limits are not available here: %s", prose(exc.message))
            return None
        update = mapping.read_limits_payload(read)
        if update is not None:
            merge_meters(self.limits, update.meters)
        return update

    def _between_runs(self, method: str, raw: bytes) -> None:
        """A notification while no run is active: warnings wait for the next run."""
        diagnostic = mapping.DIAGNOSTICS.get(method)
        if diagnostic is not None:
            self._log_upstream(method, raw)
            self._queue_diagnostic(diagnostic)

    def _on_agent_delta(self, run: CodexRun, method: str, raw: bytes) -> None:
        run.emit_all(mapping.agent_delta(run.state, p.decode(p.DeltaNotification, raw)))

    def _on_reasoning_delta(self, run: CodexRun, method: str, raw: bytes) -> None:
        run.emit_all(mapping.reasoning_delta(run.state, p.decode(p.DeltaNotification, raw)))

    def _on_summary_part(self, run: CodexRun, method: str, raw: bytes) -> None:
        run.emit_all(mapping.summary_part(p.decode(p.DeltaNotification, raw)))

    def _on_output_delta(self, run: CodexRun, method: str, raw: bytes) -> None:
        run.emit_all(mapping.output_delta(run.state, p.decode(p.DeltaNotification, raw)))

    def _on_item_started(self, run: CodexRun, method: str, raw: bytes) -> None:
        item = p.decode(p.ItemNotification, raw).item
        if self._on_activity(run, item):
            return
        if agents.is_collab(item):
            run.emit_all(agents.collab_started(run.state, item, None))
        else:
            run.emit_all(mapping.item_started(run.state, item))

    def _on_item_completed(self, run: CodexRun, method: str, raw: bytes) -> None:
        item = p.decode(p.ItemNotification, raw).item
        if self._on_activity(run, item):
            return
        if agents.is_collab(item):
            run.emit_all(agents.collab_completed(run.state, self.tree, item, None))
            self._claim_spawned(run, item)
        else:
            run.emit_all(mapping.item_completed(run.state, item))

    def _on_activity(self, run: CodexRun, item: dict[str, Any]) -> bool:
        """Report a sub-agent activity item (its start and its end read the same) and
        claim the threads it spawned; return whether ``item`` was one."""
        if not agents.is_activity(item):
            return False
        run.emit_all(agents.activity(run.state, self.tree, item, None))
        self._claim_spawned(run, item)
        return True

    @staticmethod
    def _claim_spawned(run: CodexRun, item: dict[str, Any]) -> None:
        """Claim the sub-agent threads ``item`` names as spawned by ``run``."""
        run.raw = None
        run.claim(agents.spawned(item))

    def _on_token_usage(self, run: CodexRun, method: str, raw: bytes) -> None:
        run.emit(mapping.usage_payload(p.decode(p.TokenUsageUpdated, raw)))

    def _on_plan(self, run: CodexRun, method: str, raw: bytes) -> None:
        run.emit(mapping.plan_payload(p.decode(p.PlanUpdated, raw)))

    def _on_turn_completed(self, run: CodexRun, method: str, raw: bytes) -> None:
        outcome = mapping.turn_outcome(
            p.decode(p.TurnCompleted, raw), run.last_error, self.limits.values(), time.time()
        )
        if outcome is not None:
            if self.thread_id is not None and run.turn_id is not None:
                # where a fork at this run's end cuts the thread (thread/fork lastTurnId)
                outcome = dataclasses.replace(
                    outcome, position={"threadId": self.thread_id, "turnId": run.turn_id}
                )
            run.finish(outcome)

    def _on_error(self, run: CodexRun, method: str, raw: bytes) -> None:
        note = p.decode(p.ErrorNotification, raw)
        log.info(
            "codex error (retry=%s, info=%s): %s",
            note.will_retry,
            note.error.codex_error_info,
            prose(note.error.message),
        )
        if note.will_retry:
            run.diagnose_once(
                "retrying", "warning", "codex_retrying", "Codex is retrying a failed model request"
            )
        else:
            run.last_error = note.error

    def _on_upstream_diagnostic(self, run: CodexRun, method: str, raw: bytes) -> None:
        self._log_upstream(method, raw)
        run.emit(mapping.DIAGNOSTICS[method])

    def _on_unmapped(self, run: CodexRun, method: str, raw: bytes) -> None:
        run.diagnose_once(
            ("unmapped", method),
            "info",
            "codex_unmapped_notification",
            f"Codex sent a {method} notification, which the adapter does not map",
        )

    def _on_resolved(self, raw: msgspec.Raw) -> None:
        try:
            note = p.decode(p.ServerRequestResolved, bytes(raw))
        except _DECODE_ERRORS:
            return
        key = note.request_id
        self._resolved.add(key)
        if len(self._resolved) > 1024:
            self._resolved.clear()
        run = self._run
        handle = None if run is None else run.pending.get(key)
        if handle is not None and handle.withdraw():
            log.info("codex resolved request %r itself; interaction withdrawn", key)

    # ------------------------------------------------------------------ server requests

    async def _run_for(self, thread_id: str, turn_id: str) -> CodexRun | None:
        """The active run a server request belongs to, or ``None``.  An agent thread's
        request while no run is active (the agent outlived the run that spawned it) waits
        for the next run and is asked there (``None`` if the session closes first)."""
        run = self._run
        child = self.tree.get(thread_id)
        if (run is None or run.finished) and child is not None:
            log.info("codex: an agent thread asks between runs; held for the next run")
            while not self._disposed and (run is None or run.finished):
                await self._run_started.wait()
                run = self._run
        if run is None or run.finished:
            return None
        if thread_id != self.thread_id and child is None:
            run.stray(thread_id, turn_id)
            return None
        if run.turn_id is None:
            with anyio.move_on_after(REQUEST_TIMEOUT):
                await run.turn_known.wait()
        if run.finished or run.turn_id is None:
            return None
        if child is None and turn_id and turn_id != run.turn_id:
            run.stray(thread_id, turn_id)
            return None
        return run

    async def _ask(
        self, run: CodexRun, request: InteractionRequest, thread_id: str
    ) -> InteractionOutcome:
        """Raise ``request`` in ``run`` (asked by the thread ``thread_id``: a child
        thread's approval names its spawn call) and wait for its outcome."""
        child = self.tree.get(thread_id) if thread_id != self.thread_id else None
        if child is not None and isinstance(request, ApprovalRequest):
            request = msgspec.structs.replace(request, parent_tool_call_id=child.spawn_call)
        key = _request_key()
        if key is not None and key in self._resolved:
            return InteractionOutcome("withdrawn")
        handle = run.ctx.open_interaction(request)
        if key is not None:
            run.pending[key] = handle
        try:
            return await handle.wait()
        finally:
            run.pending.pop(key, None)

    async def _on_command_approval(self, raw: msgspec.Raw) -> dict[str, Any]:
        params = p.decode(p.CommandApprovalParams, bytes(raw))
        run = await self._run_for(params.thread_id, params.turn_id)
        if run is None:
            return dict(mapping.DECLINE)
        if not mapping.command_request_ok(params):
            self._declined("item/commandExecution/requestApproval", "a command")
            return dict(mapping.DECLINE)
        request, session_ok = mapping.command_approval(params)
        outcome = await self._ask(run, request, params.thread_id)
        return mapping.command_reply(outcome, session_ok=session_ok)

    async def _on_file_change_approval(self, raw: msgspec.Raw) -> dict[str, Any]:
        params = p.decode(p.FileChangeApprovalParams, bytes(raw))
        run = await self._run_for(params.thread_id, params.turn_id)
        if run is None:
            return dict(mapping.DECLINE)
        if not mapping.file_change_request_ok(params):
            self._declined("item/fileChange/requestApproval", "file changes")
            return dict(mapping.DECLINE)
        child = self.tree.get(params.thread_id)
        state = child.state if child is not None else run.state
        call = state.tools.get(params.item_id)
        request = mapping.file_change_approval(params, call.detail if call is not None else None)
        return mapping.file_change_reply(await self._ask(run, request, params.thread_id))

    async def _on_permissions_approval(self, raw: msgspec.Raw) -> dict[str, Any]:
        params = p.decode(p.PermissionsApprovalParams, bytes(raw))
        if not mapping.permissions_request_ok(params):
            self._declined("item/permissions/requestApproval", "permissions")
            return mapping.permissions_reply(None, params)
        run = await self._run_for(params.thread_id, params.turn_id)
        if run is None:
            return mapping.permissions_reply(None, params)
        outcome = await self._ask(run, mapping.permissions_approval(params), params.thread_id)
        return mapping.permissions_reply(outcome, params)

    async def _on_user_input(self, raw: msgspec.Raw) -> dict[str, Any]:
        params = p.decode(p.UserInputParams, bytes(raw))
        run = await self._run_for(params.thread_id, params.turn_id)
        if run is None or not params.questions:
            return mapping.user_input_reply(params, None)
        outcome = await self._ask(run, mapping.user_input_request(params), params.thread_id)
        return mapping.user_input_reply(params, outcome)
