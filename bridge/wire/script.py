"""The scripted provider's script language, as msgspec types, and its validation (decoded
strictly, so a bad script is a clear ``invalid_option`` error at ``session/create``).

A script is ``{"steps": [...]}`` (the same steps for every run) or
``{"runs": [{"steps": [...]}, ...]}`` (run *n* uses entry *n*, the last one repeats).
Each step is an object with a ``type``:

==================== ==========================================================
``text``             stream ``text`` as ``chunks`` deltas
``stream``           emit ``count`` deltas of ``text`` (benchmarks, soak tests)
``echo``             reply with the run's input text
``received``         reply with what the run's input held, as JSON: its blocks, an
                     image by its type, size and SHA-256 (for tests of run input)
``thinking``         a reasoning delta
``tool``             tool activity: started, optional output, completed/failed
``usage``            a usage event (context occupancy and cumulative spend)
``plan``             a plan update
``diagnostic``       a diagnostic event
``approval``         ask an approval; continue with ``onAllow`` or ``onDeny``
``question``         ask a question; continue with ``branches[choice]`` or ``onText``
``questionSet``      ask keyed questions; continue with ``then``
``fail``             end the run as failed with ``code``
``waitForInterrupt`` wait until interrupted (``ignoreInterrupt``: never end by itself)
``invalid``          emit a payload of the wrong shape (contract tests)
``cyclic``           emit a payload that contains a cycle (contract tests)
``completeWithPending`` open an approval and report success without waiting
``crash``            raise inside the provider (contract tests)
``emit``             emit recorded provider ``payloads`` as they are (``raw``: their
                     recorded raw record, kept as the events' provenance)
``interaction``      ask a recorded wire ``request``; continue with ``then`` when the
                     answer takes the branch the recorded ``answer`` took, else
                     ``otherwise``
``complete``         end the run as completed with ``stopReason``
==================== ==========================================================

``emit``, ``interaction`` and ``complete`` are what ``agent-bridge record`` writes (see
:mod:`agent_bridge.commands.record`); a recorded script also carries ``recorded``, what the
recording saw (provider, inputs, events), for hosts that check a replay against it.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from agent_bridge.wire.errors import ErrorCode
from agent_bridge.wire.events import ProviderPayload
from agent_bridge.wire.inputs import CommandInfo
from agent_bridge.wire.interactions import Answer, InteractionRequest
from agent_bridge.wire.settings import SessionSettings

__all__ = ["RecordedRun", "Recording", "Script", "Step", "decode_script", "read_script_file"]


class _Step(msgspec.Struct, forbid_unknown_fields=True, rename="camel", tag_field="type"):
    pass


class TextStep(_Step, tag="text"):
    text: str
    chunks: int = 1


class StreamStep(_Step, tag="stream"):
    count: int
    text: str = "x"


class EchoStep(_Step, tag="echo"):
    prefix: str = "You said: "


class ReceivedStep(_Step, tag="received"):
    pass


class ThinkingStep(_Step, tag="thinking"):
    text: str


class ToolStep(_Step, tag="tool"):
    name: str
    id: str = "tool_1"
    input: Any = None
    output: str | None = None
    status: Literal["completed", "failed"] = "completed"
    exit_code: int | None = None


class UsageStep(_Step, tag="usage"):
    context_tokens: int | None = None
    max_tokens: int | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None


class PlanItem(msgspec.Struct, forbid_unknown_fields=True):
    text: str
    status: Literal["pending", "inProgress", "completed"] = "pending"


class PlanStep(_Step, tag="plan"):
    steps: list[PlanItem]


class DiagnosticStep(_Step, tag="diagnostic"):
    code: str
    message: str = ""
    level: Literal["info", "warning", "error"] = "info"


class ApprovalStep(_Step, tag="approval"):
    title: str = "Run a tool"
    tool_name: str | None = None
    input: Any = None
    command: str | None = None
    modes: list[Literal["once", "session"]] = msgspec.field(default_factory=lambda: ["once"])
    on_allow: list[Step] = msgspec.field(default_factory=list)
    on_deny: list[Step] = msgspec.field(default_factory=list)


class ChoiceSpec(msgspec.Struct, forbid_unknown_fields=True):
    id: str
    label: str


class QuestionStep(_Step, tag="question"):
    prompt: str
    choices: list[ChoiceSpec] = msgspec.field(default_factory=list)
    allow_free_text: bool = False
    branches: dict[str, list[Step]] = msgspec.field(default_factory=dict)
    on_text: list[Step] = msgspec.field(default_factory=list)
    on_cancel: list[Step] = msgspec.field(default_factory=list)


class QuestionSetItem(msgspec.Struct, forbid_unknown_fields=True):
    key: str
    prompt: str
    choices: list[ChoiceSpec] = msgspec.field(default_factory=list)


class QuestionSetStep(_Step, tag="questionSet"):
    items: list[QuestionSetItem]
    title: str = "Questions"
    then: list[Step] = msgspec.field(default_factory=list)


class FailStep(_Step, tag="fail"):
    code: ErrorCode = "provider_failed"
    #: the failure's ``details`` (allowlisted keys only, e.g. ``cause``, ``resetsAt``)
    details: dict[str, str] | None = None


class WaitForInterruptStep(_Step, tag="waitForInterrupt"):
    ignore_interrupt: bool = False


class InvalidStep(_Step, tag="invalid"):
    pass


class CyclicStep(_Step, tag="cyclic"):
    pass


class CompleteWithPendingStep(_Step, tag="completeWithPending"):
    pass


class CrashStep(_Step, tag="crash"):
    pass


class EmitStep(_Step, tag="emit"):
    payloads: list[ProviderPayload]
    raw: Any = None


class InteractionStep(_Step, tag="interaction"):
    request: InteractionRequest
    answer: Answer | None = None
    then: list[Step] = msgspec.field(default_factory=list)
    otherwise: list[Step] = msgspec.field(default_factory=list)


class CompleteStep(_Step, tag="complete"):
    stop_reason: str | None = None


Step = (
    TextStep
    | StreamStep
    | EchoStep
    | ReceivedStep
    | ThinkingStep
    | ToolStep
    | UsageStep
    | PlanStep
    | DiagnosticStep
    | ApprovalStep
    | QuestionStep
    | QuestionSetStep
    | FailStep
    | WaitForInterruptStep
    | InvalidStep
    | CyclicStep
    | CompleteWithPendingStep
    | CrashStep
    | EmitStep
    | InteractionStep
    | CompleteStep
)


class RunScript(msgspec.Struct, forbid_unknown_fields=True):
    steps: list[Step]


class RecordedRun(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    """One recorded run: its input and its events' payloads (ids and times aside)."""

    input: str
    events: list[dict[str, Any]]


class Recording(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    """What ``agent-bridge record`` saw: the session, its provider and its runs."""

    provider: str
    session_id: str
    recorded_at: str
    runs: list[RecordedRun]
    provider_version: str | None = None


class Script(msgspec.Struct, forbid_unknown_fields=True):
    """A whole script: ``steps`` for every run, or ``runs`` for run-by-run scripts;
    ``commands``: the commands the session offers (``session/commands``; a ``command``
    block reaches the run like any other); ``settings``: the models and modes it offers
    (``session/settings``; ``session/configure`` switches among them); ``recorded`` only
    in scripts written by ``agent-bridge record`` (not used to run)."""

    steps: list[Step] | None = None
    runs: list[RunScript] | None = None
    commands: list[CommandInfo] | None = None
    settings: SessionSettings | None = None
    recorded: Recording | None = None

    def for_run(self, index: int) -> list[Step]:
        """Return the steps of run number ``index`` (0-based)."""
        if self.runs:
            return self.runs[min(index, len(self.runs) - 1)].steps
        return self.steps or [EchoStep()]


def decode_script(value: Any) -> Script:
    """Return ``value`` (parsed JSON) as a :class:`Script`; raises ``msgspec.ValidationError``."""
    return msgspec.convert(value, Script)


def read_script_file(path: str) -> Script:
    """The script in the JSON file ``path``; raises ``OSError``, ``ValueError`` or
    ``msgspec.ValidationError``."""
    import json  # only for a script file (an inline script is already parsed)

    with open(path, "rb") as fh:
        return decode_script(json.load(fh))
