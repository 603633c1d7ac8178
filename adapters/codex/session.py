"""One Codex session: a resident ``codex app-server`` child and one thread in it.

The child speaks newline-delimited JSON-RPC without a ``"jsonrpc"`` member.  The adapter
drives it with the project's own :class:`rpc.connection.Connection` (the same engine and
request-ID ledger the bridge uses toward hosts): requests it sends (``initialize``,
``thread/start``/``thread/resume``, ``turn/start``, ``turn/steer``, ``turn/interrupt``)
are recorded in the ledger and all fail at once at EOF; server→client requests it
understands become bridge interactions, every other one is answered ``-32601`` by the
connection; notifications become events.

Correlation: every notification and server request carries a ``threadId`` and most a
``turnId``.  Anything for another thread, or for another turn of this thread while a run
is active, never touches the run: it becomes one ``codex_stray_frame`` diagnostic per
(thread, turn) and is dropped.  Frames that arrive while ``turn/start`` is still in
flight (its result names the turn) are held and replayed in order once the id is known.

Upstream text (warnings, error messages, stderr) goes to the log, redacted; events carry
fixed diagnostic codes and messages only.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import anyio
import anyio.abc
import msgspec

from agent_bridge import __version__ as BRIDGE_VERSION
from agent_bridge.adapters.codex import protocol as p
from agent_bridge.adapters.codex.discovery import parse_version
from agent_bridge.errors import BridgeError, ProviderFailure
from agent_bridge.processes import ChildProcess, ProcessSpec, SpawnError, redact, spawn
from agent_bridge.rpc.connection import Connection, Method, current_request_id
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
    ContextUsage,
    CumulativeUsage,
    Diagnostic,
    PlanStep,
    PlanUpdated,
    ProviderPayload,
    TextDelta,
    ThinkingDelta,
    ToolActivity,
    Usage,
)
from agent_bridge.wire.interactions import (
    ApprovalAnswer,
    ApprovalRequest,
    Choice,
    InteractionRequest,
    QuestionAnswer,
    QuestionItem,
    QuestionRequest,
    QuestionSetAnswer,
    QuestionSetRequest,
)
from agent_bridge.wire.methods import RunInput

__all__ = ["CodexRun", "CodexSession", "Settings", "classify_error"]

log = logging.getLogger("agent_bridge.codex")

STARTUP_TIMEOUT: Final = 30.0
REQUEST_TIMEOUT: Final = 30.0
CONTROL_TIMEOUT: Final = 10.0
#: After the app-server exits, how long its output may stay open before the adapter
#: stops waiting for EOF (messages it wrote before exiting are read meanwhile).
EXIT_DRAIN_GRACE: Final = 0.5
_MAX_PENDING_DIAGNOSTICS: Final = 16
_MAX_TITLE: Final = 200
_PLAN_STATUSES: Final = ("pending", "inProgress", "completed")
_IDENTIFIER: Final = re.compile(r"[A-Za-z][A-Za-z0-9]{0,39}")
#: Item types that are reported some other way, or carry nothing to report.
_QUIET_ITEMS: Final = frozenset(
    {"userMessage", "hookPrompt", "agentMessage", "reasoning", "plan", "contextCompaction"}
)

#: Notifications that carry nothing a host needs (status, bookkeeping, UI state).
_IGNORED: Final = frozenset(
    {
        "thread/started",
        "thread/status/changed",
        "thread/readState/changed",
        "thread/name/updated",
        "thread/settings/updated",
        "thread/goal/updated",
        "thread/goal/cleared",
        "thread/queue/changed",
        "thread/compacted",  # deprecated; the contextCompaction item is reported
        "turn/started",
        "turn/diff/updated",
        "turn/moderationMetadata",
        "item/plan/delta",
        "item/fileChange/patchUpdated",
        "item/commandExecution/terminalInteraction",
        "item/mcpToolCall/progress",
        "item/autoApprovalReview/started",
        "item/autoApprovalReview/completed",
        "account/rateLimits/updated",
        "account/updated",
        "remoteControl/status/changed",
        "skills/changed",
        "app/list/updated",
        "mcpServer/startupStatus/updated",
        "fs/changed",
        "model/verification",
        "model/safetyBuffering/updated",
        "hook/started",
        "hook/completed",
    }
)

#: Notification -> (level, code, message) of the diagnostic it becomes.
_DIAGNOSTICS: Final[dict[str, tuple[Any, str, str]]] = {
    "warning": ("warning", "codex_warning", "Codex reported a warning (see the bridge log)"),
    "guardianWarning": (
        "warning",
        "codex_guardian_warning",
        "Codex's approval reviewer reported a warning (see the bridge log)",
    ),
    "configWarning": (
        "warning",
        "codex_config_warning",
        "Codex reported a configuration warning (see the bridge log)",
    ),
    "deprecationNotice": (
        "info",
        "codex_deprecation",
        "Codex reported a deprecation notice (see the bridge log)",
    ),
    "model/rerouted": ("info", "codex_model_rerouted", "Codex switched to another model"),
    "windows/worldWritableWarning": (
        "warning",
        "codex_sandbox_warning",
        "Codex reported a sandbox warning (see the bridge log)",
    ),
}

def _request_key() -> Any:
    raw = current_request_id()
    if raw is None:
        return None
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return None


_decoders: dict[type, msgspec.json.Decoder[Any]] = {}


def _decode(kind: type[Any], raw: bytes) -> Any:
    decoder = _decoders.get(kind)
    if decoder is None:
        decoder = _decoders[kind] = msgspec.json.Decoder(kind)
    return decoder.decode(raw)


# ----------------------------------------------------------------------------- errors


_RATE_LIMITED: Final = frozenset(
    {"usageLimitExceeded", "rateLimitExceeded", "sessionBudgetExceeded"}
)


def classify_error(error: p.TurnError | None) -> ErrorCode:
    """Map a failed turn's ``codexErrorInfo`` onto the bridge's closed error codes."""
    info = None if error is None else error.codex_error_info
    if isinstance(info, str):
        if info == "unauthorized":
            return "provider_auth_required"
        if info in _RATE_LIMITED:
            return "provider_rate_limited"
        return "provider_failed"
    if isinstance(info, dict):
        for detail in info.values():
            status = detail.get("httpStatusCode") if isinstance(detail, dict) else None
            if status in (401, 403):
                return "provider_auth_required"
            if status == 429:
                return "provider_rate_limited"
    return "provider_failed"


# ----------------------------------------------------------------------------- settings


_SANDBOX_MODES: Final = {
    "readOnly": "read-only",
    "workspaceWrite": "workspace-write",
    "dangerFullAccess": "danger-full-access",
}


def sandbox_mode(policy: Any) -> str | None:
    """The ``sandbox`` mode string for a ``SandboxPolicy`` object of a thread response."""
    if isinstance(policy, str):
        return policy
    if isinstance(policy, dict):
        return _SANDBOX_MODES.get(str(policy.get("type")))
    return None


@dataclass(slots=True)
class Settings:
    """Everything needed to spawn the child and open the thread."""

    executable: str
    cwd: str | None
    env: dict[str, str]
    codex_home: str | None = None
    config: tuple[str, ...] = ()
    strict_config: bool = True
    model: str | None = None
    reasoning_effort: str | None = None
    approval_policy: Any = None
    sandbox: str | None = None
    cli_version: str | None = None
    thread_id: str | None = None

    def argv(self) -> tuple[str, ...]:
        argv = [self.executable, "app-server"]
        if self.strict_config:
            argv.append("--strict-config")
        for entry in self.config:
            argv += ["-c", entry]
        return tuple(argv)


# ----------------------------------------------------------------------------- runs


@dataclass(slots=True)
class _Item:
    kind: str  # "text" | "thinking" | "tool"
    name: str = ""
    deltas: int = 0
    output: bool = False
    done: bool = False
    changes: Any = None


class CodexRun(ProviderRun):
    """One turn of the session's thread."""

    def __init__(self, session: CodexSession, ctx: RunContext) -> None:
        self._session = session
        self.ctx = ctx
        self.turn_id: str | None = None
        self.turn_known = anyio.Event()
        self.done = anyio.Event()
        self.outcome: RunOutcome = RunOutcome.interrupted()
        self.early: list[tuple[str, bytes]] = []
        self.items: dict[str, _Item] = {}
        self.pending: dict[Any, InteractionHandle] = {}
        self.last_error: p.TurnError | None = None
        self.interrupt_wanted = False
        self.interrupt_sent = False
        self.text_seen = False
        #: The Codex message being handled: every payload projected from it carries it as
        #: its raw record (provenance), one shared object per message.
        self.raw: bytes | None = None
        self._reported: set[Any] = set()

    # -- ProviderRun

    async def wait(self) -> RunOutcome:
        await self.done.wait()
        return self.outcome

    async def interrupt(self, reason: str) -> None:
        self.interrupt_wanted = True
        self._session.send_interrupt(self)

    async def steer(self, input: RunInput) -> None:
        await self._session.steer(self, input)

    # -- helpers

    def emit(self, payload: ProviderPayload) -> None:
        if self.done.is_set():
            return
        try:
            if self.raw is None:
                self.ctx.emit_nowait(payload)
            else:
                self.ctx.emit_nowait(payload, raw=self.raw)
        except Exception:  # the runtime never raises here; be safe anyway
            log.exception("codex: emit failed")

    def diagnose_once(self, key: Any, level: Any, code: str, message: str) -> None:
        if key in self._reported:
            return
        self._reported.add(key)
        self.emit(Diagnostic(level=level, code=code, message=message))

    def stray(self, thread_id: str | None, turn_id: str | None) -> None:
        log.info("codex: frame for thread %s turn %s ignored", thread_id, turn_id)
        self.diagnose_once(
            ("stray", thread_id, turn_id),
            "warning",
            "codex_stray_frame",
            "Codex sent a message for another thread or turn; it was ignored",
        )

    def set_turn(self, turn_id: str) -> None:
        self.turn_id = turn_id
        self.turn_known.set()
        early, self.early = self.early, []
        for method, raw in early:
            self._session.route(method, raw)

    def finish(self, outcome: RunOutcome, *, emit: bool = True) -> None:
        if self.done.is_set():
            return
        if emit:
            for item_id, item in self.items.items():
                if item.kind == "tool" and not item.done:
                    item.done = True
                    self.emit(ToolActivity(item_id, item.name, "failed"))
        self.outcome = outcome
        self.done.set()
        self.turn_known.set()  # wake anything still waiting for the turn id
        self._session.run_finished(self)


# ----------------------------------------------------------------------------- the child


class _Proc:
    """One running ``codex app-server`` and the connection to it."""

    def __init__(self, child: ChildProcess, conn: Connection) -> None:
        self.child = child
        self.conn = conn
        self.closed = anyio.Event()
        self.stopping = False
        #: The handshake succeeded (until then its own error reporting covers EOF).
        self.ready = False

    async def stop(self) -> None:
        self.stopping = True
        try:
            await self.child.stop(eof_grace=1.5, term_grace=1.5, kill_grace=3.0)
        except TimeoutError:
            log.warning("codex (pid %d) survived SIGKILL", self.child.pid)
        self.conn.close()


def _text_input(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text, "text_elements": []}]


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_TITLE else text[: _MAX_TITLE - 1] + "…"


def _offered(decisions: list[Any] | None) -> set[str] | None:
    if decisions is None:
        return None
    out: set[str] = set()
    for decision in decisions:
        if isinstance(decision, str):
            out.add(decision)
        elif isinstance(decision, dict):
            out.update(str(k) for k in decision)
    return out


def _approval_decision(outcome: InteractionOutcome, session_ok: bool) -> str:
    """allow/once→accept, allow/session→acceptForSession (when offered), deny→decline
    (honoured by Codex even when ``availableDecisions`` does not list it), cancelled→cancel
    (Codex ends the turn), expired→decline; withdrawn (Codex resolved the request itself,
    so it ignores the reply)→decline, the answer that runs nothing and stops nothing."""
    answer = outcome.answer
    if outcome.status == "responded" and isinstance(answer, ApprovalAnswer):
        if answer.decision == "allow":
            return "acceptForSession" if answer.mode == "session" and session_ok else "accept"
        return "decline"
    if outcome.status == "cancelled":
        return "cancel"
    return "decline"


class CodexSession(ProviderSession):
    """A resident ``codex app-server`` child and one thread in it."""

    def __init__(self, ctx: SessionContext, settings: Settings) -> None:
        self._ctx = ctx
        self.settings = settings
        self._proc: _Proc | None = None
        self._run: CodexRun | None = None
        self._disposed = False
        self._lock = anyio.Lock()
        self._pending_diagnostics: list[Diagnostic] = []
        self._resolved: set[Any] = set()
        self._notifications = {
            method: Method(functools.partial(self._on_notification, method), msgspec.Raw)
            for method in p.SERVER_NOTIFICATIONS
        }
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
            "item/tool/requestUserInput": Method(
                self._on_user_input, msgspec.Raw, is_async=True
            ),
        }

    @property
    def thread_id(self) -> str | None:
        return self.settings.thread_id

    # ------------------------------------------------------------------ lifecycle

    async def open(self, *, resume: bool) -> None:
        """Spawn the child, run the handshake and start (or resume) the thread.

        Raises :class:`BridgeError`/:class:`ProviderFailure`; the child is stopped first.
        """
        proc = await self._spawn()
        try:
            await self._handshake(proc, resume=resume)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await proc.stop()
            self._proc = None
            raise

    async def _spawn(self) -> _Proc:
        s = self.settings
        try:
            spec = ProcessSpec(s.argv(), cwd=s.cwd, env=s.env, name="codex app-server")
        except (TypeError, ValueError):
            raise BridgeError("invalid_option", details={"option": "config"}) from None
        try:
            child = await spawn(spec, self._ctx.task_group)
        except SpawnError as exc:
            log.warning("codex: cannot start %s: %s", s.executable, exc.reason)
            raise BridgeError(
                "provider_unavailable", details={"missing": "codex", "reason": exc.reason}
            ) from None
        conn = Connection(
            child.stdout,
            child.stdin,
            methods=self._requests,
            notifications=self._notifications,
            framing="newline",
            jsonrpc=False,
            name="codex",
        )
        proc = _Proc(child, conn)
        self._proc = proc
        self._resolved.clear()  # server request ids start again at 0 in a new process
        self._ctx.task_group.start_soon(self._serve, proc, name="codex connection")
        self._ctx.task_group.start_soon(self._watch_exit, proc, name="codex exit watcher")
        return proc

    async def _watch_exit(self, proc: _Proc) -> None:
        """End the connection when the app-server exits even if its stdout stays open (a
        process it started still holds the pipe): ``_serve`` then treats it as EOF."""
        code = await proc.child.wait()
        with anyio.move_on_after(EXIT_DRAIN_GRACE):
            await proc.closed.wait()
        if not proc.closed.is_set() and not proc.stopping:
            log.warning(
                "codex app-server exited (status %s) but its output is still held open; "
                "closing the connection",
                code,
            )
            proc.conn.close()

    async def _call(
        self, proc: _Proc, method: str, params: Any, result_type: Any, timeout: float
    ) -> Any:
        entry: LedgerEntry[Any] = proc.conn.open_request(
            method, params, result_type=result_type, timeout=timeout
        )
        try:
            return await proc.conn.wait(entry)
        except anyio.get_cancelled_exc_class():
            proc.conn.cancel_request(entry, notify_peer=False)
            raise

    async def _startup_failure(self, proc: _Proc, exc: RpcError, what: str) -> BridgeError:
        """Classify a failed handshake request; log what the child said."""
        if isinstance(exc, RequestTimedOut):
            log.warning("codex: %s timed out", what)
            return ProviderFailure("provider_timeout", f"{what} timed out")
        if isinstance(exc, ConnectionClosed):
            code: int | None = None
            with anyio.move_on_after(2):
                code = await proc.child.wait()
            log.warning(
                "codex exited during %s (status %s); stderr tail:\n%s",
                what,
                code,
                proc.child.stderr_tail(),
            )
            # A non-zero exit at start-up is a configuration or installation problem
            # (bad config.toml under --strict-config, missing CODEX_HOME, ...).
            if code not in (None, 0):
                return ProviderFailure("provider_unavailable", f"codex exited with {code}")
            return ProviderFailure("provider_crashed", f"codex closed its output during {what}")
        log.warning("codex: %s failed: %s", what, redact(exc.message))
        if what == "thread/resume":
            return BridgeError("recovery_invalid")
        return ProviderFailure("provider_failed", f"{what} failed")

    async def _handshake(self, proc: _Proc, *, resume: bool) -> None:
        s = self.settings
        try:
            init = await self._call(
                proc,
                "initialize",
                {
                    "clientInfo": {
                        "name": "agent_bridge",
                        "title": "agent-bridge",
                        "version": BRIDGE_VERSION,
                    }
                },
                p.InitializeResponse,
                STARTUP_TIMEOUT,
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
        try:
            thread = await self._call(proc, method, params, p.ThreadResponse, STARTUP_TIMEOUT)
        except RpcError as exc:
            raise await self._startup_failure(proc, exc, method) from None
        s.thread_id = thread.thread.id
        s.model = thread.model or s.model
        if thread.approval_policy is not None:
            s.approval_policy = thread.approval_policy
        s.sandbox = sandbox_mode(thread.sandbox) or s.sandbox
        if thread.cwd and s.cwd is None:
            s.cwd = thread.cwd
        proc.ready = True

    async def _serve(self, proc: _Proc) -> None:
        """Serve the connection; at EOF, end the active run as crashed."""
        try:
            await proc.conn.run()
        finally:
            proc.closed.set()
        if proc.stopping or not proc.ready or self._disposed or proc is not self._proc:
            return
        run = self._run
        if run is not None:
            run.finish(RunOutcome.failed("provider_crashed", "codex closed its output"))
        code: int | None = None
        with anyio.move_on_after(1):
            code = await proc.child.wait()
        log.warning(
            "codex app-server closed its output (status %s); stderr tail:\n%s",
            code,
            proc.child.stderr_tail(),
        )
        await proc.stop()

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
        ):
            if value is not None:
                record[key] = value
        return record

    async def dispose(self) -> None:
        self._disposed = True
        run = self._run
        if run is not None:
            run.finish(RunOutcome.interrupted(), emit=False)
        proc, self._proc = self._proc, None
        if proc is not None:
            with anyio.CancelScope(shield=True):
                await proc.stop()
                tail = proc.child.stderr_tail()
                if tail:
                    log.debug("codex stderr tail:\n%s", tail)

    # ------------------------------------------------------------------ runs

    async def start_run(
        self, input: RunInput, options: Mapping[str, Any], ctx: RunContext
    ) -> ProviderRun:
        if self._disposed:
            raise BridgeError("session_closed")
        if self._run is not None:
            raise BridgeError("run_active")
        async with self._lock:
            proc = self._proc
            if proc is None or proc.closed.is_set():
                # The child died (crash, EOF): start a new one on the same thread.
                log.info("codex: restarting the app-server for thread %s", self.thread_id)
                await self.open(resume=True)
                proc = self._proc
                assert proc is not None
            run = CodexRun(self, ctx)
            self._run = run
            pending, self._pending_diagnostics = self._pending_diagnostics, []
            for diagnostic in pending:
                run.emit(diagnostic)
            params: dict[str, Any] = {"threadId": self.thread_id, "input": _text_input(input.text)}
            if self.settings.reasoning_effort is not None:
                params["effort"] = self.settings.reasoning_effort
            try:
                started = await self._call(
                    proc, "turn/start", params, p.TurnStartResponse, REQUEST_TIMEOUT
                )
            except RpcError as exc:
                if self._run is run:
                    self._run = None
                if isinstance(exc, ConnectionClosed):
                    raise ProviderFailure("provider_crashed", "codex exited") from None
                if isinstance(exc, RequestTimedOut):
                    raise ProviderFailure("provider_timeout", "turn/start timed out") from None
                log.warning("codex: turn/start failed: %s", redact(exc.message))
                raise ProviderFailure("provider_failed", "turn/start failed") from None
            # No await from here on: the runtime marks the run running as soon as this
            # returns, before any approval handler waiting for the turn id resumes.
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
        if run.done.is_set() or run.interrupt_sent or run.turn_id is None or proc is None:
            return
        run.interrupt_sent = True
        entry = proc.conn.open_request(
            "turn/interrupt",
            {"threadId": self.thread_id, "turnId": run.turn_id},
            timeout=CONTROL_TIMEOUT,
        )
        self._ctx.task_group.start_soon(self._settle_quietly, proc, entry)

    async def _settle_quietly(self, proc: _Proc, entry: LedgerEntry[Any]) -> None:
        try:
            await proc.conn.wait(entry)
        except RpcError as exc:
            # "no active turn to interrupt": the turn ended on its own meanwhile.
            log.info("codex: %s: %s", entry.method, redact(exc.message))

    async def steer(self, run: CodexRun, input: RunInput) -> None:
        if run.done.is_set():
            raise BridgeError("run_not_active")
        await run.turn_known.wait()
        proc = self._proc
        if run.done.is_set() or proc is None:
            raise BridgeError("run_not_active")
        params = {
            "threadId": self.thread_id,
            "expectedTurnId": run.turn_id,
            "input": _text_input(input.text),
        }
        try:
            await self._call(proc, "turn/steer", params, p.TurnSteerResponse, CONTROL_TIMEOUT)
        except ConnectionClosed:
            raise ProviderFailure("provider_crashed", "codex exited at turn/steer") from None
        except RequestTimedOut:
            raise ProviderFailure("provider_timeout", "turn/steer timed out") from None
        except RpcError as exc:
            log.info("codex: turn/steer refused: %s", redact(exc.message))
            raise BridgeError("run_not_active") from None

    # ------------------------------------------------------------------ notifications

    def _on_notification(self, method: str, raw: msgspec.Raw) -> None:
        self.route(method, bytes(raw))

    def route(self, method: str, raw: bytes) -> None:
        """Correlate one notification with the active run and handle it."""
        if method in _IGNORED:
            return
        if method == "serverRequest/resolved":
            self._on_resolved(raw)
            return
        try:
            if method == "turn/completed":
                completed = _decode(p.TurnCompleted, raw)
                thread_id, turn_id = completed.thread_id, completed.turn.id
            else:
                scope = _decode(p.Scope, raw)
                thread_id, turn_id = scope.thread_id, scope.turn_id
        except (msgspec.DecodeError, msgspec.ValidationError):
            self._unexpected(method)
            return
        run = self._run
        if thread_id is not None and self.thread_id is not None and thread_id != self.thread_id:
            if run is not None:
                run.stray(thread_id, turn_id)
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
        run.raw = b'{"method":%s,"params":%s}' % (msgspec.json.encode(method), raw)
        try:
            self._handle(run, method, raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            self._unexpected(method)
        finally:
            run.raw = None

    def _unexpected(self, method: str) -> None:
        log.warning("codex: %s did not have the expected shape", method)
        run = self._run
        diagnostic = Diagnostic(
            level="warning",
            code="codex_unexpected_message",
            message="Codex sent a message the adapter could not read; it was ignored",
        )
        if run is not None:
            run.diagnose_once(
                ("unexpected", method), "warning", diagnostic.code, diagnostic.message
            )
        else:
            self._queue_diagnostic(diagnostic)

    def _queue_diagnostic(self, diagnostic: Diagnostic) -> None:
        if len(self._pending_diagnostics) < _MAX_PENDING_DIAGNOSTICS:
            self._pending_diagnostics.append(diagnostic)

    def _log_upstream(self, method: str, raw: bytes) -> None:
        try:
            if method in ("configWarning", "deprecationNotice"):
                note = _decode(p.ConfigWarning, raw)
                text = note.summary + (f" ({note.details})" if note.details else "")
            else:
                text = _decode(p.WarningNotification, raw).message
        except (msgspec.DecodeError, msgspec.ValidationError):
            text = "?"
        log.info("codex %s: %s", method, redact(text))

    def _between_runs(self, method: str, raw: bytes) -> None:
        """A notification while no run is active: warnings wait for the next run."""
        spec = _DIAGNOSTICS.get(method)
        if spec is not None:
            self._log_upstream(method, raw)
            level, code, message = spec
            self._queue_diagnostic(Diagnostic(level=level, code=code, message=message))

    def _handle(self, run: CodexRun, method: str, raw: bytes) -> None:
        if method == "item/agentMessage/delta":
            delta = _decode(p.DeltaNotification, raw)
            item = run.items.setdefault(delta.item_id, _Item("text"))
            item.deltas += 1
            self._text(run, delta.delta, first=item.deltas == 1)
        elif method in ("item/reasoning/summaryTextDelta", "item/reasoning/textDelta"):
            delta = _decode(p.DeltaNotification, raw)
            run.items.setdefault(delta.item_id, _Item("thinking")).deltas += 1
            if delta.delta:
                run.emit(ThinkingDelta(text=delta.delta))
        elif method == "item/reasoning/summaryPartAdded":
            delta = _decode(p.DeltaNotification, raw)
            if delta.summary_index:
                run.emit(ThinkingDelta(text="\n\n"))
        elif method in ("item/commandExecution/outputDelta", "item/fileChange/outputDelta"):
            delta = _decode(p.DeltaNotification, raw)
            tool = run.items.get(delta.item_id)
            if tool is not None and delta.delta:
                tool.output = True
                run.emit(ToolActivity(delta.item_id, tool.name, "output", output=delta.delta))
        elif method == "item/started":
            self._item_started(run, _decode(p.ItemNotification, raw).item)
        elif method == "item/completed":
            self._item_completed(run, _decode(p.ItemNotification, raw).item)
        elif method == "thread/tokenUsage/updated":
            usage = _decode(p.TokenUsageUpdated, raw).token_usage
            run.emit(
                Usage(
                    context=ContextUsage(usage.last.total_tokens, usage.model_context_window),
                    cumulative=CumulativeUsage(
                        input_tokens=usage.total.input_tokens,
                        output_tokens=usage.total.output_tokens,
                        cached_input_tokens=usage.total.cached_input_tokens,
                    ),
                )
            )
        elif method == "turn/plan/updated":
            plan = _decode(p.PlanUpdated, raw).plan
            steps = tuple(
                PlanStep(s.step, s.status if s.status in _PLAN_STATUSES else "pending")
                for s in plan
            )
            run.emit(PlanUpdated(steps=steps))
        elif method == "turn/completed":
            self._turn_completed(run, _decode(p.TurnCompleted, raw))
        elif method == "error":
            note = _decode(p.ErrorNotification, raw)
            log.info(
                "codex error (retry=%s, info=%s): %s",
                note.will_retry,
                note.error.codex_error_info,
                redact(note.error.message),
            )
            if note.will_retry:
                run.diagnose_once(
                    "retrying",
                    "warning",
                    "codex_retrying",
                    "Codex is retrying a failed model request",
                )
            else:
                run.last_error = note.error
        elif method in _DIAGNOSTICS:
            self._log_upstream(method, raw)
            level, code, message = _DIAGNOSTICS[method]
            run.emit(Diagnostic(level=level, code=code, message=message))
        else:
            run.diagnose_once(
                ("unmapped", method),
                "info",
                "codex_unmapped_notification",
                f"Codex sent a {method} notification, which the adapter does not map",
            )

    def _text(self, run: CodexRun, text: str, *, first: bool) -> None:
        if not text:
            return
        if first and run.text_seen:
            run.emit(TextDelta(text="\n\n"))  # a new agent message in the same turn
        run.text_seen = True
        run.emit(TextDelta(text=text))

    def _item_started(self, run: CodexRun, item: dict[str, Any]) -> None:
        kind = item.get("type")
        item_id = str(item.get("id", ""))
        if kind == "agentMessage":
            run.items.setdefault(item_id, _Item("text"))
        elif kind == "reasoning":
            run.items.setdefault(item_id, _Item("thinking"))
        elif kind == "contextCompaction":
            run.emit(
                Diagnostic(
                    level="info",
                    code="codex_context_compacted",
                    message="Codex compacted the conversation to fit the context window",
                )
            )
        else:
            tool = _tool_of(item)
            if tool is not None and item_id not in run.items:
                name, tool_input, changes = tool
                run.items[item_id] = _Item("tool", name, changes=changes)
                run.emit(ToolActivity(item_id, name, "started", input=tool_input))
            elif tool is None and kind not in _QUIET_ITEMS:
                shown = kind if isinstance(kind, str) and _IDENTIFIER.fullmatch(kind) else "?"
                run.diagnose_once(
                    ("item", shown),
                    "info",
                    "codex_unmapped_item",
                    f"Codex reported a {shown} item, which the adapter does not map",
                )

    def _item_completed(self, run: CodexRun, item: dict[str, Any]) -> None:
        kind = item.get("type")
        item_id = str(item.get("id", ""))
        known = run.items.get(item_id)
        if kind == "agentMessage":
            if known is None or known.deltas == 0:
                self._text(run, str(item.get("text") or ""), first=True)
            return
        if kind == "reasoning":
            if known is None or known.deltas == 0:
                summary = item.get("summary") or []
                text = "\n\n".join(str(s) for s in summary if s)
                if text:
                    run.emit(ThinkingDelta(text=text))
            return
        tool = _tool_of(item)
        if tool is None:
            return
        if known is None or known.kind != "tool":
            self._item_started(run, item)
            known = run.items.get(item_id)
            if known is None:
                return
        if known.done:
            return
        known.done = True
        output = item.get("aggregatedOutput")
        if not known.output and isinstance(output, str) and output:
            run.emit(ToolActivity(item_id, known.name, "output", output=output))
        status = item.get("status")
        ok = status == "completed" or (kind == "dynamicToolCall" and item.get("success") is True)
        if kind == "webSearch":
            ok = True
        exit_code = item.get("exitCode")
        run.emit(
            ToolActivity(
                item_id,
                known.name,
                "completed" if ok else "failed",
                exit_code=exit_code if isinstance(exit_code, int) else None,
            )
        )

    def _turn_completed(self, run: CodexRun, completed: p.TurnCompleted) -> None:
        status = completed.turn.status
        if status == "completed":
            run.finish(RunOutcome.completed("completed"))
        elif status == "interrupted":
            run.finish(RunOutcome.interrupted())
        elif status == "failed":
            error = completed.turn.error or run.last_error
            code = classify_error(error)
            info = None if error is None else error.codex_error_info
            run.finish(RunOutcome.failed(code, f"codex turn failed ({info})"))

    def _on_resolved(self, raw: bytes) -> None:
        try:
            note = _decode(p.ServerRequestResolved, raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
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
        """The active run a server request belongs to, or ``None``."""
        run = self._run
        if run is None or run.done.is_set():
            return None
        if thread_id != self.thread_id:
            run.stray(thread_id, turn_id)
            return None
        if run.turn_id is None:
            with anyio.move_on_after(REQUEST_TIMEOUT):
                await run.turn_known.wait()
        if run.done.is_set() or run.turn_id is None:
            return None
        if turn_id and turn_id != run.turn_id:
            run.stray(thread_id, turn_id)
            return None
        return run

    async def _ask(self, run: CodexRun, request: InteractionRequest) -> InteractionOutcome:
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
        params = _decode(p.CommandApprovalParams, bytes(raw))
        run = await self._run_for(params.thread_id, params.turn_id)
        if run is None:
            return {"decision": "decline"}
        offered = _offered(params.available_decisions)
        session_ok = (offered is None or "acceptForSession" in offered) and (
            params.kind != "humanCommand"
        )
        actions = params.command_actions or []
        shown = params.command or ""
        if len(actions) == 1 and isinstance(actions[0], dict) and actions[0].get("command"):
            shown = str(actions[0]["command"])
        tool_input: dict[str, Any] = {"commandActions": actions}
        if params.reason:
            tool_input["reason"] = params.reason
        request = ApprovalRequest(
            action="command",
            title=_short(f"Run `{shown}`") if shown else "Run a command",
            tool_name="command",
            input=tool_input,
            command=params.command,
            cwd=params.cwd,
            modes=("once", "session") if session_ok else ("once",),
        )
        outcome = await self._ask(run, request)
        return {"decision": _approval_decision(outcome, session_ok)}

    async def _on_file_change_approval(self, raw: msgspec.Raw) -> dict[str, Any]:
        params = _decode(p.FileChangeApprovalParams, bytes(raw))
        run = await self._run_for(params.thread_id, params.turn_id)
        if run is None:
            return {"decision": "decline"}
        item = run.items.get(params.item_id)
        changes = item.changes if item is not None else None
        tool_input: dict[str, Any] = {"changes": changes or []}
        if params.reason:
            tool_input["reason"] = params.reason
        if params.grant_root:
            tool_input["grantRoot"] = params.grant_root
        paths = [c.get("path") for c in changes or [] if isinstance(c, dict)]
        title = "Apply file changes"
        if len(paths) == 1 and paths[0]:
            title = _short(f"Change {paths[0]}")
        elif paths:
            title = f"Change {len(paths)} files"
        request = ApprovalRequest(
            action="fileChange",
            title=title,
            tool_name="fileChange",
            input=tool_input,
            modes=("once", "session"),
        )
        outcome = await self._ask(run, request)
        return {"decision": _approval_decision(outcome, True)}

    async def _on_permissions_approval(self, raw: msgspec.Raw) -> dict[str, Any]:
        params = _decode(p.PermissionsApprovalParams, bytes(raw))
        run = await self._run_for(params.thread_id, params.turn_id)
        refused: dict[str, Any] = {"permissions": {}, "scope": "turn"}
        if run is None:
            return refused
        tool_input: dict[str, Any] = {"permissions": params.permissions}
        if params.reason:
            tool_input["reason"] = params.reason
        request = ApprovalRequest(
            action="permissions",
            title="Grant Codex additional permissions",
            tool_name="permissions",
            input=tool_input,
            cwd=params.cwd,
            modes=("once", "session"),
        )
        outcome = await self._ask(run, request)
        answer = outcome.answer
        if (
            outcome.status == "responded"
            and isinstance(answer, ApprovalAnswer)
            and answer.decision == "allow"
        ):
            scope = "session" if answer.mode == "session" else "turn"
            return {"permissions": params.permissions, "scope": scope}
        return refused

    async def _on_user_input(self, raw: msgspec.Raw) -> dict[str, Any]:
        params = _decode(p.UserInputParams, bytes(raw))
        run = await self._run_for(params.thread_id, params.turn_id)
        questions = params.questions
        if run is None or not questions:
            return {"answers": {}}
        choices = [
            tuple(
                dict.fromkeys(o.label for o in (q.options or []) if o.label)
            )
            for q in questions
        ]
        request: InteractionRequest
        if len(questions) == 1:
            q = questions[0]
            prompt = q.question or q.header
            if q.header and q.question:
                prompt = f"{q.header}: {q.question}"
            request = QuestionRequest(
                prompt=prompt,
                choices=tuple(Choice(label, label) for label in choices[0]),
                allow_free_text=True,  # Codex offers a free-form "Other" itself
            )
        else:
            request = QuestionSetRequest(
                title=_short(" / ".join(q.header for q in questions if q.header) or "Codex asks"),
                items=tuple(
                    QuestionItem(q.id, q.question or q.header, tuple(Choice(c, c) for c in cs))
                    for q, cs in zip(questions, choices, strict=True)
                ),
            )
        outcome = await self._ask(run, request)
        answer = outcome.answer
        values: dict[str, str] = {}
        if outcome.status == "responded":
            if isinstance(answer, QuestionAnswer):
                value = answer.choice if answer.choice is not None else answer.text
                if value is not None:
                    values[questions[0].id] = value
            elif isinstance(answer, QuestionSetAnswer):
                values = dict(answer.answers)
        return {"answers": {key: {"answers": [value]} for key, value in values.items()}}


def _tool_of(item: dict[str, Any]) -> tuple[str, Any, Any] | None:
    """(name, input, file changes) of a tool-like ``ThreadItem``, else ``None``."""
    kind = item.get("type")
    if kind == "commandExecution":
        return "command", {"command": item.get("command"), "cwd": item.get("cwd")}, None
    if kind == "fileChange":
        changes = []
        for change in item.get("changes") or []:
            if isinstance(change, dict):
                change_kind = change.get("kind")
                changes.append(
                    {
                        "path": change.get("path"),
                        "kind": change_kind.get("type")
                        if isinstance(change_kind, dict)
                        else change_kind,
                        "diff": change.get("diff"),
                    }
                )
        return "fileChange", {"changes": changes}, changes
    if kind == "mcpToolCall":
        name = f"mcp:{item.get('server')}/{item.get('tool')}"
        return name, item.get("arguments"), None
    if kind == "dynamicToolCall":
        return str(item.get("tool") or "tool"), item.get("arguments"), None
    if kind == "webSearch":
        return "webSearch", {"query": item.get("query")}, None
    return None
