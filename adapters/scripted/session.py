"""A scripted session and its runs: each run follows its script's steps in a supervised
task of the session's task group.

There are no timers: every wait is on an interaction or an interrupt.  Every payload a
run emits carries the script step it came from as its raw record (provenance:
``events/read`` with ``view: "raw"``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio
import anyio.lowlevel
import msgspec

from agent_bridge.adapters.kit.approvals import approval_verdict, is_allow
from agent_bridge.adapters.kit.runs import RunHandle
from agent_bridge.adapters.kit.tasks import TaskSupervisor
from agent_bridge.adapters.scripted import mapping
from agent_bridge.adapters.scripted.script import load_script
from agent_bridge.errors import BridgeError
from agent_bridge.spi import (
    ProviderRun,
    ProviderSession,
    RunContext,
    RunOutcome,
    SessionContext,
)
from agent_bridge.wire.errors import ErrorCode
from agent_bridge.wire.events import CommandsUpdated, TextDelta, ThinkingDelta, ToolActivity
from agent_bridge.wire.inputs import CommandInfo
from agent_bridge.wire.interactions import (
    ApprovalRequest,
    QuestionAnswer,
    QuestionSetAnswer,
)
from agent_bridge.wire.methods import RunInput
from agent_bridge.wire.script import (
    ApprovalStep,
    CompleteStep,
    CompleteWithPendingStep,
    CrashStep,
    CyclicStep,
    DiagnosticStep,
    EchoStep,
    EmitStep,
    FailStep,
    InteractionStep,
    InvalidStep,
    PlanStep,
    QuestionSetStep,
    QuestionStep,
    ReceivedStep,
    Script,
    Step,
    StreamStep,
    TextStep,
    ThinkingStep,
    ToolStep,
    UsageStep,
    WaitForInterruptStep,
)
from agent_bridge.wire.settings import SessionSetting, SessionSettings

__all__ = ["ScriptedRun", "ScriptedSession"]

log = logging.getLogger("agent_bridge.provider.scripted")

_CHECKPOINT_EVERY = 1024
#: deltas per emit_many call of a ``stream`` step (a divisor of _CHECKPOINT_EVERY).  The
#: runtime's cost of a batch (validation, stamping set-up, the hand-over to each
#: subscriber) is ~12 us of the event loop's CPU whatever its size: at 64 that was ~0.15
#: us an event of ~1.1; at 256 it is ~0.05 (bench/README.md, issue 34)
_CHUNK = 256


class _Failed(Exception):
    def __init__(self, code: ErrorCode, details: dict[str, str] | None = None) -> None:
        super().__init__(code)
        self.code = code
        self.details = details


class _Completed(Exception):
    def __init__(self, stop_reason: str | None) -> None:
        super().__init__(stop_reason)
        self.stop_reason = stop_reason


class _Crash(RuntimeError):
    """Raised on purpose by the ``crash`` step."""


class ScriptedRun(RunHandle):
    """One scripted run, executed in a task of the session's task group."""

    def __init__(
        self,
        steps: Sequence[Step],
        input: RunInput,
        ctx: RunContext,
        on_commands: Callable[[tuple[CommandInfo, ...]], None] | None = None,
    ) -> None:
        super().__init__()
        self._steps = steps
        #: told of an emitted ``commands.updated`` (the session's list follows it)
        self._on_commands = on_commands
        self._input = input
        self._ctx = ctx
        self._scope = anyio.CancelScope()
        self._ignore_interrupt = False
        self._steered: list[str] = []

    async def main(self) -> None:
        """Run the steps and finish with how they ended (``crash`` makes :meth:`wait`
        raise, on purpose)."""
        outcome = RunOutcome.completed("end_turn")
        try:
            with self._scope:
                await self._run_steps(self._steps)
            if self._scope.cancelled_caught:
                outcome = RunOutcome.interrupted()
        except _Completed as exc:
            outcome = RunOutcome.completed(exc.stop_reason)
        except _Failed as exc:
            outcome = RunOutcome.failed(exc.code, "scripted failure", exc.details)
        except _Crash as exc:
            self.finish_with_error(exc)
        except Exception as exc:
            # A bug here, not a scripted crash: fail the run; the supervisor logs it.
            self.finish(RunOutcome.failed("provider_contract", type(exc).__name__))
            raise
        finally:
            self.finish(outcome)

    async def interrupt(self, reason: str) -> None:
        if not self._ignore_interrupt:
            self._scope.cancel()

    async def steer(self, input: RunInput) -> None:
        text = input.plain_text()
        self._steered.append(text)
        await self._ctx.emit(TextDelta(text=f"[steer] {text}"), raw=input)

    async def _honour_interrupt(self) -> None:
        """Stop here if an interrupt has begun (its delivery may still be on its way)."""
        if self._ctx.interrupt_requested and not self._ignore_interrupt:
            self._scope.cancel()
            await anyio.lowlevel.checkpoint()

    async def _run_steps(self, steps: Sequence[Step]) -> None:
        ctx = self._ctx
        for step in steps:
            await self._honour_interrupt()
            if isinstance(step, TextStep):
                for delta in mapping.text_chunks(step):
                    await ctx.emit(delta, raw=step)
            elif isinstance(step, StreamStep):
                await self._stream(step)
            elif isinstance(step, EchoStep):
                await ctx.emit(TextDelta(text=step.prefix + self._input.plain_text()), raw=step)
            elif isinstance(step, ReceivedStep):
                await ctx.emit(TextDelta(text=mapping.received(self._input)), raw=step)
            elif isinstance(step, ThinkingStep):
                await ctx.emit(ThinkingDelta(text=step.text), raw=step)
            elif isinstance(step, ToolStep):
                for activity in mapping.tool_payloads(step):
                    await ctx.emit(activity, raw=step)
            elif isinstance(step, UsageStep):
                await ctx.emit(mapping.usage_payload(step), raw=step)
            elif isinstance(step, PlanStep):
                await ctx.emit(mapping.plan_payload(step), raw=step)
            elif isinstance(step, DiagnosticStep):
                await ctx.emit(mapping.diagnostic_payload(step), raw=step)
            elif isinstance(step, ApprovalStep):
                await self._approval(step)
            elif isinstance(step, QuestionStep):
                await self._question(step)
            elif isinstance(step, QuestionSetStep):
                await self._question_set(step)
            elif isinstance(step, FailStep):
                raise _Failed(step.code, step.details)
            elif isinstance(step, WaitForInterruptStep):
                self._ignore_interrupt = step.ignore_interrupt
                await anyio.sleep_forever()
            elif isinstance(step, InvalidStep):
                await ctx.emit(TextDelta(text=12345), raw=step)  # type: ignore[arg-type]
            elif isinstance(step, CyclicStep):
                loop: list[Any] = []
                loop.append(loop)
                await ctx.emit(ToolActivity("tool_cycle", "cycle", "started", input=loop), raw=step)
            elif isinstance(step, CompleteWithPendingStep):
                ctx.open_interaction(ApprovalRequest(action="tool", title="never answered"))
                return
            elif isinstance(step, CrashStep):
                raise _Crash("scripted crash")
            elif isinstance(step, EmitStep):
                raw = step if step.raw is None else step.raw
                for payload in step.payloads:
                    if isinstance(payload, CommandsUpdated) and self._on_commands is not None:
                        self._on_commands(payload.commands)
                    await ctx.emit(payload, raw=raw)
            elif isinstance(step, InteractionStep):
                outcome = await ctx.ask(step.request)
                recorded = mapping.takes_recorded_branch(step.answer, outcome)
                await self._run_steps(step.then if recorded else step.otherwise)
            elif isinstance(step, CompleteStep):
                raise _Completed(step.stop_reason)

    async def _stream(self, step: StreamStep) -> None:
        """Emit ``step.count`` deltas of ``step.text``, :data:`_CHUNK` per
        :meth:`RunContext.emit_many`, letting other tasks run every
        :data:`_CHECKPOINT_EVERY`."""
        ctx = self._ctx
        chunk = [TextDelta(text=step.text)] * _CHUNK
        done = 0
        while done < step.count:
            left = step.count - done
            await ctx.emit_many(chunk if left >= _CHUNK else chunk[:left], raw=step)
            if done % _CHECKPOINT_EVERY == 0:
                await anyio.lowlevel.checkpoint()
            done += min(left, _CHUNK)

    async def _approval(self, step: ApprovalStep) -> None:
        outcome = await self._ctx.ask(mapping.approval_request(step))
        allowed = is_allow(approval_verdict(outcome))
        await self._run_steps(step.on_allow if allowed else step.on_deny)

    async def _question(self, step: QuestionStep) -> None:
        outcome = await self._ctx.ask(mapping.question_request(step))
        answer = outcome.answer
        if not isinstance(answer, QuestionAnswer):
            await self._run_steps(step.on_cancel)
        elif answer.choice is not None:
            await self._run_steps(step.branches.get(answer.choice, []))
        else:
            await self._ctx.emit(TextDelta(text=f"Answer: {answer.text}"), raw=step)
            await self._run_steps(step.on_text)

    async def _question_set(self, step: QuestionSetStep) -> None:
        outcome = await self._ctx.ask(mapping.question_set_request(step))
        if isinstance(outcome.answer, QuestionSetAnswer):
            text = ", ".join(f"{k}={v}" for k, v in sorted(outcome.answer.answers.items()))
            await self._ctx.emit(TextDelta(text=f"Answers: {text}"), raw=step)
            await self._run_steps(step.then)


class ScriptedSession(ProviderSession):
    """A scripted conversation: the script plus the inputs seen so far."""

    def __init__(self, ctx: SessionContext, script: Script | None, history: list[str]) -> None:
        self._ctx = ctx
        self._script = script or Script()
        self._history = history
        self._disposed = False
        self._commands: tuple[CommandInfo, ...] | None = None
        self._settings: SessionSettings | None = self._script.settings
        self._tasks = TaskSupervisor(ctx.task_group, log, owner="scripted session")

    async def start_run(
        self, input: RunInput, options: Mapping[str, Any], ctx: RunContext
    ) -> ProviderRun:
        if self._disposed:
            raise BridgeError("session_closed")
        override = load_script(options)
        steps = (override or self._script).for_run(len(self._history))
        self._history.append(input.plain_text())
        run = ScriptedRun(steps, input, ctx, self._set_commands)
        self._tasks.start(run.main, name="run")
        return run

    def commands(self) -> tuple[CommandInfo, ...] | None:
        """The script's ``commands``, or those of the last ``commands.updated`` a run
        emitted (``None`` when neither named any)."""
        if self._commands is not None:
            return self._commands
        listed = self._script.commands
        return None if listed is None else tuple(listed)

    def _set_commands(self, commands: tuple[CommandInfo, ...]) -> None:
        self._commands = commands

    def model_and_mode(self) -> SessionSettings | None:
        """The script's ``settings``, with the current values ``configure`` chose."""
        return self._settings

    async def configure(self, model: str | None, mode: str | None) -> None:
        """Switch among the script's ``settings``: ``unsupported`` for a setting the
        script does not name, ``invalid_params`` for a value it does not offer."""
        settings = self._settings or SessionSettings()
        chosen: dict[str, SessionSetting | None] = {"model": settings.model, "mode": settings.mode}
        for name, value in (("model", model), ("mode", mode)):
            setting = chosen[name]
            if value is None:
                continue
            if setting is None:
                raise BridgeError("unsupported", details={"field": name})
            if setting.available and value not in {v.id for v in setting.available}:
                reason = f"the script does not offer this {name}"
                raise BridgeError("invalid_params", details={"field": name, "reason": reason})
            chosen[name] = SessionSetting(value, setting.available)
        self._settings = SessionSettings(chosen["model"], chosen["mode"])

    def export_recovery_record(self) -> Any:
        script = msgspec.to_builtins(self._script)
        del script["recorded"]  # what a recording saw is not needed to go on
        return {"script": script, "history": list(self._history)}

    async def dispose(self) -> None:
        self._disposed = True
