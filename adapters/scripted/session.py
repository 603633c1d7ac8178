"""A scripted session and its runs: each run follows its script's steps in a supervised
task of the session's task group.

There are no timers: every wait is on an interaction or an interrupt.  Every payload a
run emits carries the script step it came from as its raw record (provenance:
``events/read`` with ``view: "raw"``).

One test seam, off unless the bridge's environment holds :data:`HOLD_CONTINUED` set to
``1`` (no option or request turns it on): a run continued after a crash
(:meth:`ScriptedSession.continue_run`) waits before it asks its question again, until it
is interrupted or its session closes.  The window between the continue and the re-ask,
otherwise too short to hit, stays open, so a test can crash the bridge inside it
(``tests/test_journal_e2e.py``).
"""

from __future__ import annotations

import logging
import os
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
    InteractionOutcome,
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
    InteractionRequest,
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

#: the environment variable of the test seam (the module docstring); ``1``: on
HOLD_CONTINUED = "AGENT_BRIDGE_SCRIPTED_HOLD_CONTINUED"

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


def _branch(step: Step, name: str) -> Sequence[Step] | None:
    """The steps of the branch ``name`` of ``step`` (as :meth:`ScriptedRun._branch`
    names them), or ``None`` when it has none of that name."""
    if isinstance(step, ApprovalStep):
        return {"onAllow": step.on_allow, "onDeny": step.on_deny}.get(name)
    if isinstance(step, QuestionStep):
        if name.startswith("branch:"):
            return step.branches.get(name[len("branch:") :])
        return {"onCancel": step.on_cancel, "onText": step.on_text}.get(name)
    if isinstance(step, QuestionSetStep):
        return step.then if name == "then" else None
    if isinstance(step, InteractionStep):
        return {"then": step.then, "otherwise": step.otherwise}.get(name)
    return None


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
        #: where the run is in its script: step indexes and the branches taken between
        #: them (``[2, "onAllow", 0]``: the first step of step 2's ``onAllow``)
        self._path: list[int | str] = []
        #: the path of the step whose interaction the run waits on (``None``: it does not)
        self.waiting: tuple[int | str, ...] | None = None
        #: where :meth:`main` starts: the waiting step of a continued run (``None``: the top)
        self.resume_at: tuple[int | str, ...] | None = None
        #: the test seam (module docstring): wait before asking again at :attr:`resume_at`
        self.hold = False

    async def main(self) -> None:
        """Run the steps (from :attr:`resume_at` when set: the step a cut-off run waited
        on, asked again, and what follows it) and finish with how they ended (``crash``
        makes :meth:`wait` raise, on purpose)."""
        outcome = RunOutcome.completed("end_turn")
        try:
            with self._scope:
                if self.resume_at is None:
                    await self._run_steps(self._steps)
                else:
                    if self.hold:
                        await anyio.sleep_forever()
                    await self._run_from(self._steps, list(self.resume_at))
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

    @property
    def run_id(self) -> str:
        """The bridge's id of this run."""
        return self._ctx.run_id

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

    async def _run_from(self, steps: Sequence[Step], path: list[int | str]) -> None:
        """Continue at ``path`` in ``steps`` (see :attr:`_path`): the step it ends at runs
        (it asks its question again), then what follows it at every level up.  Raises
        ``recovery_invalid`` for a path the steps do not have."""
        index = path[0]
        if not isinstance(index, int) or not 0 <= index < len(steps):
            raise BridgeError("recovery_invalid")
        self._path.append(index)
        if len(path) == 1:
            if await self._run_step(steps[index]):
                self._path.pop()
                return
        else:
            branch = path[1]
            inner = _branch(steps[index], branch) if isinstance(branch, str) else None
            if inner is None:
                raise BridgeError("recovery_invalid")
            self._path.append(branch)
            await self._run_from(inner, path[2:])
            self._path.pop()
        self._path.pop()
        await self._run_steps(steps, index + 1)

    async def _run_steps(self, steps: Sequence[Step], start: int = 0) -> None:
        path = self._path
        for index in range(start, len(steps)):
            path.append(index)
            stop = await self._run_step(steps[index])
            path.pop()
            if stop:
                return

    async def _branch(self, name: str, steps: Sequence[Step]) -> None:
        """Run the branch ``name`` of the current step."""
        self._path.append(name)
        await self._run_steps(steps)
        self._path.pop()

    async def _ask(self, request: InteractionRequest) -> InteractionOutcome:
        """Ask ``request``, saying where the run waits while it does (the recovery record
        holds it, so a bridge that takes the session over continues here)."""
        self.waiting = tuple(self._path)
        try:
            return await self._ctx.ask(request)
        finally:
            self.waiting = None

    async def _run_step(self, step: Step) -> bool:
        """Run ``step``; return whether the steps of its level end here."""
        ctx = self._ctx
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
            return True
        elif isinstance(step, CrashStep):
            raise _Crash("scripted crash")
        elif isinstance(step, EmitStep):
            raw = step if step.raw is None else step.raw
            for payload in step.payloads:
                if isinstance(payload, CommandsUpdated) and self._on_commands is not None:
                    self._on_commands(payload.commands)
                await ctx.emit(payload, raw=raw)
        elif isinstance(step, InteractionStep):
            outcome = await self._ask(step.request)
            recorded = mapping.takes_recorded_branch(step.answer, outcome)
            if recorded:
                await self._branch("then", step.then)
            else:
                await self._branch("otherwise", step.otherwise)
        elif isinstance(step, CompleteStep):
            raise _Completed(step.stop_reason)
        return False

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
        outcome = await self._ask(mapping.approval_request(step))
        if is_allow(approval_verdict(outcome)):
            await self._branch("onAllow", step.on_allow)
        else:
            await self._branch("onDeny", step.on_deny)

    async def _question(self, step: QuestionStep) -> None:
        outcome = await self._ask(mapping.question_request(step))
        answer = outcome.answer
        if not isinstance(answer, QuestionAnswer):
            await self._branch("onCancel", step.on_cancel)
        elif answer.choice is not None:
            await self._branch(f"branch:{answer.choice}", step.branches.get(answer.choice, []))
        else:
            await self._ctx.emit(TextDelta(text=f"Answer: {answer.text}"), raw=step)
            await self._branch("onText", step.on_text)

    async def _question_set(self, step: QuestionSetStep) -> None:
        outcome = await self._ask(mapping.question_set_request(step))
        if isinstance(outcome.answer, QuestionSetAnswer):
            text = ", ".join(f"{k}={v}" for k, v in sorted(outcome.answer.answers.items()))
            await self._ctx.emit(TextDelta(text=f"Answers: {text}"), raw=step)
            await self._branch("then", step.then)


class ScriptedSession(ProviderSession):
    """A scripted conversation: the script plus how many runs it has had.

    Its recovery record is ``{"script", "runs"}`` (the count, not the inputs: a record
    saved after every run must not grow with the conversation) and, while a run waits on
    an interaction, ``"turn"``: that run's id, its number, its run-only ``script`` if it
    had one, and the ``path`` of the step it waits on, so a bridge that resumes the
    session can :meth:`continue_run` it there (``recovery.resumeTurn``).
    """

    def __init__(
        self,
        ctx: SessionContext,
        script: Script | None,
        runs: int,
        turn: dict[str, Any] | None = None,
    ) -> None:
        self._ctx = ctx
        self._script = script or Script()
        self._runs = runs
        #: the active run, and the script and number it runs with
        self._active: tuple[ScriptedRun, int, Any] | None = None
        #: the turn the record it was resumed from held (until it is continued)
        self._cut_turn = turn
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
        number = self._runs
        steps = (override or self._script).for_run(number)
        self._runs += 1
        self._cut_turn = None
        run = ScriptedRun(steps, input, ctx, self._set_commands)
        self._active = (run, number, options.get("script") if override is not None else None)
        self._tasks.start(run.main, name="run")
        return run

    async def continue_run(
        self, run_id: str, input: RunInput, options: Mapping[str, Any], ctx: RunContext
    ) -> ProviderRun:
        """Continue the run ``run_id`` at the step it waited on (the record's
        ``"turn"``): that step asks again, then the script goes on; nothing before it
        runs again.  Raises ``recovery_invalid`` when the record holds no such turn."""
        turn = self._cut_turn
        if self._disposed or turn is None or turn.get("runId") != run_id:
            raise BridgeError("recovery_invalid")
        try:
            number = int(turn["run"])
            path = tuple(turn["path"])
            own = turn.get("script")
            override = load_script({"script": own}) if own is not None else None
        except (KeyError, TypeError, ValueError, BridgeError):
            raise BridgeError("recovery_invalid") from None
        if not path or not all(isinstance(p, (int, str)) for p in path):
            raise BridgeError("recovery_invalid")
        self._cut_turn = None
        run = ScriptedRun(
            (override or self._script).for_run(number), input, ctx, self._set_commands
        )
        run.resume_at = path
        run.waiting = path  # it waits there again at once: a record saved now says so
        run.hold = os.environ.get(HOLD_CONTINUED) == "1"
        self._active = (run, number, own)
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
        record: dict[str, Any] = {"script": script, "runs": self._runs}
        turn = self._cut_turn
        if self._active is not None:
            run, number, own = self._active
            turn = None
            if run.waiting is not None and not run.finished:
                turn = {"runId": run.run_id, "run": number, "path": list(run.waiting)}
                if own is not None:
                    turn["script"] = own
        if turn is not None:
            record["turn"] = turn
        return record

    async def dispose(self) -> None:
        self._disposed = True
