"""A session open in this process: its provider session, event stream, runs and lifetime.

:class:`Session` owns its state (through :data:`~agent_bridge.states.SESSION_TRANSITIONS`),
its tasks (:class:`~agent_bridge.runtime.session_tasks.SessionTasks`: the adapter's
background tasks, run in the runtime's task group, ending after ``dispose``), its
recovery record (saved whenever it changes, so a crash never leaves one older than the
events committed before it), and close: interrupt the active runs, dispose the provider
session (bounded, shielded), publish ``session.closed``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc
import msgspec

from agent_bridge.errors import BridgeError
from agent_bridge.journal import SessionRecord
from agent_bridge.runtime.boundary import provider_call, quietly
from agent_bridge.runtime.flag import Flag
from agent_bridge.runtime.interactions import Interaction
from agent_bridge.runtime.runs import Run
from agent_bridge.runtime.services import Services
from agent_bridge.runtime.session_tasks import SessionTasks
from agent_bridge.runtime.stream import EventStream, Subscriber
from agent_bridge.spi import AgentProvider, ProviderSession, RunOutcome, SessionContext
from agent_bridge.states import SESSION_TRANSITIONS, SessionState, transition
from agent_bridge.wire.events import SessionClosed, SettingsUpdated
from agent_bridge.wire.methods import RetryOnLimit, SessionInfo, SessionParent
from agent_bridge.wire.providers import InputCapabilities, ProviderDescriptor

__all__ = ["ProviderStart", "Session", "record_info"]

log = logging.getLogger("agent_bridge.runtime")

_encode = msgspec.json.encode

#: how a session gets its provider session: create or resume
ProviderStart = Callable[[AgentProvider, SessionContext], Awaitable[ProviderSession]]


def record_info(record: SessionRecord) -> SessionInfo:
    """The wire view of a stored session that is not open in this process (with a fleet
    journal: its owner's node and its journaled pending interactions)."""
    return SessionInfo(
        session_id=record.session_id,
        provider_id=record.provider_id,
        state=record.state,
        created_at=record.created_at,
        workspace=record.workspace,
        title=record.title,
        last_sequence=record.last_sequence,
        updated_at=record.updated_at,
        parent=None
        if record.parent_id is None
        else SessionParent(record.parent_id, record.fork_sequence),
        node=record.node,
        pending_interactions=record.pending_interactions,
        attached_hosts=record.attached_hosts or 0,
    )


class _Policy(msgspec.Struct, rename="camel", omit_defaults=True):
    """What :meth:`Session.policy` stores."""

    retry_on_limit: RetryOnLimit | None = None
    model: str | None = None
    mode: str | None = None
    #: the provider continues a run cut off while it waited on an interaction
    #: (``recovery.resumeTurn``): crash recovery, which reads no descriptor, leaves such
    #: a run and its pending interactions open for the bridge that resumes the session
    resumes_turns: bool | None = None


class Session:
    """See the module docstring."""

    __slots__ = (
        "active_runs",
        "chosen",
        "closed",
        "created_at",
        "descriptor",
        "finished",
        "id",
        "native_ref",
        "on_native_ref",
        "options",
        "parent",
        "provider",
        "provider_session",
        "recovery_opaque",
        "retry_on_limit",
        "saved_recovery",
        "services",
        "state",
        "stream",
        "tg",
        "title",
        "updated_at",
        "workspace",
    )

    def __init__(
        self,
        session_id: str,
        provider: AgentProvider,
        descriptor: ProviderDescriptor,
        workspace: str | None,
        title: str | None,
        options: dict[str, Any],
        created_at: str,
        services: Services,
        last_sequence: int = 0,
    ) -> None:
        self.id = session_id
        self.provider = provider
        self.descriptor = descriptor
        self.workspace = workspace
        self.title = title
        self.options = options
        self.created_at = created_at
        self.updated_at = created_at
        self.services = services
        self.state: SessionState = "active"
        #: the policy for runs that hit a limit (``session/create``'s ``retryOnLimit``)
        self.retry_on_limit: RetryOnLimit | None = None
        #: the model and mode last chosen by ``session/configure`` (``None``: not chosen),
        #: each followed by a change the provider makes itself afterwards
        self.chosen: tuple[str | None, str | None] = (None, None)
        #: the session and sequence this one was forked from
        self.parent: SessionParent | None = None
        self.provider_session: ProviderSession | None = None
        self.recovery_opaque: Any = None
        self.saved_recovery = b""
        #: the provider's own session its recovery record continues (once known), and
        #: who is told when it becomes known (the runtime binds it to this session)
        self.native_ref: str | None = None
        self.on_native_ref: Callable[[Session, str], None] | None = None
        self.stream = EventStream(
            session_id, services.history, services.delivery, services.clock, last_sequence
        )
        self.active_runs: dict[str, Run] = {}
        self.tg: SessionTasks | None = None
        #: set once closed; ``finished``: once its tasks have ended
        self.closed = Flag()
        self.finished = Flag()

    def input_capabilities(self) -> InputCapabilities:
        """What this session's runs may take as input: its provider session's own answer
        (an ACP agent states it in ``initialize``) or else the descriptor's."""
        own = None if self.provider_session is None else self.provider_session.input_capabilities()
        return self.descriptor.capabilities.input if own is None else own

    def info(self, *, counts: bool = False, node: str | None = None) -> SessionInfo:
        """Return the wire view of this session; with ``counts``, how many clients are
        attached and how many interactions wait (``session/list``); ``node``: this
        member's node, as a fleet journal lists it (``None``: not shown)."""
        attached = pending = 0
        if counts:
            attached = len(self.stream.subscriptions)
            pending = sum(len(run.pending) for run in self.active_runs.values())
        return SessionInfo(
            session_id=self.id,
            provider_id=self.provider.id,
            state=self.state,
            created_at=self.created_at,
            workspace=self.workspace,
            title=self.title,
            active_run_id=next(iter(self.active_runs), None),
            last_sequence=self.stream.last_sequence,
            updated_at=self.updated_at,
            attached_hosts=attached,
            pending_interactions=pending,
            parent=self.parent,
            node=node,
        )

    def touch(self) -> None:
        """Record that the session changed now."""
        self.updated_at = self.services.clock.now_iso()
        self.services.history.update_session(self.id, updated_at=self.updated_at)

    # ------------------------------------------------------------------ provider session

    async def start_provider(self, start: ProviderStart, runtime_tg: anyio.abc.TaskGroup) -> None:
        """Give the session its tasks (run in ``runtime_tg``) and its provider session.
        On failure the session is closed and the provider's classified error (or
        ``provider_failed``) raised."""
        self.tg = SessionTasks(runtime_tg, self.finished)
        ctx = SessionContext(self.id, self.workspace, self.options, self.tg)
        try:
            what = f"provider {self.provider.id}: starting a session"
            with provider_call(what, "provider_failed"):
                self.provider_session = await start(self.provider, ctx)
        except BaseException:
            self.state = "closed"
            self._set_closed()
            raise

    def _set_closed(self) -> None:
        """Mark the session closed and end its tasks."""
        self.closed.set()
        if self.tg is not None:
            self.tg.cancel()
        else:
            self.finished.set()

    async def revive(self) -> None:
        """Resume a provider session that was stopped by a forced interrupt.  Raises
        ``session_closed`` when it cannot be resumed, or the provider's failure."""
        if self.recovery_opaque is None or not self.descriptor.capabilities.recovery.resume:
            raise BridgeError("session_closed")
        assert self.tg is not None
        ctx = SessionContext(self.id, self.workspace, self.options, self.tg)
        with provider_call(f"provider {self.provider.id}: resuming a session", "provider_failed"):
            self.provider_session = await self.provider.resume_session(ctx, self.recovery_opaque)

    def export_opaque(self) -> Any:
        """The provider's current recovery record (``None`` when it has none)."""
        if self.provider_session is None:
            return self.recovery_opaque
        with quietly(f"session {self.id}: export_recovery_record"):
            return self.provider_session.export_recovery_record()
        return None

    def save_recovery(self, opaque: Any = None) -> None:
        """Record the session's latest recovery record (``opaque``, or exported now) if it
        changed.  Whatever the provider exports is kept, even when the descriptor the
        session started with says it cannot resume: the record is the adapter's word on
        it (an ACP agent recognised only after its ``initialize`` marks its record not
        resumable), so a later bridge refuses the resume ``unsupported`` instead of
        finding no record and starting a fresh provider session under the old id."""
        if opaque is None:
            opaque = self.export_opaque()
        if opaque is None:
            return
        try:
            data = _encode(opaque)
        except (TypeError, ValueError, OverflowError, RecursionError):
            log.warning("session %s: the recovery record is not JSON; not saved", self.id)
            return
        if data != self.saved_recovery:
            self.saved_recovery = data
            self.services.history.update_session(self.id, recovery=data)
            try:
                ref = self.provider.native_ref(opaque)
            except Exception:
                log.exception("session %s: native_ref failed", self.id)
                ref = None
            if ref is not None and ref != self.native_ref:
                self.native_ref = ref
                if self.on_native_ref is not None:
                    self.on_native_ref(self, ref)

    async def dispose_provider(self) -> None:
        """Save the recovery record, then dispose the provider session (bounded, shielded
        from cancellation, never raising)."""
        provider_session, self.provider_session = self.provider_session, None
        if provider_session is None:
            return
        with quietly(f"session {self.id}: export_recovery_record"):
            self.recovery_opaque = provider_session.export_recovery_record()
            self.save_recovery(self.recovery_opaque)
        with (
            anyio.CancelScope(shield=True),
            anyio.move_on_after(self.services.dispose_timeout),
            quietly(f"session {self.id}: dispose"),
        ):
            await provider_session.dispose()

    def command_names(self) -> frozenset[str] | None:
        """The names of the commands the provider offers now (``ProviderSession.
        commands``), or ``None`` when it has named none (or the session has no provider
        session now): a ``command`` block is then passed on unchecked."""
        provider_session = self.provider_session
        if provider_session is None:
            return None
        with provider_call(f"session {self.id}: commands()"):
            commands = provider_session.commands()
        return None if commands is None else frozenset(c.name for c in commands)

    def policy(self) -> dict[str, Any] | None:
        """The session's policy as the journal keeps it (``SessionRecord.policy``):
        ``retryOnLimit``, the chosen ``model`` / ``mode`` and ``resumesTurns`` (see
        :class:`_Policy`); ``None``: none."""
        turns = True if self.descriptor.capabilities.recovery.resume_turn else None
        stored = _Policy(self.retry_on_limit, *self.chosen, resumes_turns=turns)
        built: dict[str, Any] = msgspec.to_builtins(stored)
        return built or None

    def restore_policy(self, policy: dict[str, Any] | None) -> None:
        """Take back what :meth:`policy` returned (a stored value that does not read as
        a policy is logged and ignored: a reopen is not refused for it)."""
        if not policy:
            return
        try:
            stored = msgspec.convert(policy, _Policy)
        except msgspec.ValidationError:
            log.warning("session %s: its stored policy does not read; ignored", self.id)
            return
        self.retry_on_limit = stored.retry_on_limit
        self.chosen = (stored.model, stored.mode)

    def provider_changed_settings(self, update: SettingsUpdated) -> None:
        """The provider changed the session's model and/or mode itself (its run emitted
        ``settings.updated``): what ``session/configure`` chose follows, for each of the
        two the host chose and ``update`` names, and is stored, so a reopen in a later
        bridge runs on with what the session last ran with instead of switching back to
        the host's older choice.  One the host never chose stays unchosen (the provider's
        own record carries it); one ``update`` does not name (``None``) is unchanged."""
        model, mode = self.chosen
        chosen = (
            update.model if model is not None and update.model is not None else model,
            update.mode if mode is not None and update.mode is not None else mode,
        )
        if chosen != self.chosen:
            self.chosen = chosen
            self.services.history.update_session(self.id, policy=self.policy())

    # ------------------------------------------------------------------ runs

    def run_ended(self, run: Run) -> None:
        """Forget ``run`` as active (called by the run at its terminal event)."""
        self.active_runs.pop(run.id, None)
        if not self.active_runs:
            self.services.running.pop(self, None)

    def add_run(self, run: Run) -> None:
        """Make ``run`` active."""
        self.active_runs[run.id] = run
        self.services.running[self] = None

    # ------------------------------------------------------------------ interactions

    def offer(self, interaction: Interaction, skip: Subscriber | None = None) -> bool:
        """Offer ``interaction`` to every subscriber that can answer its kind (but
        ``skip``), each once its ``interaction.requested`` event is released (a host never
        gets the request ahead of the events that led to it); return whether any could."""
        assert self.tg is not None
        offered = False
        for subscription in self.stream.subscriptions.values():
            subscriber = subscription.subscriber
            if subscriber is not skip and subscriber.can_answer(interaction.kind):
                self.tg.start_soon(self._ask, subscriber, interaction)
                offered = True
        return offered

    async def _ask(self, subscriber: Subscriber, interaction: Interaction) -> None:
        await self.services.flush()
        if interaction.pending:
            await subscriber.ask(interaction)

    def reoffer(self, subscriber: Subscriber) -> None:
        """Offer every pending interaction again to ``subscriber`` (it re-attached)."""
        assert self.tg is not None
        for run in self.active_runs.values():
            for interaction in run.pending.values():
                if subscriber.can_answer(interaction.kind):
                    self.tg.start_soon(subscriber.ask, interaction)

    # ------------------------------------------------------------------ close

    async def close(self, reason: str) -> None:
        """Interrupt the active runs, dispose the provider session, publish
        ``session.closed`` and end the session's tasks (not waiting for the journal
        to commit that).  A session already closing is waited for."""
        if self.state != "active":
            await self.closed.wait()
            return
        self.state = transition(SESSION_TRANSITIONS, "session", self.state, "closing")
        services = self.services
        with anyio.CancelScope(shield=True):
            for run in list(self.active_runs.values()):
                if not run.terminal and run.state != "interrupting":
                    run.begin_interrupt(reason)
            grace = services.interrupt_grace
            with anyio.move_on_after(grace + 1 if grace else 0):
                for run in list(self.active_runs.values()):
                    await run.done.wait()
            for run in list(self.active_runs.values()):
                run.finish(RunOutcome.interrupted(), forced=True)
            await self.dispose_provider()
            self.stream.publish(None, SessionClosed(reason=reason))
            self.updated_at = services.clock.now_iso()
            services.history.update_session(self.id, state="closed", updated_at=self.updated_at)
            self.state = transition(SESSION_TRANSITIONS, "session", self.state, "closed")
            self._set_closed()
            await self.finished.wait()
        # Durable when the caller says so (Runtime.close_session, bounded while the
        # journal is failing; at shutdown the journal's close commits what it can).
