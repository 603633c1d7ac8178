"""One Claude Code session: a resident ``claude`` child in bidirectional stream-json mode.

Tasks (all in the session's task group, each guarded so a bug here can never take the
bridge down):

* the **reader** of the child's stdout: splits NDJSON lines, correlates each frame with
  the active run and turns it into payloads, settles the ledger, opens interactions.  It
  never writes to the child (a write can block while the child is itself blocked
  writing to us): every reply is sent from a task of its own;
* the **exit watcher**: once the child has exited, gives the reader a moment to drain
  and then ends it (a grandchild holding the pipe cannot keep the session hanging);
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
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import anyio
import anyio.abc
import msgspec

from agent_bridge.adapters.claude import protocol
from agent_bridge.adapters.claude.config import (
    LaunchConfig,
    build_argv,
    child_env,
    valid_session_id,
)
from agent_bridge.errors import BridgeError, ProviderFailure
from agent_bridge.processes import ChildProcess, ProcessSpec, SpawnError, spawn
from agent_bridge.rpc.errors import RpcError
from agent_bridge.rpc.ledger import Ledger, LedgerEntry
from agent_bridge.spi import (
    InteractionHandle,
    ProviderRun,
    ProviderSession,
    RunContext,
    RunOutcome,
    SessionContext,
)
from agent_bridge.wire.events import (
    ContextUsage,
    CumulativeUsage,
    Diagnostic,
    ProviderPayload,
    TextDelta,
    ThinkingDelta,
    ToolActivity,
    Usage,
)
from agent_bridge.wire.interactions import ApprovalAnswer, ApprovalRequest
from agent_bridge.wire.methods import RunInput

__all__ = ["ClaudeRun", "ClaudeSession"]

log = logging.getLogger("agent_bridge.provider.claude")

#: Longest stdout line accepted from the CLI (tool results can be large).
MAX_LINE: Final = 64 * 1024 * 1024
_READ_CHUNK: Final = 256 * 1024
#: How long the CLI has to acknowledge an ``interrupt`` (the runtime bounds the run
#: itself with its own grace period; this only settles the ledger entry).
INTERRUPT_ACK_TIMEOUT: Final = 10.0
#: After the child exits, how long the reader may still drain buffered output.
EXIT_DRAIN_GRACE: Final = 2.0
#: A write to the child's stdin that cannot complete in this time means it is stuck.
SEND_TIMEOUT: Final = 30.0
#: How much of the stderr tail goes into the log when the child ends unexpectedly.
LOG_TAIL_CHARS: Final = 4000

_STREAM_ENDED: Final = (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError)
_TURN_TYPES: Final = frozenset({"system", "stream_event", "assistant", "user", "result"})


class _Gone(Exception):
    """The child can no longer be written to."""


def _diag(level: Any, code: str, message: str) -> Diagnostic:
    return Diagnostic(level=level, code=code, message=message)


_STRAY = _diag(
    "warning",
    "provider_stray_record",
    "the provider sent a record that belongs to no active run; it was ignored",
)
_UNKNOWN = _diag(
    "info",
    "provider_unknown_record",
    "the provider sent a record of a type the adapter does not know; it was ignored",
)
_UNPARSEABLE = _diag(
    "warning",
    "provider_unparseable_record",
    "the provider sent a line that is not a JSON object; it was ignored",
)
_OVERSIZED = _diag(
    "warning",
    "provider_oversized_record",
    "the provider sent a record larger than the adapter accepts; it was skipped",
)
_DECLINED = _diag(
    "info",
    "provider_request_declined",
    "the provider asked for something the adapter does not support; it was declined",
)
_RETRY = _diag("info", "provider_retry", "the provider is retrying a failed model request")


@dataclass(eq=False)
class _Permission:
    """One ``can_use_tool`` request of the CLI and the interaction it became."""

    cli_id: str
    run: ClaudeRun
    handle: InteractionHandle
    tool_input: dict[str, Any]
    session_updates: list[dict[str, Any]]
    #: For ``AskUserQuestion``: the questions asked (the interaction is a question).
    questions: tuple[protocol.AskedQuestion, ...] | None = None
    #: Set once the request needs no (further) reply: answered, or withdrawn.
    closed: bool = False


@dataclass(eq=False)
class ClaudeRun(ProviderRun):
    """One turn: a user message sent to the CLI, ended by its ``result``."""

    session: ClaudeSession
    ctx: RunContext
    done: anyio.Event = field(default_factory=anyio.Event)
    outcome: RunOutcome | None = None
    interrupt_sent: bool = False
    tools: dict[str, str] = field(default_factory=dict)
    streamed: set[str] = field(default_factory=set)
    prompt_tokens: int | None = None
    output_tokens: int = 0
    assistant_error: str | None = None
    unknown_types: set[str] = field(default_factory=set)

    def finish(self, outcome: RunOutcome) -> bool:
        """Record the outcome once; later calls change nothing."""
        if self.done.is_set():
            return False
        self.outcome = outcome
        self.done.set()
        return True

    @property
    def interrupting(self) -> bool:
        """Whether this run is being interrupted (asked by the host or sent to the CLI)."""
        return self.interrupt_sent or self.ctx.interrupt_requested

    async def wait(self) -> RunOutcome:
        await self.done.wait()
        assert self.outcome is not None
        return self.outcome

    async def interrupt(self, reason: str) -> None:
        await self.session.interrupt_run(self)


class ClaudeSession(ProviderSession):
    """A resident ``claude`` child and the state of its conversation."""

    def __init__(
        self,
        ctx: SessionContext,
        config: LaunchConfig,
        *,
        cli_session_id: str | None = None,
        usage: Mapping[str, Any] | None = None,
    ) -> None:
        self._ctx = ctx
        self._config = config
        self._cli_session_id = cli_session_id
        #: Whether the CLI has a transcript for ``_cli_session_id`` (a turn ended), so
        #: ``--resume`` can find it.
        self._has_transcript = cli_session_id is not None
        self._ledger = Ledger()
        self._ledger_changed = anyio.Event()
        self._write_lock = anyio.Lock()
        self._child: ChildProcess | None = None
        self._alive = False
        self._starting = False
        self._startup_result = False
        self._disposed = False
        self._clock_started = False
        self._scopes: set[anyio.CancelScope] = set()
        self._run: ClaudeRun | None = None
        self._expect_results = 0
        self._permissions: dict[str, _Permission] = {}
        self._model: str | None = None
        #: The stdout line being handled: the raw record of the payloads it produces.
        self._raw: bytes | None = None
        usage = usage or {}
        self._cum_in = _nonneg_int(usage.get("input"))
        self._cum_out = _nonneg_int(usage.get("output"))
        self._cum_cached = _nonneg_int(usage.get("cached"))
        cost = usage.get("costUsd")
        self._cum_cost: float | None = float(cost) if isinstance(cost, (int, float)) else None
        self._process_cost = 0.0

    # ------------------------------------------------------------------ lifecycle

    async def start(self, resume: str | None = None) -> None:
        """Spawn the CLI and complete the ``initialize`` handshake (bounded)."""
        argv = build_argv(self._config, resume)
        spec = ProcessSpec(
            argv, cwd=self._config.cwd, env=child_env(self._config.config_dir), name="claude"
        )
        try:
            child = await spawn(spec, self._ctx.task_group)
        except SpawnError as exc:
            log.warning("claude could not be started: %s", exc.reason)
            raise BridgeError(
                "provider_unavailable",
                details={"missing": "claude executable", "reason": exc.reason},
            ) from None
        log.info("claude started (pid %d, resume=%s)", child.pid, resume is not None)
        self._child = child
        self._alive = True
        self._expect_results = 0
        self._process_cost = 0.0
        self._startup_result = False
        if not self._clock_started:
            self._clock_started = True
            self._spawn(self._ledger_clock)
        reader_scope = anyio.CancelScope()
        reader_done = anyio.Event()
        self._spawn(self._read_loop, child, reader_scope, reader_done)
        self._spawn(self._watch_exit, child, reader_scope, reader_done)
        self._starting = True
        try:
            await self._initialize(resume)
        except BaseException:
            with anyio.CancelScope(shield=True):
                self._alive = False
                await self._stop_child(child, eof_grace=0.2)
                self._ledger.fail_all("claude start-up failed")
                self._log_exit(child, "during start-up")
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
        old = self._child
        if old is not None:
            await self._stop_child(old)
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
            child = self._child
            if child is not None:
                # Stdin EOF ends an idle CLI at once, but a CLI in a turn first finishes
                # the turn: with a run still active, go to SIGTERM quickly.
                busy = self._active_run() is not None
                await self._stop_child(child, eof_grace=0.2 if busy else 2.0)
            self._alive = False
            self._ledger.fail_all("session disposed")
            run = self._run
            if run is not None and not run.done.is_set():
                run.finish(
                    RunOutcome.interrupted()
                    if run.interrupting
                    else RunOutcome.failed("session_closed", "session disposed during the run")
                )
            for scope in list(self._scopes):
                scope.cancel()
        except Exception:
            log.exception("claude session: dispose failed")

    async def _stop_child(self, child: ChildProcess, eof_grace: float = 2.0) -> None:
        try:
            code = await child.stop(eof_grace=eof_grace, term_grace=2.0, kill_grace=2.0)
        except TimeoutError:
            log.error("claude (pid %d) survived SIGKILL", child.pid)
            return
        log.info("claude (pid %d) stopped with status %d", child.pid, code)

    def export_recovery_record(self) -> Any:
        usage: dict[str, Any] = {
            "input": self._cum_in,
            "output": self._cum_out,
            "cached": self._cum_cached,
        }
        if self._cum_cost is not None:
            usage["costUsd"] = self._cum_cost
        return {
            "v": 1,
            "sessionId": self._cli_session_id if self._has_transcript else None,
            "cwd": self._config.cwd,
            "configDir": self._config.config_dir,
            "usage": usage,
        }

    # ------------------------------------------------------------------ runs

    async def start_run(
        self, input: RunInput, options: Mapping[str, Any], ctx: RunContext
    ) -> ProviderRun:
        if self._disposed:
            raise BridgeError("session_closed")
        if self._run is not None and not self._run.done.is_set():
            raise BridgeError("run_active")
        try:
            frame = msgspec.json.encode(protocol.user_message(input.text))
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
        if run.done.is_set() or not self._alive or run is not self._run:
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

    # ------------------------------------------------------------------ tasks

    def _spawn(self, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        """Run ``fn`` in the session's task group, cancellable by :meth:`dispose`, and never
        letting an exception escape into the bridge."""
        scope = anyio.CancelScope()
        self._scopes.add(scope)

        async def runner() -> None:
            try:
                with scope:
                    await fn(*args)
            except Exception:
                log.exception("claude session: task %s failed", getattr(fn, "__name__", fn))
            finally:
                self._scopes.discard(scope)

        self._ctx.task_group.start_soon(runner)

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

    async def _watch_exit(
        self, child: ChildProcess, reader_scope: anyio.CancelScope, reader_done: anyio.Event
    ) -> None:
        await child.wait()
        with anyio.move_on_after(EXIT_DRAIN_GRACE):
            await reader_done.wait()
        reader_scope.cancel()

    async def _read_loop(
        self, child: ChildProcess, reader_scope: anyio.CancelScope, reader_done: anyio.Event
    ) -> None:
        buf = bytearray()
        scan = 0
        discarding = False  # inside a line that was too long, until its newline
        try:
            with reader_scope:
                while True:
                    try:
                        chunk = await child.stdout.receive(_READ_CHUNK)
                    except _STREAM_ENDED:
                        break
                    if discarding:
                        nl = chunk.find(b"\n")
                        if nl < 0:
                            continue
                        chunk = chunk[nl + 1 :]
                        discarding = False
                    buf += chunk
                    while True:
                        nl = buf.find(b"\n", scan)
                        if nl < 0:
                            scan = len(buf)
                            break
                        line = bytes(buf[:nl])
                        del buf[: nl + 1]
                        scan = 0
                        if len(line) > MAX_LINE:
                            await self._oversized()
                        elif line.strip():
                            await self._dispatch_line(line)
                    if len(buf) > MAX_LINE:
                        buf.clear()
                        scan = 0
                        discarding = True
                        await self._oversized()
        finally:
            reader_done.set()
        await self._on_output_ended(child)

    async def _on_output_ended(self, child: ChildProcess) -> None:
        """The child's stdout ended: fail what is pending, fail the active run as crashed,
        log the (redacted) stderr tail, and make sure the process is gone."""
        if child is not self._child:
            return
        self._alive = False
        self._ledger.fail_all("claude exited")
        if self._disposed or self._starting:
            return  # dispose / start() stop the child themselves
        run = self._run
        self._withdraw_permissions(None)
        if run is not None and not run.done.is_set():
            run.finish(RunOutcome.failed("provider_crashed", "claude ended its output"))
        # It may still be running with its stdout closed: make sure it is gone.
        await self._stop_child(child, eof_grace=0.5)
        self._log_exit(child, "unexpectedly")

    def _log_exit(self, child: ChildProcess, how: str) -> None:
        tail = child.stderr_tail()[-LOG_TAIL_CHARS:]
        log.warning(
            "claude (pid %d) ended %s (exit status %s); stderr tail: %s",
            child.pid,
            how,
            child.returncode,
            tail.strip() or "(empty)",
        )

    # ------------------------------------------------------------------ writing

    async def _write(self, message: Mapping[str, Any]) -> None:
        await self._write_bytes(msgspec.json.encode(message) + b"\n")

    async def _write_bytes(self, data: bytes) -> None:
        child = self._child
        if child is None or not self._alive:
            raise _Gone
        try:
            async with self._write_lock:
                with anyio.fail_after(SEND_TIMEOUT):
                    await child.stdin.send(data)
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
        return run if run is not None and not run.done.is_set() else None

    async def _emit(self, run: ClaudeRun | None, payload: ProviderPayload) -> None:
        """Emit ``payload`` for ``run`` with the line it came from as its raw record."""
        if run is not None and not run.done.is_set() and not self._disposed:
            await run.ctx.emit(payload, self._raw)

    async def _oversized(self) -> None:
        log.warning("claude wrote a line longer than %d bytes; skipped it", MAX_LINE)
        await self._emit(self._active_run(), _OVERSIZED)

    async def _stray(self, what: str) -> None:
        run = self._active_run()
        log.info("claude: ignored a stray %s record (run active: %s)", what, run is not None)
        await self._emit(run, _STRAY)

    async def _dispatch_line(self, line: bytes) -> None:
        self._raw = line
        try:
            await self._dispatch(line)
        finally:
            self._raw = None

    async def _dispatch(self, line: bytes) -> None:
        try:
            message = msgspec.json.decode(line)
        except msgspec.DecodeError:
            message = None
        if not isinstance(message, dict):
            log.info("claude: ignored a line that is not a JSON object (%d bytes)", len(line))
            await self._emit(self._active_run(), _UNPARSEABLE)
            return
        kind = message.get("type")
        try:
            if kind == "control_response":
                await self._on_control_response(message)
            elif kind == "control_request":
                await self._on_control_request(message)
            elif kind == "control_cancel_request":
                self._on_control_cancel(message)
            elif kind in _TURN_TYPES:
                run = self._correlate(message)
                if run is None:
                    await self._stray(str(kind))
                elif kind == "stream_event":
                    await self._on_stream_event(run, message)
                elif kind == "assistant":
                    await self._on_assistant(run, message)
                elif kind == "user":
                    await self._on_user(run, message)
                elif kind == "system":
                    await self._on_system(run, message)
                else:
                    await self._on_result(run, message)
            elif kind in protocol.IGNORED_TYPES:
                return
            else:
                await self._on_unknown(kind)
        except (KeyError, TypeError, ValueError, AttributeError):
            log.exception("claude: a %s record could not be handled", _word(kind))
            await self._emit(self._active_run(), _UNPARSEABLE)

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
            if valid_session_id(sid) and (
                kind == "result" or (kind == "system" and message.get("subtype") == "init")
            ):
                self._cli_session_id = sid
        elif isinstance(sid, str) and sid != self._cli_session_id:
            return None
        return run

    async def _on_unknown(self, kind: object) -> None:
        run = self._active_run()
        name = kind if isinstance(kind, str) else "?"
        log.info("claude: ignored a record of unknown type %r", name[:40])
        if run is not None and name not in run.unknown_types:
            run.unknown_types.add(name)
            await self._emit(run, _UNKNOWN)

    async def _on_system(self, run: ClaudeRun, message: dict[str, Any]) -> None:
        subtype = message.get("subtype")
        if subtype == "init":
            model = message.get("model")
            if isinstance(model, str):
                self._model = model
        elif subtype == "api_retry":
            await self._emit(run, _RETRY)

    async def _on_stream_event(self, run: ClaudeRun, message: dict[str, Any]) -> None:
        if message.get("parent_tool_use_id") is not None:
            return  # a subagent's stream: its tool calls still show up, its text does not
        event = message.get("event")
        if not isinstance(event, dict):
            return
        kind = event.get("type")
        if kind == "content_block_delta":
            delta = event.get("delta")
            if not isinstance(delta, dict):
                return
            if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
                await self._emit(run, TextDelta(text=delta["text"]))
            elif delta.get("type") == "thinking_delta" and isinstance(delta.get("thinking"), str):
                await self._emit(run, ThinkingDelta(text=delta["thinking"]))
        elif kind == "message_start":
            body = event.get("message")
            if isinstance(body, dict):
                if isinstance(body.get("id"), str):
                    run.streamed.add(body["id"])
                usage = body.get("usage")
                run.prompt_tokens = protocol.prompt_tokens(usage)
                run.output_tokens = _nonneg_int(
                    usage.get("output_tokens") if isinstance(usage, dict) else 0
                )
        elif kind == "message_delta":
            usage = event.get("usage")
            if isinstance(usage, dict):
                run.output_tokens = _nonneg_int(usage.get("output_tokens")) or run.output_tokens

    async def _on_assistant(self, run: ClaudeRun, message: dict[str, Any]) -> None:
        body = message.get("message")
        if not isinstance(body, dict):
            return
        error = message.get("error")
        if isinstance(error, str):
            run.assistant_error = error
        synthetic = isinstance(error, str) or body.get("model") == "<synthetic>"
        main_thread = message.get("parent_tool_use_id") is None
        streamed = body.get("id") in run.streamed
        content = body.get("content")
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "tool_use":
                tool_id, name = block.get("id"), block.get("name")
                if isinstance(tool_id, str) and tool_id not in run.tools:
                    name = name if isinstance(name, str) and name else "tool"
                    run.tools[tool_id] = name
                    await self._emit(
                        run, ToolActivity(tool_id, name, "started", input=block.get("input"))
                    )
            elif synthetic or streamed or not main_thread:
                continue
            elif kind == "text" and _nonempty(block.get("text")):
                await self._emit(run, TextDelta(text=block["text"]))
            elif kind == "thinking" and _nonempty(block.get("thinking")):
                await self._emit(run, ThinkingDelta(text=block["thinking"]))

    async def _on_user(self, run: ClaudeRun, message: dict[str, Any]) -> None:
        body = message.get("message")
        content = body.get("content") if isinstance(body, dict) else None
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            tool_id = block.get("tool_use_id")
            if not isinstance(tool_id, str):
                continue
            name = run.tools.get(tool_id, "tool")
            status: Literal["completed", "failed"] = (
                "failed" if block.get("is_error") is True else "completed"
            )
            await self._emit(
                run,
                ToolActivity(
                    tool_id, name, status, output=protocol.tool_output(block.get("content"))
                ),
            )

    async def _on_result(self, run: ClaudeRun, message: dict[str, Any]) -> None:
        self._expect_results -= 1
        if self._cli_session_id is not None:
            self._has_transcript = True
        self._withdraw_permissions(run)
        await self._emit(run, self._usage(run, message))
        run.finish(
            protocol.classify_result(
                message, interrupting=run.interrupting, assistant_error=run.assistant_error
            )
        )

    def _usage(self, run: ClaudeRun, result: dict[str, Any]) -> Usage:
        tokens_in, tokens_out, cached = protocol.turn_tokens(result.get("usage"))
        self._cum_in += tokens_in
        self._cum_out += tokens_out
        self._cum_cached += cached
        cost = result.get("total_cost_usd")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost >= 0:
            # total_cost_usd is cumulative per CLI process (0 again after a restart).
            spent = cost - self._process_cost if cost >= self._process_cost else cost
            self._process_cost = float(cost)
            self._cum_cost = round((self._cum_cost or 0.0) + spent, 10)
        context = None
        if run.prompt_tokens is not None:
            context = ContextUsage(
                used_tokens=run.prompt_tokens + run.output_tokens,
                max_tokens=protocol.context_window(result.get("modelUsage"), self._model),
            )
        return Usage(
            context=context,
            cumulative=CumulativeUsage(
                input_tokens=self._cum_in,
                output_tokens=self._cum_out,
                cached_input_tokens=self._cum_cached,
                cost_usd=self._cum_cost,
            ),
        )

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
            await self._emit(self._active_run(), _UNPARSEABLE)
            return
        subtype = request.get("subtype") if isinstance(request, dict) else None
        if subtype == "can_use_tool" and isinstance(request, dict):
            self._on_can_use_tool(cli_id, request)
            return
        log.info("claude: declined a control request of subtype %r", _word(subtype))
        self._spawn(self._write_quietly, protocol.control_error(cli_id))
        await self._emit(self._active_run(), _DECLINED)

    def _on_can_use_tool(self, cli_id: str, request: dict[str, Any]) -> None:
        if cli_id in self._permissions:
            log.warning("claude repeated a permission request; ignored")
            return
        run = self._active_run()
        if run is None:
            log.warning("claude asked for a tool permission while no run is active; denied")
            deny = protocol.control_success(cli_id, protocol.deny_reply())
            self._spawn(self._write_quietly, deny)
            return
        tool_name = request.get("tool_name")
        tool_name = tool_name if isinstance(tool_name, str) and tool_name else "tool"
        display = request.get("display_name")
        display = display if isinstance(display, str) and display else tool_name
        raw_input = request.get("input")
        tool_input: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
        if tool_name == protocol.ASK_TOOL:
            parsed = protocol.parse_questions(tool_input)
            if parsed is not None:
                question, asked = parsed
                handle = run.ctx.open_interaction(question)
                permission = _Permission(cli_id, run, handle, tool_input, [], asked)
                self._permissions[cli_id] = permission
                self._spawn(self._answer_permission, permission)
                return
        updates = protocol.session_permission_updates(request.get("permission_suggestions"))
        command = tool_input.get("command") if tool_name == "Bash" else None
        approval = ApprovalRequest(
            action="tool",
            title=f"Allow Claude Code to use {display[:100]}",
            tool_name=tool_name,
            input=tool_input,
            command=command if isinstance(command, str) else None,
            cwd=self._config.cwd,
            modes=("once", "session") if updates else ("once",),
        )
        handle = run.ctx.open_interaction(approval)
        permission = _Permission(cli_id, run, handle, tool_input, updates)
        self._permissions[cli_id] = permission
        self._spawn(self._answer_permission, permission)

    async def _answer_permission(self, permission: _Permission) -> None:
        outcome = await permission.handle.wait()
        if permission.closed:
            return
        permission.closed = True
        self._permissions.pop(permission.cli_id, None)
        answer = outcome.answer
        interrupt = permission.run.ctx.interrupt_requested
        if permission.questions is not None:
            answers = (
                protocol.question_answers(permission.questions, answer)
                if outcome.status == "responded"
                else None
            )
            reply = (
                protocol.allow_reply({**permission.tool_input, "answers": answers})
                if answers is not None
                else protocol.deny_reply(interrupt=interrupt, message=protocol.NO_ANSWER_MESSAGE)
            )
        elif (
            outcome.status == "responded"
            and isinstance(answer, ApprovalAnswer)
            and answer.decision == "allow"
        ):
            reply = protocol.allow_reply(
                permission.tool_input,
                permission.session_updates if answer.mode == "session" else None,
            )
        else:
            reply = protocol.deny_reply(interrupt=interrupt)
        await self._write_quietly(protocol.control_success(permission.cli_id, reply))

    def _on_control_cancel(self, message: dict[str, Any]) -> None:
        permission = self._permissions.pop(str(message.get("request_id")), None)
        if permission is None:
            log.debug("claude cancelled a request that is not pending")
            return
        permission.closed = True
        permission.handle.withdraw()

    def _withdraw_permissions(self, run: ClaudeRun | None) -> None:
        """Withdraw the pending permission requests of ``run`` (all when ``None``): the
        CLI no longer waits for them, so no reply is sent."""
        for cli_id, permission in list(self._permissions.items()):
            if run is None or permission.run is run:
                del self._permissions[cli_id]
                permission.closed = True
                permission.handle.withdraw()


def _nonneg_int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _nonempty(value: object) -> bool:
    return isinstance(value, str) and bool(value)


def _word(value: object) -> str:
    """A short, safe rendering of an identifier-like value for the log."""
    if isinstance(value, str) and len(value) <= 40 and value.replace("_", "").isalnum():
        return value
    return "-" if value is None else "?"
