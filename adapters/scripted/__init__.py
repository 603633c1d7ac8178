"""The built-in scripted provider: deterministic runs driven by a script.

It is the embedded default for ``agent-bridge demo`` and the test double for everything
else: it streams text, tool activity and usage, asks approvals and questions and branches
on the answers, fails with a classified error, waits until interrupted, and can break the
provider contract on purpose for the runtime's tests.  It has no timers: every wait is on
an interaction or an interrupt.

Options (declared in its descriptor): session ``script`` (inline JSON, see
:mod:`adapters.scripted.script`) or ``scriptFile`` (a path to a JSON file); run ``script``
overrides the session's for one run.  Its recovery record carries the script and the
inputs so far, so ``session/resume`` works across bridge processes.  Every payload it emits
carries the script step it came from as its raw record (provenance: ``events/read`` with
``view: "raw"``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import msgspec

from agent_bridge.adapters.scripted.script import (
    ApprovalStep,
    CompleteWithPendingStep,
    CrashStep,
    CyclicStep,
    DiagnosticStep,
    EchoStep,
    FailStep,
    InvalidStep,
    PlanStep,
    QuestionSetStep,
    QuestionStep,
    Script,
    Step,
    StreamStep,
    TextStep,
    ThinkingStep,
    ToolStep,
    UsageStep,
    WaitForInterruptStep,
    decode_script,
)
from agent_bridge.errors import BridgeError
from agent_bridge.spi import (
    AgentProvider,
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
    TextDelta,
    ThinkingDelta,
    ToolActivity,
    Usage,
)
from agent_bridge.wire.events import PlanStep as WirePlanStep
from agent_bridge.wire.events import PlanUpdated as WirePlanUpdated
from agent_bridge.wire.interactions import (
    ApprovalAnswer,
    ApprovalRequest,
    Choice,
    QuestionAnswer,
    QuestionItem,
    QuestionRequest,
    QuestionSetAnswer,
    QuestionSetRequest,
)
from agent_bridge.wire.methods import RunInput
from agent_bridge.wire.providers import (
    ApprovalCapability,
    Capabilities,
    InteractionCapabilities,
    OptionDescriptor,
    ProviderDescriptor,
    QuestionCapability,
    RecoveryCapability,
    RunCapabilities,
)

__all__ = ["ScriptedProvider"]

VERSION = "1.0.0"
_CHECKPOINT_EVERY = 256


class _Failed(Exception):
    def __init__(self, code: ErrorCode) -> None:
        super().__init__(code)
        self.code = code


class _Crash(RuntimeError):
    """Raised on purpose by the ``crash`` step."""


def _load_script(options: Mapping[str, Any], key: str = "script") -> Script | None:
    try:
        if key in options and options[key] is not None:
            return decode_script(options[key])
        path = options.get("scriptFile")
        if key == "script" and isinstance(path, str):
            with open(path, "rb") as fh:
                return decode_script(json.load(fh))
    except (OSError, ValueError, msgspec.ValidationError):
        raise BridgeError("invalid_option", details={"option": key}) from None
    return None


class ScriptedRun(ProviderRun):
    """One scripted run, executed in a task of the session's task group."""

    def __init__(self, steps: Sequence[Step], input: RunInput, ctx: RunContext) -> None:
        self._steps = steps
        self._input = input
        self._ctx = ctx
        self._scope = anyio.CancelScope()
        self._done = anyio.Event()
        self._outcome = RunOutcome.completed("end_turn")
        self._error: BaseException | None = None
        self._ignore_interrupt = False
        self._steered: list[str] = []

    async def main(self) -> None:
        """Run the steps; record the outcome; never raises (``crash`` is recorded)."""
        try:
            with self._scope:
                await self._run_steps(self._steps)
            if self._scope.cancelled_caught:
                self._outcome = RunOutcome.interrupted()
        except _Failed as exc:
            self._outcome = RunOutcome.failed(exc.code, "scripted failure")
        except _Crash as exc:
            self._error = exc
        finally:
            self._done.set()

    async def wait(self) -> RunOutcome:
        await self._done.wait()
        if self._error is not None:
            raise self._error
        return self._outcome

    async def interrupt(self, reason: str) -> None:
        if not self._ignore_interrupt:
            self._scope.cancel()

    async def steer(self, input: RunInput) -> None:
        self._steered.append(input.text)
        await self._ctx.emit(TextDelta(text=f"[steer] {input.text}"), raw=input)

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
                n = max(1, step.chunks)
                size = max(1, -(-len(step.text) // n))
                for i in range(0, len(step.text), size):
                    await ctx.emit(TextDelta(text=step.text[i : i + size]), raw=step)
            elif isinstance(step, StreamStep):
                delta = TextDelta(text=step.text)
                for i in range(step.count):
                    await ctx.emit(delta, raw=step)
                    if i % _CHECKPOINT_EVERY == 0:
                        await anyio.lowlevel.checkpoint()
            elif isinstance(step, EchoStep):
                await ctx.emit(TextDelta(text=step.prefix + self._input.text), raw=step)
            elif isinstance(step, ThinkingStep):
                await ctx.emit(ThinkingDelta(text=step.text), raw=step)
            elif isinstance(step, ToolStep):
                await self._tool(step)
            elif isinstance(step, UsageStep):
                await ctx.emit(
                    Usage(
                        context=None
                        if step.context_tokens is None
                        else ContextUsage(step.context_tokens, step.max_tokens),
                        cumulative=CumulativeUsage(
                            input_tokens=step.input_tokens,
                            output_tokens=step.output_tokens,
                            cost_usd=step.cost_usd,
                        ),
                    ),
                    raw=step,
                )
            elif isinstance(step, PlanStep):
                await ctx.emit(
                    WirePlanUpdated(tuple(WirePlanStep(i.text, i.status) for i in step.steps)),
                    raw=step,
                )
            elif isinstance(step, DiagnosticStep):
                await ctx.emit(
                    Diagnostic(level=step.level, code=step.code, message=step.message), raw=step
                )
            elif isinstance(step, ApprovalStep):
                await self._approval(step)
            elif isinstance(step, QuestionStep):
                await self._question(step)
            elif isinstance(step, QuestionSetStep):
                await self._question_set(step)
            elif isinstance(step, FailStep):
                raise _Failed(step.code)
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

    async def _tool(self, step: ToolStep) -> None:
        ctx = self._ctx
        await ctx.emit(ToolActivity(step.id, step.name, "started", input=step.input), raw=step)
        if step.output is not None:
            await ctx.emit(ToolActivity(step.id, step.name, "output", output=step.output), raw=step)
        await ctx.emit(
            ToolActivity(step.id, step.name, step.status, exit_code=step.exit_code), raw=step
        )

    async def _approval(self, step: ApprovalStep) -> None:
        outcome = await self._ctx.ask(
            ApprovalRequest(
                action="tool",
                title=step.title,
                tool_name=step.tool_name,
                input=step.input,
                command=step.command,
                modes=tuple(step.modes),
            )
        )
        allowed = isinstance(outcome.answer, ApprovalAnswer) and outcome.answer.decision == "allow"
        await self._run_steps(step.on_allow if allowed else step.on_deny)

    async def _question(self, step: QuestionStep) -> None:
        outcome = await self._ctx.ask(
            QuestionRequest(
                prompt=step.prompt,
                choices=tuple(Choice(c.id, c.label) for c in step.choices),
                allow_free_text=step.allow_free_text,
            )
        )
        answer = outcome.answer
        if not isinstance(answer, QuestionAnswer):
            await self._run_steps(step.on_cancel)
        elif answer.choice is not None:
            await self._run_steps(step.branches.get(answer.choice, []))
        else:
            await self._ctx.emit(TextDelta(text=f"Answer: {answer.text}"), raw=step)
            await self._run_steps(step.on_text)

    async def _question_set(self, step: QuestionSetStep) -> None:
        outcome = await self._ctx.ask(
            QuestionSetRequest(
                title=step.title,
                items=tuple(
                    QuestionItem(i.key, i.prompt, tuple(Choice(c.id, c.label) for c in i.choices))
                    for i in step.items
                ),
            )
        )
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

    async def start_run(
        self, input: RunInput, options: Mapping[str, Any], ctx: RunContext
    ) -> ProviderRun:
        if self._disposed:
            raise BridgeError("session_closed")
        override = _load_script(options)
        steps = (override or self._script).for_run(len(self._history))
        self._history.append(input.text)
        run = ScriptedRun(steps, input, ctx)
        self._ctx.task_group.start_soon(run.main)
        return run

    def export_recovery_record(self) -> Any:
        return {"script": msgspec.to_builtins(self._script), "history": list(self._history)}

    async def dispose(self) -> None:
        self._disposed = True


class ScriptedProvider(AgentProvider):
    """The built-in deterministic provider (id ``scripted``)."""

    id = "scripted"

    def describe(self) -> ProviderDescriptor:
        return ProviderDescriptor(
            id=self.id,
            display_name="Scripted (built-in)",
            version=VERSION,
            maturity="verified",
            capabilities=Capabilities(
                run=RunCapabilities(interrupt="cooperative", steer=True, max_concurrent_runs=1),
                interactions=InteractionCapabilities(
                    approval=ApprovalCapability(supported=True, modes=("once", "session")),
                    question=QuestionCapability(supported=True, question_set=True),
                ),
                recovery=RecoveryCapability(resume=True),
            ),
            options=(
                OptionDescriptor(
                    name="script",
                    scope="session",
                    type="json",
                    description="The script every run follows (see the scripted provider docs).",
                ),
                OptionDescriptor(
                    name="scriptFile",
                    scope="session",
                    type="string",
                    description="Path to a JSON file holding the script.",
                ),
                OptionDescriptor(
                    name="script",
                    scope="run",
                    type="json",
                    description="A script for this run only.",
                ),
            ),
        )

    async def create_session(self, ctx: SessionContext) -> ProviderSession:
        return ScriptedSession(ctx, _load_script(ctx.options), [])

    async def resume_session(self, ctx: SessionContext, opaque: Any) -> ProviderSession:
        if not isinstance(opaque, dict) or not isinstance(opaque.get("history"), list):
            raise BridgeError("recovery_invalid")
        try:
            script = decode_script(opaque.get("script") or {})
        except msgspec.ValidationError:
            raise BridgeError("recovery_invalid") from None
        history = [str(h) for h in opaque["history"]]
        return ScriptedSession(ctx, _load_script(ctx.options) or script, history)
