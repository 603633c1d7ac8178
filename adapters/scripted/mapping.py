"""How the scripted provider's steps become the bridge's payloads and interactions: pure
functions (no I/O), one per kind of step the session does not have to drive itself.
"""

from __future__ import annotations

import base64
import hashlib

import msgspec

from agent_bridge.spi import InteractionOutcome
from agent_bridge.wire.events import (
    ContextUsage,
    CumulativeUsage,
    Diagnostic,
    PlanUpdated,
    TextDelta,
    ToolActivity,
    Usage,
)
from agent_bridge.wire.events import PlanStep as WirePlanStep
from agent_bridge.wire.inputs import ImageInput, ImageRecord, InputRecord
from agent_bridge.wire.interactions import (
    Answer,
    ApprovalAnswer,
    ApprovalRequest,
    Choice,
    QuestionAnswer,
    QuestionItem,
    QuestionRequest,
    QuestionSetRequest,
)
from agent_bridge.wire.methods import RunInput
from agent_bridge.wire.script import (
    ApprovalStep,
    DiagnosticStep,
    PlanStep,
    QuestionSetStep,
    QuestionStep,
    TextStep,
    ToolStep,
    UsageStep,
)

__all__ = [
    "approval_request",
    "diagnostic_payload",
    "plan_payload",
    "question_request",
    "question_set_request",
    "received",
    "takes_recorded_branch",
    "text_chunks",
    "tool_payloads",
    "usage_payload",
]


def text_chunks(step: TextStep) -> list[TextDelta]:
    """``text`` → ``chunks`` deltas of (nearly) equal size, at least one."""
    n = max(1, step.chunks)
    size = max(1, -(-len(step.text) // n))
    return [TextDelta(text=step.text[i : i + size]) for i in range(0, len(step.text), size)]


def tool_payloads(step: ToolStep) -> list[ToolActivity]:
    """``tool`` → started, the output if any, and completed or failed."""
    out = [ToolActivity(step.id, step.name, "started", input=step.input)]
    if step.output is not None:
        out.append(ToolActivity(step.id, step.name, "output", output=step.output))
    out.append(ToolActivity(step.id, step.name, step.status, exit_code=step.exit_code))
    return out


def usage_payload(step: UsageStep) -> Usage:
    """``usage`` → a usage event (context occupancy only when given)."""
    return Usage(
        context=None
        if step.context_tokens is None
        else ContextUsage(step.context_tokens, step.max_tokens),
        cumulative=CumulativeUsage(
            input_tokens=step.input_tokens,
            output_tokens=step.output_tokens,
            cost_usd=step.cost_usd,
        ),
    )


def plan_payload(step: PlanStep) -> PlanUpdated:
    """``plan`` → a plan update."""
    return PlanUpdated(tuple(WirePlanStep(i.text, i.status) for i in step.steps))


def diagnostic_payload(step: DiagnosticStep) -> Diagnostic:
    """``diagnostic`` → a diagnostic event."""
    return Diagnostic(level=step.level, code=step.code, message=step.message)


def approval_request(step: ApprovalStep) -> ApprovalRequest:
    """``approval`` → the approval to ask."""
    return ApprovalRequest(
        action="tool",
        title=step.title,
        tool_name=step.tool_name,
        input=step.input,
        command=step.command,
        modes=tuple(step.modes),
    )


def question_request(step: QuestionStep) -> QuestionRequest:
    """``question`` → the question to ask."""
    return QuestionRequest(
        prompt=step.prompt,
        choices=tuple(Choice(c.id, c.label) for c in step.choices),
        allow_free_text=step.allow_free_text,
    )


def question_set_request(step: QuestionSetStep) -> QuestionSetRequest:
    """``questionSet`` → the keyed questions to ask."""
    return QuestionSetRequest(
        title=step.title,
        items=tuple(
            QuestionItem(i.key, i.prompt, tuple(Choice(c.id, c.label) for c in i.choices))
            for i in step.items
        ),
    )


def takes_recorded_branch(recorded: Answer | None, outcome: InteractionOutcome) -> bool:
    """Whether a live settlement takes the branch a recorded answer took: the same
    approval decision, the same choice (or free text for free text), any answer to a
    question set; no answer when none was recorded (cancelled, expired, withdrawn)."""
    answer = outcome.answer
    if recorded is None or answer is None:
        return recorded is None and answer is None
    if isinstance(recorded, ApprovalAnswer):
        return isinstance(answer, ApprovalAnswer) and answer.decision == recorded.decision
    if isinstance(recorded, QuestionAnswer):
        if not isinstance(answer, QuestionAnswer):
            return False
        if recorded.choice is not None:
            return answer.choice == recorded.choice
        return answer.choice is None
    return type(answer) is type(recorded)


def received(input: RunInput) -> str:
    """The ``received`` step's reply: ``input``'s blocks as JSON, an image as the
    :class:`ImageRecord` of the bytes its ``data`` decodes to (so a test sees that they
    arrived whole)."""
    out: list[InputRecord] = []
    for block in input.blocks():
        if isinstance(block, ImageInput):
            data = base64.b64decode(block.data or "")
            digest = hashlib.sha256(data).hexdigest()
            out.append(ImageRecord(block.mime_type or "", len(data), digest, block.path))
        else:
            out.append(block)
    return msgspec.json.encode(out).decode()
