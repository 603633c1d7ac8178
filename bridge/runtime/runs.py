"""A run: one turn of a session, from ``run.started`` to its one terminal event.

:class:`Run` owns its state (every change through :data:`~agent_bridge.states.RUN_TRANSITIONS`),
its pending interactions and its terminal event, and holds the rules that hold whatever
the provider does:

* a run never reports success while an interaction is pending, and every settlement is
  published before the run's terminal event;
* an interrupt settles pending interactions as ``cancelled`` at once, is delivered to the
  provider, and is bounded: past the interrupt grace the run ends as interrupted (forced)
  and the provider session is disposed (the next run resumes it where the provider can);
* new interactions only while the run is running or awaiting input.

:class:`RunContext` is what the provider's run sees of it (the SPI's
:class:`~agent_bridge.spi.RunContext`).
"""

from __future__ import annotations

import calendar
import logging
import math
import operator
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, cast

import anyio
import msgspec

from agent_bridge.errors import BridgeError
from agent_bridge.runtime.boundary import provider_call, quietly
from agent_bridge.runtime.inputs import PreparedInput, prepare
from agent_bridge.runtime.interactions import Interaction
from agent_bridge.runtime.stream import UnencodableEvent
from agent_bridge.spi import InteractionOutcome, ProviderRun, RunOutcome
from agent_bridge.states import RUN_TERMINAL, RUN_TRANSITIONS, RunState, transition
from agent_bridge.wire.errors import ErrorCode, ErrorInfo, safe_details
from agent_bridge.wire.events import (
    Diagnostic,
    EventPayload,
    InteractionRequested,
    InteractionSettled,
    LimitsUpdated,
    ProviderPayload,
    RunCompleted,
    RunFailed,
    RunInterrupted,
    RunStarted,
    SettingsUpdated,
    TextDelta,
    ThinkingDelta,
    ToolActivity,
)
from agent_bridge.wire.interactions import ApprovalAnswer, InteractionRequest, SettledStatus
from agent_bridge.wire.methods import RunInput, RunInterruptResult

if TYPE_CHECKING:
    from agent_bridge.runtime.sessions import Session

__all__ = ["Run", "RunContext"]

log = logging.getLogger("agent_bridge.runtime")

_encode = msgspec.json.encode
_provider_payload_decoder: Final = msgspec.json.Decoder(ProviderPayload)
_request_decoder: Final = msgspec.json.Decoder(InteractionRequest)
#: the payloads whose whole validation is that their one field is a str
_DELTAS: Final = frozenset({TextDelta, ThinkingDelta})
_STR: Final = frozenset({str})
_text: Final = operator.attrgetter("text")


def _contract(message: str, level: str = "error") -> Diagnostic:
    return Diagnostic(level=level, code="provider_contract", message=message)  # type: ignore[arg-type]


class Run:
    """One run of a session (see the module docstring)."""

    __slots__ = (
        "_options",
        "_retried",
        "_retry_wake",
        "checkpoints",
        "done",
        "id",
        "input",
        "interactions",
        "interrupt_reason",
        "open_tools",
        "pending",
        "provider_run",
        "rebind",
        "session",
        "state",
    )

    def __init__(self, run_id: str, session: Session, input: PreparedInput) -> None:
        self.id = run_id
        self.session = session
        #: the checked input (see :func:`agent_bridge.runtime.inputs.prepare_input`)
        self.input = input
        self.state: RunState = "starting"
        self.provider_run: ProviderRun | None = None
        self.pending: dict[str, Interaction] = {}
        #: every interaction the run opened (pruned to settled records when it ends)
        self.interactions: list[Interaction] = []
        self.done = anyio.Event()
        self.interrupt_reason = ""
        #: the run options it started with (a retry after a limit starts with them again)
        self._options: Mapping[str, Any] = {}
        #: whether it already ran again after a limit (the policy retries once)
        self._retried = False
        #: set while it waits to retry after a limit; an interrupt wakes it
        self._retry_wake: anyio.Event | None = None
        #: ``(sequence, position)`` of each provider checkpoint (see
        #: :meth:`RunContext.checkpoint`), stored with the run's end
        self.checkpoints: list[tuple[int, bytes]] = []
        #: a continued run (:meth:`continue_cut`): the interactions it had pending when its
        #: bridge died, in order, each bound to the next the provider raises again
        self.rebind: list[Interaction] = []
        #: the tool calls the provider reported started and not ended: (name, parent)
        #: by id; any left when the run ends are reported ``failed`` before its terminal
        #: event (a provider that ignored its interrupt, or never closed them itself)
        self.open_tools: dict[str, tuple[str, str | None]] = {}

    def note_tool(self, activity: ToolActivity) -> None:
        """Follow a tool call's life for :attr:`open_tools`."""
        status = activity.status
        if status == "started":
            self.open_tools.setdefault(
                activity.tool_call_id, (activity.name, activity.parent_tool_call_id)
            )
        elif status != "output":
            self.open_tools.pop(activity.tool_call_id, None)

    @property
    def terminal(self) -> bool:
        """Whether the run has reached completed, failed or interrupted."""
        return self.state in RUN_TERMINAL

    def _to(self, state: RunState) -> None:
        self.state = transition(RUN_TRANSITIONS, "run", self.state, state)

    def _publish(self, payload: EventPayload) -> bool:
        return self.session.stream.publish(self.id, payload)

    # ------------------------------------------------------------------ lifecycle

    async def start(self, options: Mapping[str, Any]) -> None:
        """Publish ``run.started``, ask the provider to start the turn, and follow it in
        the session's task group.  A provider that cannot start it fails the run (a
        ``run.failed`` event), never the command."""
        session = self.session
        history = session.services.history
        self._options = options
        self._publish(RunStarted(input=self.input.text, content=self.input.record))
        for sha256, data in self.input.images.items():  # once each, by content
            history.add_blob(session.id, sha256, data)
        history.run_started(session.id, self.id, session.stream.last_sequence)
        session.touch()
        provider_session = session.provider_session
        assert session.tg is not None and provider_session is not None
        try:
            with provider_call(f"run {self.id}: provider start_run"):
                self.provider_run = await provider_session.start_run(
                    self.input.provider, options, RunContext(self)
                )
        except BridgeError as exc:
            detail = getattr(exc, "detail", "")
            log.info("run %s could not start: %s", self.id, exc.error_code)
            self.finish(RunOutcome.failed(exc.error_code, detail, exc.info.details))
            return
        session.save_recovery()
        if self.state == "starting":
            self._to("running")
        session.tg.start_soon(self._follow)
        if self.state == "interrupting":
            session.tg.start_soon(self._deliver_interrupt)

    def restore(self, pending: Sequence[tuple[str, InteractionRequest]]) -> None:
        """Make this run, cut off by its bridge's death while it waited on ``pending``
        (its interactions journaled as pending, ``(id, request)`` in order), active
        again in a session just resumed: its interactions pending under their ids,
        offered to the hosts attached (but none in a replay: it is offered them when the
        replay ends) and answerable at once; nothing is journaled anew (their
        ``interaction.requested`` are in the journal).  :meth:`continue_cut` then has
        the provider go on."""
        session = self.session
        services = session.services
        self.state = "running"
        for interaction_id, request in pending:
            interaction = Interaction(interaction_id, session.id, self.id, request)
            services.interactions[interaction_id] = interaction
            self.interactions.append(interaction)
            self.pending[interaction_id] = interaction
            interaction.on_settle.append(self._on_settled)
            self.rebind.append(interaction)
        if self.pending:
            self._to("awaiting_input")

    async def continue_cut(self, options: Mapping[str, Any], skip: Any = None) -> None:
        """Have the provider continue this run (:meth:`restore`d) where it was cut off
        (``ProviderSession.continue_run``); offer its pending interactions to the hosts
        attached but ``skip``.  A provider that cannot fails the run ``bridge_crashed``
        (its interactions settled ``cancelled`` first), as for a provider without
        ``recovery.resumeTurn``."""
        session = self.session
        self._options = options
        provider_session = session.provider_session
        assert session.tg is not None and provider_session is not None
        for interaction in self.rebind:
            session.offer(interaction, skip)
        if not session.descriptor.capabilities.recovery.resume_turn:
            self.finish(RunOutcome.failed("bridge_crashed"))
            return
        try:
            with provider_call(f"run {self.id}: provider continue_run"):
                self.provider_run = await provider_session.continue_run(
                    self.id, self.input.provider, options, RunContext(self)
                )
        except BridgeError as exc:
            log.warning("run %s could not be continued (%s)", self.id, exc.error_code)
            self.finish(RunOutcome.failed("bridge_crashed"))
            return
        session.tg.start_soon(self._follow)

    async def _follow(self) -> None:
        while True:
            provider_run = self.provider_run
            if provider_run is None:  # already ended (forced)
                return
            try:
                with provider_call(f"run {self.id}: provider wait()"):
                    outcome = await provider_run.wait()
            except BridgeError as exc:
                outcome = RunOutcome.failed(
                    exc.error_code, getattr(exc, "detail", ""), exc.info.details
                )
            wait = self._limit_wait(outcome)
            if wait is None:
                break
            retried = await self._retry_after(wait, outcome)
            if retried is None:
                return  # ended while it waited (interrupted)
            if isinstance(retried, RunOutcome):
                outcome = retried
                break
        self.finish(outcome)

    def _limit_wait(self, outcome: RunOutcome) -> float | None:
        """Seconds to wait before running the input again under the session's
        ``retryOnLimit`` policy, or ``None``: no policy, already retried, not a limit,
        no reset given, or a reset further away than the policy waits."""
        policy = self.session.retry_on_limit
        if (
            policy is None
            or self._retried
            or self.state != "running"
            or outcome.state != "failed"
            or outcome.error_code != "provider_rate_limited"
        ):
            return None
        details = safe_details(outcome.details) or {}
        wait: float | None = None
        resets = details.get("resetsAt")
        after = details.get("retryAfterSeconds")
        if isinstance(resets, str):
            reset = calendar.timegm(time.strptime(resets, "%Y-%m-%dT%H:%M:%SZ"))
            wait = max(0.0, reset - time.time())
        elif isinstance(after, str):
            wait = float(after)
        if wait is None or wait > policy.max_wait_seconds:
            return None
        return wait

    async def _retry_after(self, wait: float, outcome: RunOutcome) -> RunOutcome | bool | None:
        """Wait ``wait`` seconds (said in a diagnostic), then start the provider's run
        again with the same input (said again).  Return ``True`` once it runs again,
        the outcome to end with when it could not start, or ``None`` when the run was
        interrupted while it waited (it has ended)."""
        self._retried = True
        cause = (safe_details(outcome.details) or {}).get("cause", "rate_limited")
        self._publish(
            Diagnostic(
                level="info",
                code="limit_retry_waiting",
                message=f"the run hit a limit ({cause}); it runs again in {math.ceil(wait)} s, "
                "once the limit resets (the session's retryOnLimit policy)",
            )
        )
        self.provider_run = None  # nothing to interrupt while it waits
        self._retry_wake = anyio.Event()
        with anyio.move_on_after(wait):
            await self._retry_wake.wait()
        self._retry_wake = None
        if self.state == "interrupting":
            self.finish(RunOutcome.interrupted())
            return None
        provider_session = self.session.provider_session
        if provider_session is None or self.terminal:
            return outcome
        self._publish(
            Diagnostic(
                level="info",
                code="limit_retry_started",
                message="the limit's wait is over: the run starts again with the same input",
            )
        )
        try:
            with provider_call(f"run {self.id}: provider start_run (retry after a limit)"):
                self.provider_run = await provider_session.start_run(
                    self.input.provider, self._options, RunContext(self)
                )
        except BridgeError as exc:
            return RunOutcome.failed(exc.error_code, getattr(exc, "detail", ""), exc.info.details)
        if self._interrupting():  # while it started again
            assert self.session.tg is not None
            self.session.tg.start_soon(self._deliver_interrupt)
        return True

    def _interrupting(self) -> bool:
        return self.state == "interrupting"

    def finish(self, outcome: RunOutcome, *, forced: bool = False) -> bool:
        """Publish the run's one terminal event (after settling what is pending); return
        ``False`` if it had already ended."""
        if self.terminal:
            return False
        session = self.session
        if outcome.state == "completed" and self.pending:
            log.warning("run %s: provider reported success with a pending interaction", self.id)
            self._publish(
                _contract("the provider reported success while an interaction was pending")
            )
            outcome = RunOutcome.failed("provider_contract")
        for interaction in list(self.pending.values()):
            interaction.settle("cancelled", auto=True)
        if self.open_tools:
            # every call a host saw start ends before the run does (docs/protocol.md)
            for tool_id, (name, parent) in self.open_tools.items():
                self._publish(ToolActivity(tool_id, name, "failed", parent_tool_call_id=parent))
            self.open_tools.clear()
        payload: EventPayload
        if outcome.state == "completed":
            payload = RunCompleted(stop_reason=outcome.stop_reason)
        elif outcome.state == "interrupted":
            payload = RunInterrupted(reason=self.interrupt_reason or "provider", forced=forced)
        else:
            code = outcome.error_code or "provider_failed"
            details = safe_details(outcome.details)
            # The one WARNING line per failed run, at the default log level: the code,
            # the classification the host gets, and the adapter's (redacted) detail.
            shown = ", ".join(f"{k}={v}" for k, v in (details or {}).items())
            log.warning(
                "run %s failed: %s%s%s",
                self.id,
                code,
                f" ({shown})" if shown else "",
                f": {outcome.detail}" if outcome.detail else "",
            )
            payload = RunFailed(error=ErrorInfo.of(code, details=details))
        self._to(outcome.state)
        self._publish(payload)
        position = _position(outcome.position)
        session.services.history.run_ended(
            session.id,
            self.id,
            session.stream.last_sequence,
            self.state,
            position,
            # a provider that names no position at the end does not vouch for them
            tuple(self.checkpoints) if position is not None else (),
        )
        self.checkpoints = []
        session.touch()
        session.save_recovery()
        session.run_ended(self)
        # Keep nothing of the adapter's run, and of each interaction only what answers a
        # late interaction/respond.
        self.provider_run = None
        directory = session.services.interactions
        for interaction in self.interactions:
            directory[interaction.interaction_id] = interaction.settled_record()
        self.interactions = []
        self.done.set()
        return True

    async def abandon(self, code: ErrorCode) -> None:
        """End the run as failed with ``code`` because the bridge cannot keep it (the
        journal failed past its limit) and stop the provider session (the next run
        revives it); the ``run.failed`` reaches hosts once it is committed.  Nothing
        happens to a run that already ended."""
        if self.terminal:
            return
        log.warning("run %s: ended (%s)", self.id, code)
        self.finish(RunOutcome.failed(code))
        await self.session.dispose_provider()

    # ------------------------------------------------------------------ interrupt, steer

    def interrupt(self, reason: str) -> RunInterruptResult:
        """Accept an interrupt; the terminal event follows.  A second interrupt while the
        first is in progress (or after it ended the run) is answered the same way.
        Raises ``run_not_active`` for a run that completed or failed and ``unsupported``
        for a provider without interrupt support."""
        if self.state == "interrupted":
            return RunInterruptResult(self.id, "interrupted")  # already done: idempotent
        if self.terminal:
            raise BridgeError("run_not_active")
        if self.state != "interrupting":
            if self.session.descriptor.capabilities.run.interrupt == "unsupported":
                raise BridgeError("unsupported")
            self.begin_interrupt(reason)
        return RunInterruptResult(self.id, "interrupting")

    def begin_interrupt(self, reason: str) -> None:
        """Enter ``interrupting``: deliver the interrupt to the provider (bounded by the
        grace) and cancel every pending interaction."""
        self._to("interrupting")
        self.interrupt_reason = reason
        assert self.session.tg is not None
        if self._retry_wake is not None:
            self._retry_wake.set()  # waiting to retry after a limit: end now
        if self.provider_run is not None:
            # Scheduled before the cancellations below wake the provider, so the
            # provider learns of the interrupt before it sees a cancelled answer.
            self.session.tg.start_soon(self._deliver_interrupt)
        for interaction in list(self.pending.values()):
            interaction.settle("cancelled", auto=True)

    async def _deliver_interrupt(self) -> None:
        provider_run = self.provider_run
        if provider_run is None:  # already ended
            return
        grace = self.session.services.interrupt_grace
        with anyio.move_on_after(grace):
            with quietly(f"run {self.id}: provider interrupt()"):
                await provider_run.interrupt(self.interrupt_reason)
            await self.done.wait()
        if not self.terminal:
            # with no grace (Runtime.hurry: told to stop now) forcing is the plan, not news
            log.log(
                logging.WARNING if grace else logging.DEBUG,
                "run %s ignored its interrupt; stopping the provider",
                self.id,
            )
            self.finish(RunOutcome.interrupted(), forced=True)
            await self.session.dispose_provider()

    async def steer(self, input: RunInput) -> None:
        """Give the active run more input (checked as ``run/start``'s is).  Raises
        ``unsupported`` unless the descriptor says so, ``run_not_active`` once it ended or
        is being interrupted, the refusals of
        :func:`agent_bridge.runtime.inputs.prepare_input`, or the provider's classified
        failure."""
        descriptor = self.session.descriptor
        if not descriptor.capabilities.run.steer:
            raise BridgeError("unsupported")
        self._steerable()
        session = self.session
        prepared = await prepare(
            input, session.input_capabilities(), session.workspace, session.command_names()
        )
        provider_run = self._steerable()  # it may have ended while the input was checked
        with provider_call(f"run {self.id}: provider steer()"):
            await provider_run.steer(prepared.provider)

    def _steerable(self) -> ProviderRun:
        """The provider's run, or ``run_not_active`` when it ended or is being interrupted."""
        if self.terminal or self.state == "interrupting" or self.provider_run is None:
            raise BridgeError("run_not_active")
        return self.provider_run

    # ------------------------------------------------------------------ interactions

    def open_interaction(self, request: InteractionRequest) -> Interaction:
        """Raise an interaction (see :meth:`agent_bridge.spi.RunContext.open_interaction`):
        offered to every subscriber that can answer its kind; with none, an approval is
        denied and a question cancelled, visibly."""
        session = self.session
        services = session.services
        interaction = Interaction(services.ids.new("int"), session.id, self.id, request)
        try:
            interaction.request = _request_decoder.decode(_encode(request))
        except (msgspec.DecodeError, TypeError, ValueError, RecursionError):
            interaction.settle("cancelled", auto=True)
            self._publish(_contract("invalid interaction request"))
            return interaction
        if self.rebind:
            bound = self._bind(interaction.request)
            if bound is not None:
                return bound
        if self.state not in ("running", "awaiting_input"):
            interaction.settle("cancelled", auto=True)
            self._publish(
                _contract("interaction requested while the run was not running", "warning")
            )
            return interaction
        services.interactions[interaction.interaction_id] = interaction
        self.interactions.append(interaction)
        self.pending[interaction.interaction_id] = interaction
        if self.state == "running":
            self._to("awaiting_input")
        if session.descriptor.capabilities.recovery.resume_turn:
            # the record saying where the run waits is committed no later than the
            # question: a bridge that takes over after a crash continues it there
            session.save_recovery()
        self._publish(InteractionRequested(interaction.interaction_id, interaction.request))
        services.history.interaction_opened(
            session.id, interaction.interaction_id, self.id, _encode(interaction.request)
        )
        interaction.on_settle.append(self._on_settled)
        if session.offer(interaction):
            return interaction
        if services.hold_unanswerable and not session.stream.subscriptions:
            return interaction  # nobody attached: it waits for the next attach
        if interaction.kind == "approval":
            self._publish(
                Diagnostic(
                    level="warning",
                    code="approval_auto_denied",
                    message="the host cannot answer approvals, so the request was denied",
                )
            )
            interaction.settle("responded", ApprovalAnswer(decision="deny"), auto=True)
        else:
            self._publish(
                Diagnostic(
                    level="warning",
                    code="question_auto_cancelled",
                    message="the host cannot answer questions, so the question was cancelled",
                )
            )
            interaction.settle("cancelled", auto=True)
        return interaction

    def _bind(self, request: InteractionRequest) -> Interaction | None:
        """The interaction the cut-off run had pending at this place, for the same
        ``request`` raised again by the continued run (it keeps its id, and an answer
        given meanwhile stands); ``None`` when the next one asked something else (it is
        then settled ``cancelled`` and the request is a new interaction)."""
        expected = self.rebind.pop(0)
        if _encode(expected.request) == _encode(request):
            self.session.save_recovery()  # it waits here again (a second crash continues it)
            return expected
        log.warning("run %s: the continued run asked something else; a new interaction", self.id)
        for other in (expected, *self.rebind):
            other.settle("cancelled", auto=True)
        self.rebind.clear()
        return None

    def _on_settled(self, interaction: Interaction) -> None:
        self.pending.pop(interaction.interaction_id, None)
        self._publish(
            InteractionSettled(
                interaction.interaction_id,
                cast(SettledStatus, interaction.status),
                interaction.answer,
                interaction.auto,
            )
        )
        self.session.services.history.interaction_settled(
            self.session.id,
            interaction.interaction_id,
            interaction.status,
            None if interaction.answer is None else _encode(interaction.answer),
        )
        if self.state == "awaiting_input" and not self.pending:
            self._to("running")


class RunContext:
    """The :class:`agent_bridge.spi.RunContext` handed to a provider run."""

    __slots__ = ("_dropped", "_publish", "_publish_many", "_run")

    def __init__(self, run: Run) -> None:
        self._run = run
        stream = run.session.stream
        self._publish = stream.publish
        self._publish_many = stream.publish_many
        #: payloads emitted after the run ended (logged once, not once each)
        self._dropped = 0

    @property
    def run_id(self) -> str:
        return self._run.id

    @property
    def interrupt_requested(self) -> bool:
        return self._run.state == "interrupting"

    def emit_nowait(self, payload: ProviderPayload, raw: Any = None) -> None:
        self._emit(payload, raw)

    def _drop(self, count: int) -> bool:
        """Drop ``count`` payloads emitted after the run ended (logged once per run);
        return ``False`` (nobody needs to wait for them)."""
        if not self._dropped:
            log.warning("run %s: provider emitted after the run ended; dropped", self._run.id)
        self._dropped += count
        return False

    def _checked(self, payload: ProviderPayload) -> EventPayload:
        """Return ``payload`` validated and snapshotted, or the ``provider_contract``
        diagnostic that replaces it (logged)."""
        kind = type(payload)
        if kind is TextDelta or kind is ThinkingDelta:
            # Frozen structs with one str field: checking the type is the whole validation
            # and the object itself is the snapshot.
            if type(payload.text) is str:  # type: ignore[union-attr]
                return payload
        else:
            try:
                # A round trip validates every field and takes a deep snapshot.
                return _provider_payload_decoder.decode(_encode(payload))
            except (msgspec.DecodeError, TypeError, ValueError, RecursionError):
                pass
        log.warning("run %s: provider contract violation: payload of the wrong shape", self._run.id)
        return _contract("payload of the wrong shape")

    def _emit(self, payload: ProviderPayload, raw: Any) -> bool:
        """Validate and publish; return whether producers should wait."""
        run = self._run
        if run.state in RUN_TERMINAL:
            return self._drop(1)
        kind = type(payload)
        if (kind is not TextDelta and kind is not ThinkingDelta) or type(
            payload.text  # type: ignore[union-attr]
        ) is not str:
            payload = self._checked(payload)  # type: ignore[assignment]
            if type(payload) is LimitsUpdated:
                self._note_limits(payload)
            elif type(payload) is ToolActivity:
                run.note_tool(payload)
            elif type(payload) is SettingsUpdated:
                run.session.provider_changed_settings(payload)
        try:
            return self._publish(run.id, payload, raw)
        except UnencodableEvent:
            return self._publish(run.id, self._unencodable(), raw)

    def _note_limits(self, update: LimitsUpdated) -> None:
        """Keep ``update`` as its provider's latest figures (``provider/limits``)."""
        session = self._run.session
        services = session.services
        services.limits.note(session.provider.id, update, services.clock.now_iso())

    def _unencodable(self) -> Diagnostic:
        """The diagnostic that replaces a payload that cannot be encoded (logged)."""
        log.warning("run %s: provider contract violation: text that is not Unicode", self._run.id)
        return _contract("payload with text that is not valid Unicode (dropped)")

    async def emit(self, payload: ProviderPayload, raw: Any = None) -> None:
        if self._emit(payload, raw):
            await self._run.session.stream.drained()

    def _emit_many(self, payloads: Sequence[ProviderPayload], raw: Any) -> bool:
        """Validate and publish each of ``payloads`` as its own event, in one batch;
        return whether producers should wait."""
        run = self._run
        if run.state in RUN_TERMINAL:
            return self._drop(len(payloads))
        if not payloads:
            return False
        checked: list[EventPayload] = list(payloads)
        kinds = set(map(type, checked))
        kind: type[EventPayload] | None = None
        if len(kinds) == 1 and kinds <= _DELTAS and _STR.issuperset(map(type, map(_text, checked))):
            # Deltas of one kind with str texts (the streaming case): valid and their own
            # snapshots, found with C loops, no Python bytecode per payload; the stream
            # is told their one type (one type code for the batch, not one look-up each).
            kind = kinds.pop()
        else:
            checked = [self._checked(payload) for payload in payloads]
            for payload in checked:
                if type(payload) is LimitsUpdated:
                    self._note_limits(payload)
                elif type(payload) is ToolActivity:
                    run.note_tool(payload)
                elif type(payload) is SettingsUpdated:
                    run.session.provider_changed_settings(payload)
        try:
            return self._publish_many(run.id, checked, raw, kind)
        except UnencodableEvent:
            fixed: list[EventPayload] = []
            for payload in checked:
                try:
                    _encode(payload)
                except (UnicodeEncodeError, TypeError, ValueError, OverflowError):
                    payload = self._unencodable()
                fixed.append(payload)
            return self._publish_many(run.id, fixed, raw)

    def emit_nowait_many(self, payloads: Sequence[ProviderPayload], raw: Any = None) -> None:
        self._emit_many(payloads, raw)

    async def emit_many(self, payloads: Sequence[ProviderPayload], raw: Any = None) -> None:
        if self._emit_many(payloads, raw):
            await self._run.session.stream.drained()

    def checkpoint(self, position: Any) -> None:
        run = self._run
        if run.state in RUN_TERMINAL:
            return
        encoded = _position(position)
        if encoded is None:
            return
        sequence = run.session.stream.last_sequence
        points = run.checkpoints
        if points and points[-1][0] == sequence:
            points[-1] = (sequence, encoded)  # no event since: the later one stands
        else:
            points.append((sequence, encoded))

    def open_interaction(self, request: InteractionRequest) -> Interaction:
        return self._run.open_interaction(request)

    async def ask(self, request: InteractionRequest) -> InteractionOutcome:
        return await self.open_interaction(request).wait()


def _position(position: object) -> bytes | None:
    """A run's fork position as stored (JSON), or ``None`` (none, or not JSON: logged)."""
    if position is None:
        return None
    try:
        return msgspec.json.encode(position)
    except (TypeError, ValueError, UnicodeEncodeError):
        log.warning("a provider gave a run position that is not JSON; not kept")
        return None
