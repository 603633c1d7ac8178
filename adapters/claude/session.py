"""One Claude Code session: a resident ``claude`` child in bidirectional stream-json mode.

The session wires the adapter kit to Claude Code's protocol and mapping.  Its tasks are
all supervised (:class:`~agent_bridge.adapters.kit.tasks.TaskSupervisor`: an exception is
logged and fails the active run, never the bridge):

* the **reader** of the child's stdout (:func:`~agent_bridge.adapters.kit.ndjson.read_ndjson`):
  dispatches each frame through one table by its ``type``, correlates turn frames with the
  active run, settles the ledger, opens interactions.  It never writes to the child (a
  write can block while the child is itself blocked writing to us): every reply is sent
  from a task of its own;
* the **exit watcher** (:meth:`~agent_bridge.adapters.kit.resident.ResidentChild.watch_exit`):
  once the child has exited, gives the reader a moment to drain and then ends it (a
  grandchild holding the pipe cannot keep the session hanging);
* the **ledger clock**: settles our control requests at their deadline;
* one task per ``can_use_tool`` request, waiting for the host's answer.

Correlation: the CLI handles user messages one after the other and ends each with one
``result``.  A turn frame belongs to the active run only while that run's ``result`` is
outstanding and its ``session_id`` is this session's; anything else (a frame while idle, a
frame of another session, a reply to a request we never sent) is a diagnostic of the
current run (or only logged when no run is active), never another run's completion.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import anyio
import msgspec

from agent_bridge.adapters.claude import mapping, protocol
from agent_bridge.adapters.claude.launch import (
    PERMISSION_MODES,
    LaunchConfig,
    build_argv,
    child_env,
    valid_session_id,
)
from agent_bridge.adapters.kit.limits import merge_meters
from agent_bridge.adapters.kit.ndjson import read_ndjson
from agent_bridge.adapters.kit.resident import ResidentChild, StopGraces, start_resident
from agent_bridge.adapters.kit.runs import RunHandle
from agent_bridge.adapters.kit.tasks import TaskSupervisor
from agent_bridge.errors import BridgeError, ProviderFailure
from agent_bridge.processes import ProcessSpec
from agent_bridge.rpc.errors import RpcError
from agent_bridge.rpc.framing import FramingError
from agent_bridge.rpc.ledger import Ledger, LedgerEntry
from agent_bridge.spi import (
    InteractionHandle,
    ProviderRun,
    ProviderSession,
    RunContext,
    RunOutcome,
    SessionContext,
)
from agent_bridge.wire.errors import ErrorCode
from agent_bridge.wire.events import CommandsUpdated, Diagnostic, LimitMeter, ProviderPayload
from agent_bridge.wire.inputs import CommandInfo
from agent_bridge.wire.methods import RunInput
from agent_bridge.wire.settings import SessionSetting, SessionSettings, SettingValue

__all__ = ["ClaudeRun", "ClaudeSession"]

log = logging.getLogger("agent_bridge.provider.claude")

#: Longest stdout line accepted from the CLI (tool results can be large).
MAX_LINE: Final = 64 * 1024 * 1024
#: How long the CLI has to acknowledge an ``interrupt`` (the runtime bounds the run
#: itself with its own grace period; this only settles the ledger entry).
INTERRUPT_ACK_TIMEOUT: Final = 10.0
#: How long the CLI may take to answer set_model / set_permission_mode.
CONTROL_TIMEOUT: Final = 10.0
#: After the child exits, how long the reader may still drain buffered output.
EXIT_DRAIN_GRACE: Final = 2.0
#: A write to the child's stdin that cannot complete in this time means it is stuck.
SEND_TIMEOUT: Final = 30.0
STOP_GRACES: Final = StopGraces(eof=2.0, term=2.0, kill=2.0)
#: Stray, unparseable or oversized lines reported in one run, of each kind.
MAX_NOTED: Final = 16
#: Unknown record types reported in one run (each once, by its first 40 characters).
MAX_UNKNOWN_TYPES: Final = 16

_Handler = Callable[[dict[str, Any]], Awaitable[None]]
_TurnHandler = Callable[["ClaudeRun", dict[str, Any]], Awaitable[None]]


class _Gone(Exception):
    """The child can no longer be written to."""


@dataclass(eq=False)
class _Pending:
    """One ``can_use_tool`` request of the CLI and the interaction it became."""

    cli_id: str
    run: ClaudeRun
    handle: InteractionHandle
    permission: mapping.Permission
    #: Set once the request needs no (further) reply: answered, or withdrawn.
    closed: bool = False


class ClaudeRun(RunHandle):
    """One turn: a user message sent to the CLI, ended by its ``result``."""

    def __init__(self, session: ClaudeSession, ctx: RunContext) -> None:
        super().__init__()
        self.session = session
        self.ctx = ctx
        self.interrupt_sent = False
        self.state = mapping.TurnState()
        #: the uuid of the main thread's latest assistant message (where a fork cuts)
        self.last_uuid: str | None = None

    @property
    def interrupting(self) -> bool:
        """Whether this run is being interrupted (asked by the host or sent to the CLI)."""
        return self.interrupt_sent or self.ctx.interrupt_requested

    async def interrupt(self, reason: str) -> None:
        await self.session.interrupt_run(self)

    def finish(self, outcome: RunOutcome, *, emit: bool = True) -> bool:
        """End the run once; with ``emit`` (and the session not disposed), every tool call
        still open is first reported ``failed``, so each call a host saw start ends
        before the run's terminal event, whichever way the run ended."""
        if self.finished:
            return False
        if emit and not self.session.disposed:
            closing = mapping.open_tools_failed(self.state)
            if closing:
                try:
                    self.ctx.emit_nowait_many(closing)
                except Exception:  # the runtime never raises here; be safe anyway
                    log.exception("claude: emit failed")
        return super().finish(outcome)


class ClaudeSession(ProviderSession):
    """A resident ``claude`` child and the state of its conversation."""

    def __init__(
        self,
        ctx: SessionContext,
        config: LaunchConfig,
        *,
        cli_session_id: str | None = None,
        usage: Mapping[str, Any] | None = None,
        fork_from: tuple[str, str | None] | None = None,
    ) -> None:
        self._ctx = ctx
        self._config = config
        self._cli_session_id = cli_session_id
        #: whether the CLI named its session with an id that is not kept, and whether
        #: that is still to be reported (once a session)
        self._unusable_id_seen = False
        self._unusable_id_due = False
        #: ``(session id, assistant uuid)`` this session forks until its first turn ends
        #: (the CLI writes the forked conversation then): every start before that forks
        self._fork_from = fork_from
        #: Whether the CLI has a transcript for ``_cli_session_id`` (a turn ended), so
        #: ``--resume`` can find it.
        self._has_transcript = cli_session_id is not None
        self._ledger = Ledger()
        self._ledger_changed = anyio.Event()
        self._write_lock = anyio.Lock()
        self._tasks = TaskSupervisor(
            ctx.task_group, log, owner="claude session", on_failure=self._task_failed
        )
        self._resident: ResidentChild | None = None
        self._alive = False
        self._starting = False
        self._startup_result = False
        self._disposed = False
        self._clock_started = False
        self._run: ClaudeRun | None = None
        self._expect_results = 0
        self._permissions: dict[str, _Pending] = {}
        self._model: str | None = None
        #: the CLI's commands (its initialize answer, kept current by each turn's init)
        self._commands: tuple[CommandInfo, ...] | None = None
        #: the models the CLI's initialize answer offered
        self._models: tuple[SettingValue, ...] = ()
        #: The model endpoint the CLI talks to, as retry notices name it.
        self._endpoint = "the model endpoint"
        #: The stdout line being handled: the raw record of the payloads it produces.
        self._raw: bytes | None = None
        self._usage = mapping.UsageTotals.from_record(usage)
        #: the latest figures of every limit meter the CLI reported (``rate_limit_event``)
        self._limits: dict[tuple[str, str], LimitMeter] = {}
        turn: dict[str, _TurnHandler] = {
            "system": self._on_system,
            "stream_event": self._on_stream_event,
            "assistant": self._on_assistant,
            "user": self._on_user,
            "result": self._on_result,
        }
        #: The one dispatch: record ``type`` → handler (turn frames are correlated first).
        self._handlers: dict[str, _Handler] = {
            "control_response": self._on_control_response,
            "control_request": self._on_control_request,
            "control_cancel_request": self._on_control_cancel,
            "rate_limit_event": self._on_rate_limit,
            **{kind: functools.partial(self._on_turn_frame, fn) for kind, fn in turn.items()},
        }

    # ------------------------------------------------------------------ lifecycle

    async def start(self, resume: str | None = None) -> None:
        """Spawn the CLI and complete the ``initialize`` handshake (bounded)."""
        fork = self._fork_from if resume is None and not self._has_transcript else None
        argv = build_argv(self._config, resume, fork)
        env = child_env(self._config.config_dir)
        self._endpoint = mapping.endpoint_label(env)
        spec = ProcessSpec(argv, cwd=self._config.cwd, env=env, name="claude")
        resident = await start_resident(
            spec,
            self._ctx.task_group,
            log=log,
            label="claude",
            missing="claude executable",
            graces=STOP_GRACES,
        )
        log.info("claude (pid %d): resume=%s", resident.pid, resume is not None)
        self._resident = resident
        self._alive = True
        self._expect_results = 0
        self._usage.process_cost = 0.0
        self._startup_result = False
        if not self._clock_started:
            self._clock_started = True
            self._tasks.start(self._ledger_clock)
        reader_scope = anyio.CancelScope()
        self._tasks.start(self._read_loop, resident, reader_scope, name="reader")
        resident.watch_exit(
            self._tasks,
            drain_grace=EXIT_DRAIN_GRACE,
            on_held_open=lambda _status: reader_scope.cancel(),
        )
        self._starting = True
        try:
            await self._initialize(resume if fork is None else fork[0])
        except BaseException:
            with anyio.CancelScope(shield=True):
                self._alive = False
                await resident.stop(eof_grace=0.2)
                self._ledger.fail_all("claude start-up failed")
                resident.log_exit("during start-up")
            raise
        finally:
            self._starting = False

    async def _initialize(self, resume: str | None) -> None:
        timeout = self._config.startup_timeout
        entry, settled = self._open("initialize", timeout)
        request = {"subtype": "initialize", "hooks": None}
        # If the child is already gone, the reader sees the EOF and fails the entry.
        with contextlib.suppress(_Gone):
            await self._write(
                protocol.control_request(f"{protocol.CLIENT_ID_PREFIX}{entry.id}", request)
            )
        await settled.wait()
        if entry.state == "result":
            info = entry.result if isinstance(entry.result, dict) else {}
            self._commands = mapping.commands_of(info.get("commands"))
            self._models = mapping.models_of(info.get("models"))
            account = info.get("account")
            if isinstance(account, dict):
                log.info(
                    "claude initialized (apiKeySource=%s, tokenSource=%s)",
                    _word(account.get("apiKeySource")),
                    _word(account.get("tokenSource")),
                )
            return
        if entry.state == "timeout":
            raise ProviderFailure(
                "provider_timeout", f"no initialize response within {timeout:.0f} s"
            )
        if entry.state == "closed":
            if resume is not None and self._startup_result:
                log.warning("claude could not resume its session (no such conversation here)")
                raise BridgeError("recovery_invalid")
            raise ProviderFailure("provider_crashed", "claude exited during start-up")
        raise ProviderFailure("provider_failed", "claude refused the initialize request")

    async def _restart(self) -> None:
        """Start a new child for this session after the previous one ended."""
        old = self._resident
        if old is not None:
            await old.stop()
        resume = self._cli_session_id if self._has_transcript else None
        try:
            await self.start(resume)
        except BridgeError as exc:
            code = exc.error_code
            if code == "recovery_invalid":
                code = "provider_failed"
            raise ProviderFailure(code, "claude could not be restarted") from None

    async def dispose(self) -> None:
        try:
            self._disposed = True
            self._withdraw_permissions(None)
            resident = self._resident
            if resident is not None:
                # Stdin EOF ends an idle CLI at once, but a CLI in a turn first finishes
                # the turn: with a run still active, go to SIGTERM quickly.
                busy = self._active_run() is not None
                await resident.stop(eof_grace=0.2 if busy else 2.0)
            self._alive = False
            self._ledger.fail_all("session disposed")
            run = self._run
            if run is not None and not run.finished:
                run.finish(
                    RunOutcome.interrupted()
                    if run.interrupting
                    else RunOutcome.failed("session_closed", "session disposed during the run")
                )
            self._tasks.cancel_all()
        except Exception:
            log.exception("claude session: dispose failed")

    @property
    def disposed(self) -> bool:
        """Whether :meth:`dispose` was called (nothing more is emitted)."""
        return self._disposed

    def _flag(self, name: str) -> str | None:
        prefix = f"--{name}="
        return next((f[len(prefix) :] for f in self._config.flags if f.startswith(prefix)), None)

    def model_and_mode(self) -> SessionSettings | None:
        """The model (the chosen alias or name; the models the CLI's ``initialize``
        offered, any other name it knows is taken too) and the permission mode."""
        model = self._flag("model")
        if model is None and any(m.id == "default" for m in self._models):
            model = "default"
        modes = tuple(SettingValue(m) for m in PERMISSION_MODES)
        return SessionSettings(
            SessionSetting(model, self._models),
            SessionSetting(self._config.permission_mode, modes),
        )

    async def configure(self, model: str | None, mode: str | None) -> None:
        """``set_permission_mode`` and ``set_model`` control requests, answered before
        this returns; a restarted CLI starts with them (its flags follow).  Raises
        ``invalid_params`` for a permission mode the CLI has not, ``provider_failed``
        when the CLI refuses, ``provider_crashed`` when it is gone."""
        if mode is not None and mode not in PERMISSION_MODES:
            reason = "not a permission mode of Claude Code"
            raise BridgeError("invalid_params", details={"field": "mode", "reason": reason})
        if not self._alive:
            raise ProviderFailure("provider_crashed", "claude is no longer running")
        if mode is not None:
            await self._control({"subtype": "set_permission_mode", "mode": mode})
        if model is not None:
            await self._control({"subtype": "set_model", "model": model})
        flags = [
            f
            for f in self._config.flags
            if not (
                (model is not None and f.startswith("--model="))
                or (mode is not None and f.startswith("--permission-mode="))
            )
        ]
        if model is not None:
            flags.append(f"--model={model}")
        if mode is not None and mode != "default":
            flags.append(f"--permission-mode={mode}")
        self._config = dataclasses.replace(
            self._config,
            flags=tuple(flags),
            permission_mode=mode if mode is not None else self._config.permission_mode,
        )

    async def _control(self, request: dict[str, Any]) -> None:
        """Send a control request and wait for its answer (bounded)."""
        subtype = str(request["subtype"])
        entry, settled = self._open(subtype, CONTROL_TIMEOUT)
        try:
            await self._write(
                protocol.control_request(f"{protocol.CLIENT_ID_PREFIX}{entry.id}", request)
            )
        except _Gone:
            self._ledger.cancel(entry.id, "claude is gone")
            raise ProviderFailure("provider_crashed", "claude is no longer running") from None
        await settled.wait()
        if entry.state != "result":
            log.warning("claude did not accept %s (%s)", subtype, entry.state)
            raise ProviderFailure("provider_failed", f"{subtype} was not accepted")

    def commands(self) -> tuple[CommandInfo, ...] | None:
        """The CLI's slash commands, custom commands and skills (its ``initialize``
        answer, kept current by each turn's ``init``)."""
        return self._commands

    def export_recovery_record(self) -> Any:
        record = {
            "v": 1,
            "sessionId": self._cli_session_id if self._has_transcript else None,
            "cwd": self._config.cwd,
            "configDir": self._config.config_dir,
            "usage": self._usage.record(),
        }
        if self._fork_from is not None and not self._has_transcript:
            source, at = self._fork_from
            record["forkOf"] = {"sessionId": source, "at": at}
        return record

    # ------------------------------------------------------------------ runs

    async def start_run(
        self, input: RunInput, options: Mapping[str, Any], ctx: RunContext
    ) -> ProviderRun:
        if self._disposed:
            raise BridgeError("session_closed")
        if self._run is not None and not self._run.finished:
            raise BridgeError("run_active")
        try:
            frame = msgspec.json.encode(protocol.user_message(mapping.user_content(input)))
        except UnicodeEncodeError:
            raise BridgeError("invalid_params") from None
        if not self._alive:
            await self._restart()
        run = ClaudeRun(self, ctx)
        self._run = run
        self._expect_results += 1
        try:
            await self._write_bytes(frame + b"\n")
        except _Gone:
            run.finish(RunOutcome.failed("provider_crashed", "could not write the prompt"))
        return run

    async def interrupt_run(self, run: ClaudeRun) -> None:
        """Send ``interrupt`` to the CLI (its acknowledgement is not awaited)."""
        if run.finished or not self._alive or run is not self._run:
            return
        entry, _ = self._open("interrupt", INTERRUPT_ACK_TIMEOUT)
        run.interrupt_sent = True
        try:
            await self._write(
                protocol.control_request(
                    f"{protocol.CLIENT_ID_PREFIX}{entry.id}", {"subtype": "interrupt"}
                )
            )
        except _Gone:
            self._ledger.cancel(entry.id, "claude is gone")

    def _task_failed(self, code: ErrorCode, detail: str) -> None:
        """A supervised task failed: the active run ends with ``code``."""
        run = self._active_run()
        if run is not None:
            run.finish(RunOutcome.failed(code, detail))

    # ------------------------------------------------------------------ ledger

    async def _ledger_clock(self) -> None:
        while True:
            changed = self._ledger_changed = anyio.Event()
            deadline = self._ledger.next_deadline()
            if deadline is None:
                await changed.wait()
            else:
                with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
                    await changed.wait()
            for entry in self._ledger.expire(anyio.current_time()):
                log.warning("claude did not answer %s in time", entry.method)

    def _open(self, method: str, timeout: float) -> tuple[LedgerEntry[Any], anyio.Event]:
        settled = anyio.Event()
        entry: LedgerEntry[Any] = self._ledger.open(
            method,
            dict[str, Any],
            deadline=anyio.current_time() + timeout,
            on_settle=lambda _entry: settled.set(),
        )
        self._ledger_changed.set()
        return entry, settled

    # ------------------------------------------------------------------ the child

    async def _read_loop(self, resident: ResidentChild, reader_scope: anyio.CancelScope) -> None:
        try:
            with reader_scope:
                await read_ndjson(resident.child.stdout, self._on_frame, max_line=MAX_LINE)
        finally:
            resident.mark_output_ended()
        await self._on_output_ended(resident)

    async def _on_output_ended(self, resident: ResidentChild) -> None:
        """The child's stdout ended: fail what is pending, fail the active run as crashed,
        log the (redacted) stderr tail, and make sure the process is gone."""
        if resident is not self._resident:
            return
        self._alive = False
        self._ledger.fail_all("claude exited")
        if self._disposed or self._starting:
            return  # dispose / start() stop the child themselves
        run = self._run
        self._withdraw_permissions(None)
        if run is not None and not run.finished:
            with anyio.move_on_after(0.5):
                await resident.child.wait()
            details = {"cause": "cli_exited"}
            if resident.returncode is not None:
                details["exitStatus"] = str(resident.returncode)
            run.finish(
                RunOutcome.failed(
                    "provider_crashed",
                    f"claude ended its output; stderr tail: {resident.stderr_tail().strip()}",
                    details,
                )
            )
        # It may still be running with its stdout closed: make sure it is gone.
        await resident.stop(eof_grace=0.5)
        resident.log_exit("unexpectedly")

    async def _write(self, message: Mapping[str, Any]) -> None:
        await self._write_bytes(msgspec.json.encode(message) + b"\n")

    async def _write_bytes(self, data: bytes) -> None:
        resident = self._resident
        if resident is None or not self._alive:
            raise _Gone
        try:
            async with self._write_lock:
                with anyio.fail_after(SEND_TIMEOUT):
                    await resident.child.stdin.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, TimeoutError) as exc:
            raise _Gone from exc

    async def _write_quietly(self, message: Mapping[str, Any]) -> None:
        try:
            await self._write(message)
        except _Gone:
            log.debug("claude is gone; a control reply was dropped")

    # ------------------------------------------------------------------ reading

    def _active_run(self) -> ClaudeRun | None:
        run = self._run
        return run if run is not None and not run.finished else None

    async def _emit(self, run: ClaudeRun | None, payload: ProviderPayload) -> None:
        """Emit ``payload`` for ``run`` with the line it came from as its raw record."""
        if run is not None and not run.finished and not self._disposed:
            await run.ctx.emit(payload, self._raw)

    async def _note(self, run: ClaudeRun | None, diagnostic: Diagnostic) -> None:
        """Report a line the adapter could not use (stray, unparseable, oversized) in
        ``run``, with the line as its raw record: the first :data:`MAX_NOTED` of each kind
        a run; after that only logged, so a CLI printing junk cannot grow the journal
        without bound."""
        if run is None:
            return
        seen = run.state.noted.get(diagnostic.code, 0)
        if seen < MAX_NOTED:
            run.state.noted[diagnostic.code] = seen + 1
            await self._emit(run, diagnostic)

    async def _emit_all(self, run: ClaudeRun, payloads: list[ProviderPayload]) -> None:
        """Emit the payloads projected from one line, in one call (each its own event)."""
        if payloads and not run.finished and not self._disposed:
            await run.ctx.emit_many(payloads, self._raw)

    async def _stray(self, what: str) -> None:
        run = self._active_run()
        log.info("claude: ignored a stray %s record (run active: %s)", what, run is not None)
        await self._note(run, mapping.STRAY)

    async def _on_frame(self, frame: bytes | FramingError) -> None:
        if isinstance(frame, FramingError):
            log.warning("claude wrote a line longer than %d bytes; skipped it", MAX_LINE)
            await self._note(self._active_run(), mapping.OVERSIZED)
            return
        self._raw = frame
        try:
            await self._dispatch(frame)
        finally:
            self._raw = None

    async def _dispatch(self, line: bytes) -> None:
        try:
            message = msgspec.json.decode(line)
        except (msgspec.DecodeError, RecursionError):  # nested too deep: not readable
            message = None
            cli_id = protocol.unreadable_request_id(line)
            if cli_id is not None:
                # the CLI waits for the answer to its request: it is declined, unread
                log.warning("claude: a control request it could not read was declined")
                self._tasks.start(self._write_quietly, protocol.control_error(cli_id))
        if not isinstance(message, dict):
            log.info("claude: ignored a line that is not a JSON object (%d bytes)", len(line))
            await self._note(self._active_run(), mapping.UNPARSEABLE)
            return
        kind = message.get("type")
        try:
            handler = self._handlers.get(kind) if isinstance(kind, str) else None
            if handler is not None:
                await handler(message)
            elif kind not in protocol.IGNORED_TYPES:
                await self._on_unknown(kind)
        except (KeyError, TypeError, ValueError, AttributeError):
            log.exception("claude: a %s record could not be handled", _word(kind))
            await self._note(self._active_run(), mapping.UNPARSEABLE)

    async def _on_turn_frame(self, handler: _TurnHandler, message: dict[str, Any]) -> None:
        run = self._correlate(message)
        if run is not None and self._unusable_id_due:
            self._unusable_id_due = False
            log.warning("claude named its session with an id that is not kept (not logged)")
            await self._emit_bare(run, mapping.SESSION_ID_UNUSABLE)
        if run is not None:
            await handler(run, message)
        elif self._switched(message):
            await self._on_switched()
        else:
            await self._stray(str(message.get("type")))

    def _switched(self, message: dict[str, Any]) -> bool:
        """Whether ``message`` begins a turn of the active run in another conversation:
        the CLI names its session in the ``system``/``init`` that starts every turn, so
        an init naming another session id while the run waits for its result means
        every frame of the turn will be another session's, its ``result`` included.
        (A stray frame of another session is only a diagnostic.)"""
        sid = message.get("session_id")
        return (
            self._active_run() is not None
            and self._expect_results > 0
            and self._cli_session_id is not None
            and message.get("type") == "system"
            and message.get("subtype") == "init"
            and isinstance(sid, str)
            and sid != self._cli_session_id
        )

    async def _on_switched(self) -> None:
        """The CLI went on in another conversation: the active run fails
        ``provider_contract`` (its result would never be taken) and the CLI is stopped,
        so the next run starts a new one on this session's conversation (``--resume``)."""
        run = self._active_run()
        resident = self._resident
        log.warning("claude began a turn in another conversation; stopping it")
        await self._emit(run, mapping.SWITCHED)
        self._alive = False
        self._withdraw_permissions(None)
        if run is not None:
            run.finish(
                RunOutcome.failed(
                    "provider_contract",
                    "claude began the turn in a conversation that is not this session's",
                )
            )
        if resident is not None:
            self._tasks.start(resident.stop, name="stop")

    def _correlate(self, message: dict[str, Any]) -> ClaudeRun | None:
        """The run this turn frame belongs to, or ``None`` (a stray)."""
        kind = message.get("type")
        run = self._active_run()
        if run is None or self._expect_results <= 0:
            if self._starting and kind == "result":
                self._startup_result = True
            return None
        sid = message.get("session_id")
        if self._cli_session_id is None:
            if kind == "result" or (kind == "system" and message.get("subtype") == "init"):
                if valid_session_id(sid):
                    self._cli_session_id = sid
                elif sid is not None and not self._unusable_id_seen:
                    self._unusable_id_seen = self._unusable_id_due = True
        elif isinstance(sid, str) and sid != self._cli_session_id:
            return None
        return run

    async def _on_unknown(self, kind: object) -> None:
        run = self._active_run()
        name = kind[:40] if isinstance(kind, str) else "?"
        log.info("claude: ignored a record of unknown type %r", name)
        known = run.state.unknown_types if run is not None else None
        # reported once per type and run, for the first few types: the CLI chooses the
        # names, so what is kept of them (and reported) is bounded
        if known is not None and name not in known and len(known) < MAX_UNKNOWN_TYPES:
            known.add(name)
            await self._emit(run, mapping.UNKNOWN)

    async def _on_system(self, run: ClaudeRun, message: dict[str, Any]) -> None:
        subtype = message.get("subtype")
        if subtype == "init":
            model = message.get("model")
            if isinstance(model, str):
                self._model = model
            commands = mapping.commands_after_init(self._commands, message.get("slash_commands"))
            if commands is not None:
                self._commands = commands
                await self._emit(run, CommandsUpdated(commands))
        elif subtype == "api_retry":
            delay = mapping.retry_hint(message)
            if delay is not None:
                run.state.retry_after, run.state.retry_at = delay, time.time()
            await self._emit(run, mapping.retry_diagnostic(message, self._endpoint))
        elif subtype in ("task_started", "task_progress", "task_notification"):
            await self._emit_all(run, mapping.task_payloads(run.state, message))

    async def _on_rate_limit(self, message: dict[str, Any]) -> None:
        """A ``rate_limit_event`` (whenever the CLI's view of its limits changes, in a
        turn or not): kept as the latest figures and reported in the active run."""
        update = mapping.limits_payload(message.get("rate_limit_info"))
        if update is not None:
            merge_meters(self._limits, update.meters)
            run = self._active_run()
            if run is not None:
                await self._emit(run, update)

    async def _on_stream_event(self, run: ClaudeRun, message: dict[str, Any]) -> None:
        await self._emit_all(run, mapping.stream_event_payloads(run.state, message))

    async def _on_assistant(self, run: ClaudeRun, message: dict[str, Any]) -> None:
        uuid = message.get("uuid")
        main = message.get("parent_tool_use_id") is None and valid_session_id(uuid)
        if main:
            run.last_uuid = uuid
        await self._emit_all(run, mapping.assistant_payloads(run.state, message))
        if main and self._cli_session_id is not None:
            # the CLI's history is complete through this message: a fork at any event
            # from here to the next one cuts the conversation after it
            run.ctx.checkpoint({"sessionId": self._cli_session_id, "at": uuid})

    async def _on_user(self, run: ClaudeRun, message: dict[str, Any]) -> None:
        await self._emit_all(run, mapping.tool_result_payloads(run.state, message))

    async def _on_result(self, run: ClaudeRun, message: dict[str, Any]) -> None:
        self._expect_results -= 1
        if self._cli_session_id is not None:
            self._has_transcript = True
        self._withdraw_permissions(run)
        await self._emit(run, mapping.usage_payload(self._usage, run.state, message, self._model))
        outcome = mapping.classify_result(
            message,
            interrupting=run.interrupting,
            assistant_error=run.state.assistant_error,
            limits=mapping.LimitHints(
                tuple(self._limits.values()),
                run.state.retry_after,
                run.state.retry_at,
                time.time(),
            ),
        )
        if self._cli_session_id is not None and run.last_uuid is not None:
            # where a fork at this run's end cuts the CLI's conversation
            outcome = dataclasses.replace(
                outcome, position={"sessionId": self._cli_session_id, "at": run.last_uuid}
            )
        if outcome.state == "failed" and self._resident is not None:
            tail = self._resident.stderr_tail().strip()
            if tail:
                outcome = dataclasses.replace(
                    outcome, detail=f"{outcome.detail}; stderr tail: {tail}"
                )
        run.finish(outcome)

    # ------------------------------------------------------------------ control

    async def _on_control_response(self, message: dict[str, Any]) -> None:
        response = message.get("response")
        if not isinstance(response, dict):
            await self._stray("control_response")
            return
        ledger_id = protocol.parse_client_id(response.get("request_id"))
        entry: LedgerEntry[Any] | None = None
        if ledger_id is not None:
            if response.get("subtype") == "success":
                body = response.get("response")
                entry = self._ledger.settle_result(
                    ledger_id, msgspec.json.encode(body if isinstance(body, dict) else {})
                )
            else:
                entry = self._ledger.settle_error(
                    ledger_id, RpcError(-32000, "claude refused the control request")
                )
                if entry is not None:
                    log.warning("claude refused our %s request", entry.method)
        if entry is None:
            await self._stray("control_response")

    async def _on_control_request(self, message: dict[str, Any]) -> None:
        cli_id = message.get("request_id")
        request = message.get("request")
        if not isinstance(cli_id, str) or not cli_id:
            log.warning("claude sent a control request without a request id; ignored")
            await self._note(self._active_run(), mapping.UNPARSEABLE)
            return
        subtype = request.get("subtype") if isinstance(request, dict) else None
        if subtype == "can_use_tool" and isinstance(request, dict):
            await self._on_can_use_tool(cli_id, request)
            return
        kind = _word(subtype)
        log.info("claude: declined a control request of subtype %r", kind)
        self._tasks.start(self._write_quietly, protocol.control_error(cli_id))
        # reported once per subtype and run (the first few subtypes), without the request
        # as its raw record: nothing of what was declined is journaled
        run = self._active_run()
        seen = run.state.declined_subtypes if run is not None else None
        if seen is not None and kind not in seen and len(seen) < MAX_UNKNOWN_TYPES:
            seen.add(kind)
            await self._emit_bare(run, mapping.DECLINED)

    async def _emit_bare(self, run: ClaudeRun | None, payload: ProviderPayload) -> None:
        """Emit ``payload`` for ``run`` without a raw record."""
        if run is not None and not run.finished and not self._disposed:
            await run.ctx.emit(payload)

    async def _on_can_use_tool(self, cli_id: str, request: dict[str, Any]) -> None:
        if cli_id in self._permissions:
            log.warning("claude repeated a permission request; ignored")
            return
        run = self._active_run()
        if run is None:
            log.warning("claude asked for a tool permission while no run is active; denied")
            deny = protocol.control_success(cli_id, protocol.deny_reply())
            self._tasks.start(self._write_quietly, deny)
            return
        if not mapping.tool_request_ok(request):
            # What is approved is what was shown: a request that cannot be shown whole is
            # denied unasked, and nothing of it is journaled (the diagnostic has no raw
            # record; the values are not logged).
            log.warning("claude: a tool permission request out of bounds; declined unasked")
            deny = protocol.control_success(cli_id, protocol.deny_reply())
            self._tasks.start(self._write_quietly, deny)
            if not run.state.declined_reported:
                run.state.declined_reported = True
                await self._emit_bare(run, mapping.REQUEST_DECLINED)
            return
        permission = mapping.permission_request(request, self._config.cwd, run.state)
        handle = run.ctx.open_interaction(permission.interaction)
        pending = _Pending(cli_id, run, handle, permission)
        self._permissions[cli_id] = pending
        self._tasks.start(self._answer_permission, pending)

    async def _answer_permission(self, pending: _Pending) -> None:
        outcome = await pending.handle.wait()
        if pending.closed:
            return
        pending.closed = True
        self._permissions.pop(pending.cli_id, None)
        reply = mapping.permission_reply(
            pending.permission, outcome, interrupt=pending.run.ctx.interrupt_requested
        )
        await self._write_quietly(protocol.control_success(pending.cli_id, reply))

    async def _on_control_cancel(self, message: dict[str, Any]) -> None:
        pending = self._permissions.pop(str(message.get("request_id")), None)
        if pending is None:
            log.debug("claude cancelled a request that is not pending")
            return
        pending.closed = True
        pending.handle.withdraw()

    def _withdraw_permissions(self, run: ClaudeRun | None) -> None:
        """Withdraw the pending permission requests of ``run`` (all when ``None``): the
        CLI no longer waits for them, so no reply is sent."""
        for cli_id, pending in list(self._permissions.items()):
            if run is None or pending.run is run:
                del self._permissions[cli_id]
                pending.closed = True
                pending.handle.withdraw()


def _word(value: object) -> str:
    """A short, safe rendering of an identifier-like value for the log."""
    if isinstance(value, str) and len(value) <= 40 and value.replace("_", "").isalnum():
        return value
    return "-" if value is None else "?"
