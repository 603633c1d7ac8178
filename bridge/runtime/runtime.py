"""The runtime: the directory of sessions and the entry point of every command.

It knows neither the wire protocol nor how many clients there are.  Front-ends (the
bridge protocol over stdio or the daemon's socket, and the ACP agent front-end)
translate their protocol into its commands and attach their clients as
:class:`~agent_bridge.runtime.stream.Subscriber` s.  A session outlives the client that
created it for as long as the runtime runs; ``agent-bridge serve`` shuts the runtime down
at its host's EOF.

What it owns directly: identity and time (through
:class:`~agent_bridge.runtime.services.Services`), the session and run directories, the
one-active-run rule, command receipts (``commandId``) and the journal glue (recovery
records refreshed after each commit).  Sessions own their lifetime
(:mod:`~agent_bridge.runtime.sessions`), runs their transitions and interactions
(:mod:`~agent_bridge.runtime.runs`), streams the sequence and delivery
(:mod:`~agent_bridge.runtime.stream`).

Everything it decides is recorded in its :class:`~agent_bridge.journal.History`: the
journal on disk (see ``docs/journal.md``) or memory.  With a journal an event reaches a
subscriber only once it is committed, and a command returns only after what it changed is
committed.  While the journal cannot commit (``History.health``: ``failing``) the runtime
holds providers back (:meth:`Delivery.pause`), tells every :class:`HealthWatcher`
(each host connection) out of band, refuses new sessions and runs (``journal_failing``),
and after ``journal_fault_limit`` seconds (``serve --journal-fault-limit``, default
:data:`JOURNAL_FAULT_LIMIT`) ends the running runs with ``journal_failing`` (their
``run.failed`` is delivered once it is committed).  When commits succeed again
everything resumes where it stopped.  A journal ``broken`` by a bug in its commit path
ends the running runs at once (``internal``).
"""

from __future__ import annotations

import base64
import contextlib
import logging
import time
from collections.abc import Awaitable
from typing import Any, Final, Literal, Protocol

import anyio
import anyio.abc
import msgspec

from agent_bridge.errors import BridgeError
from agent_bridge.ids import Clock, IdFactory
from agent_bridge.journal import (
    Followable,
    History,
    JournalError,
    MemoryHistory,
    Routable,
    SessionRecord,
)
from agent_bridge.options import resolve_options, restore_withheld, storable_options
from agent_bridge.registry import ProviderRegistry
from agent_bridge.runtime.boundary import provider_call, quietly
from agent_bridge.runtime.continuing import cut_turns, restore_run
from agent_bridge.runtime.fleet import create_placed, declare, succeed
from agent_bridge.runtime.following import follow_remote
from agent_bridge.runtime.hosts import HostCounts
from agent_bridge.runtime.inputs import image_type, prepare
from agent_bridge.runtime.native import import_history, native_session_id
from agent_bridge.runtime.reading import catch_up, check_page, guard, read_page, replay
from agent_bridge.runtime.receipts import Receipts
from agent_bridge.runtime.routing import SessionState, route, serve_routed
from agent_bridge.runtime.runs import Run
from agent_bridge.runtime.services import Services
from agent_bridge.runtime.sessions import ProviderStart, Session, record_info
from agent_bridge.runtime.stream import EventStream, Subscriber, Subscription
from agent_bridge.spi import AgentProvider, ProviderSession, SessionContext
from agent_bridge.wire.errors import ErrorCode
from agent_bridge.wire.events import Diagnostic, SessionResumed, SettingsUpdated
from agent_bridge.wire.inputs import (
    BLOB_READ_MAX,
    BlobReadParams,
    BlobReadResult,
    SessionCommandsResult,
)
from agent_bridge.wire.methods import (
    EventsReadParams,
    JournalStatusParams,
    ProviderLimitsResult,
    RecoveryRecord,
    RetryOnLimit,
    RunInput,
    RunInterruptResult,
    RunStartParams,
    RunStartResult,
    SessionAttachResult,
    SessionCreateParams,
    SessionDeleteResult,
    SessionForkResult,
    SessionInfo,
    SessionParent,
)
from agent_bridge.wire.native import (
    DEFAULT_IMPORT_LIMIT,
    MAX_IMPORT_LIMIT,
    NativeSessionsContinueResult,
)
from agent_bridge.wire.providers import ProviderDescriptor
from agent_bridge.wire.settings import SessionConfigureParams, SessionSettings
from agent_bridge.workspace import resolve_workspace, workspace_filter

__all__ = ["JOURNAL_FAULT_LIMIT", "HealthWatcher", "Runtime"]

log = logging.getLogger("agent_bridge.runtime")

WIRE_VERSION: Final = 1
PROBE_TIMEOUT: Final = 15.0
#: How long ``provider/limits`` waits for a live session's fresh figures.
LIMITS_READ_TIMEOUT: Final = 10.0
#: Seconds a journal may fail to commit before the running runs are ended.
JOURNAL_FAULT_LIMIT: Final = 60.0


def _has_forks() -> BridgeError:
    """The refusal of ``session/delete`` for a session forks read from."""
    return BridgeError(
        "invalid_params",
        details={
            "field": "sessionId",
            "reason": "forks read this session's history: delete them first",
        },
    )


def _check_after(after: int, last: int) -> None:
    """Refuse (``invalid_params``) a replay ``after`` past the session's last event
    ``last``: the host would be taken to have seen up to ``after``, and the session's
    live events up to that sequence would never reach it.  No host was sent one there:
    an event goes out only once it has its sequence."""
    if after > last:
        raise BridgeError(
            "invalid_params",
            details={
                "field": "after",
                "reason": f"no event {after} in this session: its events are 1..{last}"
                if last
                else "the session has no events yet",
            },
        )


#: the events that end a run: a fork may be made at one of them
_RUN_ENDS: Final = frozenset({"run.completed", "run.failed", "run.interrupted"})


class _PayloadType(msgspec.Struct):
    type: str = ""


class _ForkPoint(msgspec.Struct, rename="camel"):
    """What :meth:`Runtime.fork_session` reads of the event it forks at."""

    payload: _PayloadType = msgspec.field(default_factory=_PayloadType)
    run_id: str | None = None


def require_unicode(field: str, value: object) -> None:
    """Raise ``invalid_params`` naming ``field`` when ``value`` holds a ``str`` that cannot
    be encoded (a lone surrogate: bytes that were not UTF-8, decoded with
    ``surrogateescape`` from argv, stdin or a file name).  Checked before anything is
    recorded: such text could never be stored or shown, so it is refused up front (the
    wire's JSON decoder already refuses it; this guards the other entry points)."""
    try:
        msgspec.json.encode(value)
    except UnicodeEncodeError:
        raise BridgeError(
            "invalid_params",
            details={"field": field, "reason": "text that is not valid Unicode (not UTF-8)"},
        ) from None


class HealthWatcher(Protocol):
    """A client told when the journal's health changes (a front-end's host connection)."""

    def journal_status(self, status: JournalStatusParams) -> None:
        """Send ``status`` to the client out of band (never blocks)."""
        ...


class Runtime:
    """Sessions, runs and interactions; use as ``async with Runtime(...) as rt``.

    ``history`` is where they are recorded (default: memory only); the runtime starts it
    on entry and, after closing every session, closes it on exit.  ``hold_unanswerable``
    (the daemon's): an interaction raised while no client is attached here waits for
    one instead of being denied at once; always so on a fleet's shared journal, where
    the session's hosts may all be on other members (each is offered it there).
    """

    def __init__(
        self,
        registry: ProviderRegistry,
        *,
        ids: IdFactory | None = None,
        clock: Clock | None = None,
        interrupt_grace: float = 5.0,
        dispose_timeout: float = 10.0,
        history: History | None = None,
        hold_unanswerable: bool = False,
        journal_fault_limit: float = JOURNAL_FAULT_LIMIT,
    ) -> None:
        self.registry = registry
        self.history: History = history if history is not None else MemoryHistory()
        self.services = Services(
            self.history,
            ids=ids or IdFactory(),
            clock=clock or Clock(),
            interrupt_grace=interrupt_grace,
            dispose_timeout=dispose_timeout,
            hold_unanswerable=hold_unanswerable or isinstance(self.history, Routable),
        )
        self.sessions: dict[str, Session] = {}
        self.runs: dict[str, Run] = {}
        self._receipts = Receipts(self.history)
        self._tg: anyio.abc.TaskGroup | None = None
        self._tg_cm: Any = None
        #: the clients told of the journal's health, and the health they were last told
        self.watchers: dict[HealthWatcher, None] = {}
        self._health: str = "ok"
        self._fault_limit = journal_fault_limit
        self._fault_episode = 0
        #: sessions' full options where the journal holds them withheld (credentials)
        self._withheld: dict[str, dict[str, Any]] = {}
        #: hosts following sessions another fleet member owns (:mod:`.following`)
        self._remote: dict[tuple[str, Subscriber], anyio.CancelScope] = {}
        #: their subscriptions (kept after the session closed: a takeover here hands
        #: them to the reopened session, see :meth:`_take_over`)
        self._remote_subs: dict[tuple[str, Subscriber], Subscription] = {}
        #: sessions being reopened here, each set once its reopen ended (an answer to an
        #: interaction of a run it continues waits for it: :meth:`answer`)
        self._reopening: dict[str, anyio.Event] = {}
        #: set once a fleet member recorded what it serves (:func:`.fleet.declare`)
        self.declared = anyio.Event()
        #: a fleet member's attached hosts, published for every member's session/list
        self._hosts: HostCounts | None = None
        #: one lock per provider session being continued (two hosts at once: one binds)
        self._binding: dict[tuple[str, str], anyio.Lock] = {}
        #: the callbacks every session is given, bound once (a bound method made per
        #: session was three objects, 192 bytes, of an idle session's ~3.6 KB)
        self._callbacks = (self._catch_up, self._hosts_changed, self._bind_own)

    async def __aenter__(self) -> Runtime:
        await self.history.start(self._committed)
        self._tg_cm = anyio.create_task_group()
        self._tg = await self._tg_cm.__aenter__()
        if isinstance(self.history, Routable):  # a fleet member: others route requests here
            self._tg.start_soon(serve_routed, self)
            self._tg.start_soon(declare, self)  # what this member serves, for placement
            self._hosts = HostCounts(self.history, self._host_counts)
            self._tg.start_soon(self._hosts.run)
        if hasattr(self.history, "on_takeover"):
            self.history.on_takeover = self._take_over
        return self

    async def __aexit__(self, *exc: object) -> bool | None:
        try:
            try:
                await self.shutdown()
            finally:
                assert self._tg is not None
                self._tg.cancel_scope.cancel()
                result: bool | None = await self._tg_cm.__aexit__(*exc)
        finally:
            await self.history.aclose()
        return result

    def _committed(self) -> None:
        """After each commit: release what is now durable, and keep the recovery records
        of running sessions up to date (an adapter's record may change in the middle of a
        run, e.g. once the provider has named its conversation), so the record a crash
        leaves is never older than the events committed before it."""
        services = self.services
        if self.history.health != self._health:
            self._health_changed()
        services.delivery.release()
        for session in list(services.running):
            session.save_recovery()

    # ------------------------------------------------------------------ journal health

    def journal_status(self) -> JournalStatusParams:
        """The journal's health as sent to watchers."""
        history = self.history
        since = history.failing_since
        return JournalStatusParams(
            history.health,
            history.fault if history.health != "ok" else None,
            0 if since is None else int((time.monotonic() - since) * 1000),
        )

    def watch(self, watcher: HealthWatcher) -> None:
        """Tell ``watcher`` of every change of the journal's health (and now, if it is not
        ``ok``) until :meth:`unwatch`."""
        self.watchers[watcher] = None
        if self.history.health != "ok":
            watcher.journal_status(self.journal_status())

    def unwatch(self, watcher: HealthWatcher) -> None:
        """Stop telling ``watcher``."""
        self.watchers.pop(watcher, None)

    def _health_changed(self) -> None:
        """Hold providers back while the journal is not ``ok`` (resume them when it is),
        tell the watchers, and start the fault limit's clock."""
        self._health = health = self.history.health
        delivery = self.services.delivery
        if health == "ok":
            delivery.resume()
        else:
            delivery.pause()
        status = self.journal_status()
        for watcher in list(self.watchers):
            try:
                watcher.journal_status(status)
            except Exception:
                log.exception("a client could not be told the journal's status")
        self._fault_episode += 1
        if health == "failing" and self._tg is not None:
            self._tg.start_soon(self._fault_limit_passed, self._fault_episode)
        elif health == "broken":
            # nothing more can be recorded by this process: stop the providers now
            self._end_running("internal")

    async def _fault_limit_passed(self, episode: int) -> None:
        """After the fault limit, end the running runs if the same fault goes on."""
        await anyio.sleep(self._fault_limit)
        if episode != self._fault_episode or self.history.health == "ok":
            return
        log.error("journal failing for %.0f s: ending the running runs", self._fault_limit)
        self._end_running("journal_failing")

    def _end_running(self, code: ErrorCode) -> None:
        """End every running run with ``code`` and stop its provider session."""
        if self._tg is None:
            return
        for session in list(self.services.running):
            for run in list(session.active_runs.values()):
                self._tg.start_soon(run.abandon, code)

    async def flush(self) -> None:
        """Wait until everything recorded so far is durable."""
        await self.services.flush()

    async def durable(self) -> None:
        """Wait until everything recorded so far is durable, for a command's reply:
        bounded while the journal is failing (see :meth:`Services.durable`)."""
        await self.services.durable()

    # ------------------------------------------------------------------ clients

    def detach(self, subscriber: Subscriber) -> None:
        """Stop sending anything to ``subscriber`` (its connection ended); its sessions
        go on."""
        for session in self.sessions.values():
            session.stream.unsubscribe(subscriber)
        for key in [key for key in self._remote if key[1] is subscriber]:
            self._remote.pop(key).cancel()
        for key in [key for key in self._remote_subs if key[1] is subscriber]:
            del self._remote_subs[key]
        self._hosts_changed()

    # ------------------------------------------------------------------ providers

    async def provider_limits(self, provider_id: str) -> ProviderLimitsResult:
        """The latest limit figures ``provider_id`` reported (empty when none yet), after
        asking for fresh ones: one of its live sessions (``ProviderSession.read_limits``),
        else the provider itself (``AgentProvider.read_limits``), bounded by
        :data:`LIMITS_READ_TIMEOUT`; one that cannot tell, or fails, leaves the figures
        as they were.  Raises ``provider_not_found`` for an unknown provider."""
        provider = self.registry.get(provider_id)
        session = next(
            (
                s
                for s in self.sessions.values()
                if s.provider.id == provider_id
                and s.state == "active"
                and s.provider_session is not None
            ),
            None,
        )
        update = None
        with anyio.move_on_after(LIMITS_READ_TIMEOUT), quietly("read_limits"):
            if session is not None and session.provider_session is not None:
                update = await session.provider_session.read_limits()
            else:
                update = await provider.read_limits()
        if update is not None and update.meters:
            self.services.limits.note(provider_id, update, self.services.clock.now_iso())
        return self.services.limits.read(provider_id)

    async def describe_providers(self, probe: bool = False) -> list[ProviderDescriptor]:
        """Every provider's descriptor, with its availability when ``probe`` (each probe
        bounded; a probe that fails leaves the availability unknown)."""
        out: list[ProviderDescriptor] = []
        if self.registry.cold:
            # The first list imports every provider module (~125 ms): not on the loop.
            await self.registry.warm()
        for provider in self.registry.all():
            if not probe:
                out.append(provider.describe())
                continue
            try:
                with anyio.fail_after(PROBE_TIMEOUT):
                    availability = await provider.probe()
            except Exception:
                log.exception("probe of %s failed", provider.id)
                availability = None
            # Described after the probe: a provider may learn its descriptor from it
            # (an ACP agent's initialize).
            descriptor = provider.describe()
            out.append(msgspec.structs.replace(descriptor, availability=availability))
        return out

    # ------------------------------------------------------------------ the directory

    async def stored(self, session_id: str) -> SessionRecord:
        """The stored record of ``session_id``; raises ``session_not_found`` or
        ``history_unavailable``."""
        return await self._stored(session_id)

    async def _stored(self, session_id: str) -> SessionRecord:
        """The stored record of a session; raises ``session_not_found`` or
        ``history_unavailable``."""
        record = await guard(self.history.load_session(session_id))
        if record is None:
            raise BridgeError("session_not_found")
        return record

    async def _open_here(self, session_id: str) -> Session:
        """Return the session if it is open in this process (or was, and is closed);
        otherwise raise ``session_closed`` / ``session_in_use`` for a stored session and
        ``session_not_found`` for an unknown one.  While it is being reopened here
        (``session/resume`` sent just before), waits for that first."""
        if session_id in self._reopening:
            await self._reopened_here(session_id)
        session = self.sessions.get(session_id)
        if session is not None:
            return session
        record = await self._stored(session_id)
        raise BridgeError("session_closed" if record.state == "closed" else "session_in_use")

    def _run(self, run_id: str) -> Run:
        run = self.runs.get(run_id)
        if run is None:
            raise BridgeError("run_not_found")
        return run

    def _new_session(
        self,
        session_id: str,
        provider: AgentProvider,
        descriptor: ProviderDescriptor,
        workspace: str | None,
        title: str | None,
        options: dict[str, Any],
        created_at: str,
        last_sequence: int = 0,
    ) -> Session:
        session = Session(
            session_id,
            provider,
            descriptor,
            workspace,
            title,
            options,
            created_at,
            self.services,
            last_sequence,
        )
        session.stream.on_lag, session.stream.on_hosts, session.on_native_ref = self._callbacks
        return session

    def _hosts_changed(self) -> None:
        if self._hosts is not None:
            self._hosts.changed()

    def _host_counts(self) -> dict[str, int]:
        """Hosts attached here per session: an open session's subscribers, and the
        hosts following a session another member runs."""
        counts = {
            sid: len(session.stream.subscriptions)
            for sid, session in self.sessions.items()
            if session.state != "closed" and session.stream.subscriptions
        }
        for sid, _ in self._remote:
            counts[sid] = counts.get(sid, 0) + 1
        return counts

    def _catch_up(self, stream: EventStream, subscription: Subscription) -> None:
        """Start bringing a client that fell behind back from the journal (each client
        has its own cursor: one that stops reading does not stall the others)."""
        if self._tg is not None:
            self._tg.start_soon(catch_up, self.history, stream, subscription)

    async def _start(self, session: Session, start: ProviderStart) -> None:
        assert self._tg is not None, "runtime not started"
        await session.start_provider(start, self._tg)

    # ------------------------------------------------------------------ sessions

    async def _open_session(
        self,
        provider_id: str,
        workspace: str | None,
        options: dict[str, Any],
        title: str | None,
        start: ProviderStart,
        subscriber: Subscriber | None,
        session_id: str | None = None,
        parent: SessionParent | None = None,
        resolved: dict[str, Any] | None = None,
    ) -> SessionInfo:
        self.services.check_writable()
        require_unicode("workspace", workspace)
        require_unicode("options", options)
        require_unicode("title", title)
        provider = self.registry.get(provider_id)
        descriptor = provider.describe()
        if resolved is None:
            resolved = resolve_options(descriptor.options, options, "session")
        real_workspace = resolve_workspace(workspace)
        session = self._new_session(
            session_id or self.services.ids.new("ses"),
            provider,
            descriptor,
            real_workspace,
            title,
            resolved,
            self.services.clock.now_iso(),
            0 if parent is None else parent.sequence,
        )
        session.parent = parent
        await self._start(session, start)
        self.sessions[session.id] = session
        if subscriber is not None:
            session.stream.subscribe(subscriber)
        self.history.add_session(
            SessionRecord(
                session_id=session.id,
                provider_id=provider.id,
                provider_version=descriptor.version,
                workspace=real_workspace,
                title=title,
                created_at=session.created_at,
                updated_at=session.updated_at,
                options=self._storable(session.id, resolved),
                parent_id=None if parent is None else parent.session_id,
                fork_sequence=0 if parent is None else parent.sequence,
            )
        )
        policy = session.policy()  # resumesTurns: what crash recovery reads
        if policy:
            self.history.update_session(session.id, policy=policy)
        session.save_recovery()
        await self.flush()
        return session.info()

    async def create_session(
        self,
        provider_id: str,
        *,
        workspace: str | None = None,
        options: dict[str, Any] | None = None,
        title: str | None = None,
        subscriber: Subscriber | None = None,
        session_id: str | None = None,
        retry_on_limit: RetryOnLimit | None = None,
    ) -> SessionInfo:
        """Create a session, with ``subscriber`` attached to it (``session_id``: the id
        of a session just deleted, to recreate it on another provider; default: a new
        one; ``retry_on_limit``: the session's policy for runs that hit a limit, kept in
        the journal with the session, so a reopen in a later bridge has it too).  Raises
        ``provider_not_found``, ``invalid_option``, ``workspace_invalid`` or the
        provider's classified failure."""
        info = await self._open_session(
            provider_id,
            workspace,
            options or {},
            title,
            lambda provider, ctx: provider.create_session(ctx),
            subscriber,
            session_id,
        )
        session = self.sessions.get(info.session_id)
        if session is not None and retry_on_limit is not None:
            session.retry_on_limit = retry_on_limit
            self.history.update_session(session.id, policy=session.policy())
            await self.flush()
        return info

    async def resume_session(
        self,
        record: RecoveryRecord,
        *,
        workspace: str | None = None,
        options: dict[str, Any] | None = None,
        title: str | None = None,
        subscriber: Subscriber | None = None,
    ) -> SessionInfo:
        """Create a session that continues the provider session in ``record``.  Raises
        ``unsupported``, ``recovery_invalid`` and what :meth:`create_session` raises."""
        descriptor = self.registry.get(record.provider_id).describe()
        if not descriptor.capabilities.recovery.resume:
            raise BridgeError("unsupported")
        if record.wire_version != WIRE_VERSION or record.opaque is None:
            raise BridgeError("recovery_invalid")
        return await self._open_session(
            record.provider_id,
            workspace,
            options or {},
            title,
            lambda p, ctx: p.resume_session(ctx, record.opaque),
            subscriber,
        )

    async def fork_session(
        self,
        session_id: str,
        *,
        at_event: int | None = None,
        title: str | None = None,
        subscriber: Subscriber | None = None,
    ) -> SessionForkResult:
        """Fork ``session_id`` at the event ``at_event`` (default: its last): a new
        session on the same provider whose history reads the original's up to there
        (referenced, never copied) and whose provider session is the provider's native
        fork at the latest point at or before it where the provider's history stood at a
        known position (a run's end; with ``granularity: message``, also a checkpoint
        inside a run).  Returns the fork and that point's sequence.  The original is
        unchanged.

        Raises ``session_not_found``, ``unsupported`` (the provider cannot fork, or not
        at an earlier event), ``invalid_params`` (``atEvent`` below 1, past the end,
        inside a run the provider cannot cut, or inside a run still going) and what
        :meth:`create_session` raises."""
        self.services.check_writable()
        live = self.sessions.get(session_id)
        if live is not None:
            await self.flush()
        record = await self._stored(session_id)
        provider = self.registry.get(record.provider_id)
        support = provider.describe().capabilities.fork
        last = live.stream.last_sequence if live is not None else record.last_sequence
        at = last if at_event is None else at_event
        if not (support.at_end or support.at_event) or (at != last and not support.at_event):
            raise BridgeError("unsupported")
        if at < 1 or at > last:
            raise BridgeError(
                "invalid_params",
                details={
                    "field": "atEvent",
                    "reason": f"no event {at} in this session: its events are 1..{last}"
                    if last
                    else "the session has no events yet",
                },
            )
        await self._check_fork_point(session_id, at, support.granularity, live)
        point = await guard(self.history.position_at(session_id, at))
        position = None if point is None else msgspec.json.decode(point[1])
        opaque = live.export_opaque() if live is not None else record.recovery
        options = restore_withheld(record.options, self._withheld.get(session_id))
        at_end = at == last
        info = await self._open_session(
            record.provider_id,
            record.workspace,
            options,
            title if title is not None else record.title,
            lambda p, ctx: p.fork_session(ctx, opaque, position, at_end),
            subscriber,
            parent=SessionParent(session_id, at),
            resolved=options,
        )
        fork = self.sessions.get(info.session_id)
        policy = live.policy() if live is not None else record.policy
        if fork is not None and policy:
            # the fork goes on as the original would: its retryOnLimit, and the model
            # and mode chosen for it (the provider forks with the session's options)
            fork.restore_policy(policy)
            self.history.update_session(fork.id, policy=fork.policy())
            await self._restore_settings(fork)
            await self.flush()
        return SessionForkResult(info, 0 if point is None else point[0])

    async def _check_fork_point(
        self, session_id: str, at: int, granularity: str, live: Session | None
    ) -> None:
        """Raise ``invalid_params`` when the event ``at`` is inside a run (a run's event
        other than its last) and the provider forks between its turns only
        (``granularity`` ``run``), or inside a run of ``live`` still going (its
        provider has not written it yet)."""
        page = await guard(self.history.read_events(session_id, at, at))
        if not page:
            return  # dropped from memory: nothing tells, the provider's position decides
        event = msgspec.json.decode(page[0], type=_ForkPoint)
        if event.run_id is None or event.payload.type in _RUN_ENDS:
            return
        if live is not None and event.run_id in live.active_runs:
            raise BridgeError(
                "invalid_params",
                details={
                    "field": "atEvent",
                    "reason": f"event {at} is inside a run still going: fork at it once "
                    "the run has ended",
                },
            )
        if granularity != "message":
            raise BridgeError(
                "invalid_params",
                details={
                    "field": "atEvent",
                    "reason": f"event {at} is inside a run and this provider forks between "
                    "its turns only: fork at a run's last event (run.completed, run.failed "
                    "or run.interrupted) or between runs",
                },
            )

    async def reopen_session(
        self,
        session_id: str,
        *,
        after: int | None = None,
        workspace: str | None = None,
        options: dict[str, Any] | None = None,
        title: str | None = None,
        subscriber: Subscriber | None = None,
    ) -> SessionInfo:
        """Reopen a stored session by id (``session/resume {sessionId}``), in this or a
        later bridge process: same id, its sequence continues after ``session.resumed``.
        A session already open here is returned as it is.  With ``after``, its events
        after that sequence are replayed to ``subscriber`` first (as :meth:`attach`).

        Raises ``session_not_found``, ``session_in_use`` (open in another live bridge),
        ``unsupported`` (the provider cannot resume), ``recovery_invalid``,
        ``workspace_invalid``, ``invalid_option`` or the provider's classified failure.
        """
        live = self.sessions.get(session_id)
        if live is not None and live.state == "closing":
            await live.closed.wait()
        if live is not None and live.state == "active":
            if subscriber is not None:
                if after is not None:
                    await self.attach(session_id, subscriber, after)
                else:
                    live.stream.subscribe(subscriber)
            return live.info()
        self.services.check_writable()
        await self.flush()
        if after is not None:
            _check_after(after, (await self._stored(session_id)).last_sequence)
        self._reopening[session_id] = done = anyio.Event()
        try:
            return await self._reopen(session_id, after, workspace, options, title, subscriber)
        finally:
            del self._reopening[session_id]
            done.set()

    async def _reopened_here(self, session_id: str) -> None:
        """Return once ``session_id`` is not being reopened here (at once if it is not)."""
        done = self._reopening.get(session_id)
        if done is not None:
            await done.wait()

    async def _reopen(
        self,
        session_id: str,
        after: int | None,
        workspace: str | None,
        options: dict[str, Any] | None,
        title: str | None,
        subscriber: Subscriber | None,
    ) -> SessionInfo:
        status, record = await guard(self.history.claim(session_id))
        if status == "not_found" or record is None:
            raise BridgeError("session_not_found" if status != "in_use" else "session_in_use")
        try:
            # runs its last bridge left open (it died while they waited on an
            # interaction, and the provider continues such a run): continued below
            turns = await cut_turns(self.history, session_id)
            session = self._reopened(record, workspace, options, title)
            opaque = record.recovery

            def start(provider: AgentProvider, ctx: SessionContext) -> Awaitable[ProviderSession]:
                if opaque is None:
                    return provider.create_session(ctx)
                return provider.resume_session(ctx, opaque)

            await self._start(session, start)
            session.restore_policy(record.policy)
        except BaseException:
            self.history.update_session(session_id, state="closed")
            raise
        self.sessions[session_id] = session
        subscription: Subscription | None = None
        if subscriber is not None:
            subscription = session.stream.subscribe(subscriber)
            if after is not None:
                # held from here, so session.resumed reaches it once, in the replay
                session.stream.begin_replay(subscription, after)
        session.updated_at = self.services.clock.now_iso()
        self.history.update_session(
            session_id,
            state="active",
            updated_at=session.updated_at,
            title=session.title,
            workspace=session.workspace,
            options=self._storable(session_id, session.options),
            policy=session.policy(),
        )
        session.stream.publish(None, SessionResumed())
        cut = [restore_run(session, turn, self.runs) for turn in turns]
        replaying = subscriber if subscription is not None and after is not None else None
        for run in cut:
            await run.continue_cut({}, replaying)
        if not options:  # options given with the resume say what the session runs with
            await self._restore_settings(session)
        session.save_recovery()
        if subscription is not None and after is not None:
            await self._replay_open(session, subscription, after)
        else:
            await self.flush()
        return session.info()

    async def _restore_settings(self, session: Session) -> None:
        """Switch a reopened session's provider to the model and mode chosen earlier with
        ``session/configure`` where it does not start with them.  One the provider no
        longer offers or cannot switch to is not a reason to refuse the reopen: it runs
        with the provider's own, and a ``settings_not_restored`` diagnostic says so."""
        model, mode = session.chosen
        provider_session = session.provider_session
        if (model is None and mode is None) or provider_session is None:
            return
        with provider_call(f"session {session.id}: model_and_mode"):
            settings = provider_session.model_and_mode() or SessionSettings()
        if settings.model is not None and settings.model.current == model:
            model = None
        if settings.mode is not None and settings.mode.current == mode:
            mode = None
        # one at a time: a model no longer offered does not cost the mode
        for what, choice in (("model", (model, None)), ("mode", (None, mode))):
            if choice == (None, None):
                continue
            try:
                with provider_call(f"session {session.id}: configure"):
                    await provider_session.configure(*choice)
            except BridgeError as exc:
                log.warning(
                    "session %s: the %s chosen earlier was not set again: %s",
                    session.id,
                    what,
                    exc.error_code,
                )
                session.stream.publish(
                    None,
                    Diagnostic(
                        level="warning",
                        code="settings_not_restored",
                        message=f"the {what} chosen earlier could not be set again "
                        f"({exc.error_code}); the session runs with the provider's own",
                    ),
                )

    def _reopened(
        self,
        record: SessionRecord,
        workspace: str | None,
        options: dict[str, Any] | None,
        title: str | None,
    ) -> Session:
        """A :class:`Session` continuing ``record``, with the overrides applied."""
        provider = self.registry.get(record.provider_id)
        descriptor = provider.describe()
        if not descriptor.capabilities.recovery.resume:
            raise BridgeError("unsupported")
        resolved = (
            resolve_options(descriptor.options, options, "session")
            if options
            else restore_withheld(record.options, self._withheld.get(record.session_id))
        )
        session = self._new_session(
            record.session_id,
            provider,
            descriptor,
            resolve_workspace(workspace if workspace is not None else record.workspace),
            title if title is not None else record.title,
            resolved,
            record.created_at,
            record.last_sequence,
        )
        if record.parent_id is not None:
            session.parent = SessionParent(record.parent_id, record.fork_sequence)
        return session

    # ------------------------------------------------------------------ provider sessions

    async def continue_native(
        self,
        provider_id: str,
        session_ref: str,
        *,
        workspace: str | None = None,
        options: dict[str, Any] | None = None,
        title: str | None = None,
        subscriber: Subscriber | None = None,
        import_limit: int | None = None,
    ) -> NativeSessionsContinueResult:
        """Continue the provider's own session ``session_ref`` in the bridge: the one
        bridge session bound to it (``existing``: returned as :meth:`reopen_session`
        returns it, overrides ignored), or a new one (``created``: bound first, so that a
        second caller, here or in another bridge on the same journal, gets this one;
        resumed from the provider's recovery record, then its earlier records imported: the
        newest ``import_limit`` at most, :data:`~agent_bridge.wire.native.
        DEFAULT_IMPORT_LIMIT` when ``None``, at most :data:`~agent_bridge.wire.native.
        MAX_IMPORT_LIMIT`).

        Raises ``unsupported``, ``invalid_params`` (a reference the provider did not
        make, or a ``workspace`` other than the session's own), ``session_not_found``,
        ``session_in_use`` (bound to a session another live bridge has open),
        ``history_unavailable`` and what :meth:`create_session` raises."""
        provider = self.registry.get(provider_id)
        if provider.describe().capabilities.native_sessions.continue_ != "supported":
            raise BridgeError("unsupported")
        require_unicode("sessionRef", session_ref)
        if import_limit is None:
            import_limit = DEFAULT_IMPORT_LIMIT
        elif import_limit < 1:
            raise BridgeError("invalid_params", details={"field": "importLimit"})
        import_limit = min(import_limit, MAX_IMPORT_LIMIT)
        key = (provider_id, session_ref)
        lock = self._binding.get(key)
        if lock is None:
            lock = self._binding[key] = anyio.Lock()
        try:
            async with lock:
                return await self._continue_native(
                    provider, session_ref, workspace, options or {}, title, subscriber, import_limit
                )
        finally:
            if not lock.locked() and not lock.statistics().tasks_waiting:
                self._binding.pop(key, None)

    async def _bound(self, session_id: str, subscriber: Subscriber | None) -> SessionInfo | None:
        """The bound session ``session_id``, reopened if needed; ``None`` if it is gone."""
        try:
            return await self.reopen_session(session_id, subscriber=subscriber)
        except BridgeError as exc:
            if exc.error_code == "session_not_found":
                return None
            raise

    async def _continue_native(
        self,
        provider: AgentProvider,
        session_ref: str,
        workspace: str | None,
        options: dict[str, Any],
        title: str | None,
        subscriber: Subscriber | None,
        import_limit: int,
    ) -> NativeSessionsContinueResult:
        history = self.history
        pid = provider.id
        existing = (await guard(history.native_bindings(pid, [session_ref]))).get(session_ref)
        session_id = native_session_id(pid, session_ref)
        if existing is not None:
            info = await self._bound(existing, subscriber)
            if info is not None:
                return NativeSessionsContinueResult(info, "existing")
            # bound to a session that is not there: left by a crash between binding and
            # the session's first commit (or another bridge is at that very moment, which
            # may still write the derived id: a fresh one cannot collide with it)
            await guard(history.unbind_native(pid, session_ref, existing))
            session_id = self.services.ids.new("ses")
        continuation = await provider.native_continuation(session_ref)
        if continuation.workspace is not None:
            own = resolve_workspace(continuation.workspace)
            if workspace is not None and resolve_workspace(workspace) != own:
                raise BridgeError("invalid_params", details={"field": "workspace"})
            workspace = own
        self.services.check_writable()
        winner = await guard(history.bind_native(pid, session_ref, session_id))
        if winner != session_id:  # another bridge on this journal bound it meanwhile
            info = await self._bound(winner, subscriber)
            if info is None:
                raise BridgeError("history_unavailable")
            return NativeSessionsContinueResult(info, "existing")
        opaque = continuation.opaque
        try:
            info = await self._open_session(
                pid,
                workspace,
                options,
                title,
                lambda p, ctx: p.resume_session(ctx, opaque),
                subscriber,
                session_id,
            )
        except BaseException:
            with anyio.CancelScope(shield=True):
                await guard(history.unbind_native(pid, session_ref, session_id))
            raise
        session = self.sessions[session_id]
        try:
            provider_session = session.provider_session
            replayed = provider_session.replayed_history() if provider_session else ((), False)
            imported = await import_history(
                provider, session_ref, session.stream, import_limit, replayed
            )
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.close_session(session_id)
                await self.delete_session(session_id)  # the binding goes with it
            raise
        await self.flush()
        return NativeSessionsContinueResult(session.info(), "created", imported.records)

    def _bind_own(self, session: Session, ref: str) -> None:
        """The provider named its own session behind ``session``: bind it (in the
        background; the first binding of a reference wins)."""
        if self._tg is not None:
            self._tg.start_soon(self._bind_own_now, session.provider.id, ref, session.id)

    async def _bind_own_now(self, provider_id: str, ref: str, session_id: str) -> None:
        try:
            bound = await self.history.bind_native(provider_id, ref, session_id)
        except Exception:
            log.warning("session %s: its provider session could not be bound", session_id)
            return
        if bound != session_id:
            log.warning("session %s continues a provider session bound to %s", session_id, bound)

    async def bound_sessions(self, provider_id: str, session_refs: list[str]) -> dict[str, str]:
        """The bridge session each of ``session_refs`` (the provider's) is bound to.

        The open sessions of that provider are asked for their recovery record first: one
        whose provider session was written after the record was last saved (a Codex
        thread's rollout appears once the thread runs) names it now, and counts as bound
        even before its binding reaches the journal, so a listing never offers its
        provider session as a second, unbound one."""
        if not session_refs:
            return {}
        own: dict[str, str] = {}
        wanted = set(session_refs)
        for session in list(self.sessions.values()):
            if session.provider.id != provider_id or session.state == "closed":
                continue
            session.save_recovery()  # binds a newly named provider session
            ref = session.native_ref
            if ref is not None and ref in wanted:
                own.setdefault(ref, session.id)
        bound = await guard(self.history.native_bindings(provider_id, session_refs))
        return {**own, **bound}

    async def attach(
        self, session_id: str, subscriber: Subscriber, after: int = 0
    ) -> SessionAttachResult:
        """Send the session's events after sequence ``after`` to ``subscriber``, in
        order, then let its live events follow (no gap, no duplicate), and offer it the
        pending interactions again.  Works for stored sessions not open here too
        (history only).  While the journal is failing the replay holds what is committed
        and the reply does not wait; the events still held follow once committed.
        Raises ``session_not_found`` or ``history_unavailable``."""
        session = self.sessions.get(session_id)
        if session is None or session.state == "closed":
            stored = await self._stored(session_id)
            info = record_info(stored)
            _check_after(after, info.last_sequence)
            subscription = Subscription(subscriber, after)
            replayed = await replay(
                self.history, session_id, after, info.last_sequence, subscription
            )
            if session is None and stored.state == "active":
                self._follow(session_id, subscription)
            return SessionAttachResult(info, replayed, info.last_sequence)
        _check_after(after, session.stream.last_sequence)
        subscription = session.stream.subscribe(subscriber)
        async with subscription.turn:  # after this subscriber's earlier attach or catch-up
            session.stream.begin_replay(subscription, after)
            return await self._replay_open(session, subscription, after)

    async def follow_elsewhere(
        self, session_id: str, subscriber: Subscriber, after: int | None
    ) -> bool:
        """On a fleet, let ``subscriber`` follow ``session_id`` where another member runs
        it (as :meth:`attach`: its events after ``after`` first; ``None``: from its
        newest) and return ``True``; ``False`` when this runtime is not a fleet member.
        Raises what :meth:`attach` raises."""
        if not isinstance(self.history, Routable):
            return False
        if after is None:
            after = (await self._stored(session_id)).last_sequence
        await self.attach(session_id, subscriber, after)
        return True

    async def route(self, method: str, params: Any, local: BridgeError) -> Any:
        """The result of a request about a session another fleet member owns, from that
        member (:mod:`.routing`); re-raises ``local`` (the error here) when there is
        none, except ``session_closed`` for an answer to an interaction still pending in
        a session closed by crash recovery (a run cut off there, which
        ``session/resume`` continues and offers again: docs/fleet.md)."""
        try:
            return await route(self.history, method, params, local)
        except BridgeError as exc:
            if exc.error_code == "interaction_not_found" and method == "interaction/respond":
                state = await guard(self.history.interaction_state(params.interaction_id))
                if state == ("pending", "closed"):
                    raise BridgeError("session_closed") from None
            raise

    async def create_placed(
        self,
        params: SessionCreateParams,
        subscriber: Subscriber | None,
        session_id: str | None = None,
    ) -> SessionInfo:
        """``session/create``: on a fleet, on the member placement picks
        (:func:`.fleet.create_placed`, which says what it raises); else here, where
        naming a node is ``invalid_params``.  ``session_id``: that of a session just
        deleted, created again (on another provider)."""
        if isinstance(self.history, Routable):
            return await create_placed(self, params, subscriber, session_id)
        if params.node is not None:
            raise BridgeError(
                "invalid_params",
                details={"field": "node", "reason": "this bridge is not a fleet member"},
            )
        return await self.create_here(params, subscriber, session_id)

    async def create_here(
        self,
        params: SessionCreateParams,
        subscriber: Subscriber | None,
        session_id: str | None = None,
    ) -> SessionInfo:
        """``session/create`` as ``params`` asks, in this bridge (``node`` not read):
        :meth:`create_session`, which says what it raises."""
        return await self.create_session(
            params.provider,
            workspace=params.workspace,
            options=params.options,
            title=params.title,
            subscriber=subscriber,
            session_id=session_id,
            retry_on_limit=params.retry_on_limit,
        )

    def unfollow(self, session_id: str, subscriber: Subscriber) -> None:
        """Stop following ``session_id`` from another fleet member for ``subscriber``
        (it is about to be deleted and created again under its id)."""
        key = (session_id, subscriber)
        self._remote_subs.pop(key, None)
        scope = self._remote.pop(key, None)
        if scope is not None:
            scope.cancel()
        self._hosts_changed()

    def _take_over(self, session_ids: list[str]) -> None:
        """Sessions of a fleet member whose lease expired were just closed
        ``bridge_crashed`` by this member: have a member that can resume each
        (:func:`.fleet.succeed`; in the event loop)."""
        if self._tg is not None:
            for session_id in session_ids:
                self._tg.start_soon(succeed, self, session_id)

    def _remote_followers(self, session_id: str) -> list[Subscription]:
        """Stop following ``session_id`` from another member for the hosts here that
        did; return their subscriptions (each with the cursor of what it was sent)."""
        keys = [key for key in self._remote_subs if key[0] == session_id]
        subscriptions = [self._remote_subs.pop(key) for key in keys]
        for key in keys:
            scope = self._remote.pop(key, None)
            if scope is not None:
                scope.cancel()
        self._hosts_changed()
        return subscriptions

    async def resume_taken_over(self, session_id: str) -> SessionInfo:
        """Reopen a taken-over session in this member (its provider session resumed from
        the recovery record); hosts here that followed it go on from what they were
        sent, now from the local stream.  Raises what :meth:`reopen_session` raises (the
        session then stays closed and resumable)."""
        subscriptions = self._remote_followers(session_id)
        try:
            info = await self.reopen_session(session_id)
        except BridgeError:
            for subscription in subscriptions:  # they keep following what is stored
                self._follow(session_id, subscription)
            raise
        log.warning("session %s: taken over and resumed here", session_id)
        await self._attach_all(session_id, subscriptions)
        return info

    async def follow_on(self, session_id: str) -> None:
        """The hosts here that followed ``session_id`` (ended and taken over by another
        member) follow it on from there, from what they were sent.  A follower still
        running goes on as it is (it reads the journal, whoever writes it: restarting it
        would offer its host the pending interactions once more)."""
        ended = [
            key for key in self._remote_subs if key[0] == session_id and key not in self._remote
        ]
        subscriptions = [self._remote_subs.pop(key) for key in ended]
        await self._attach_all(session_id, subscriptions)

    async def _attach_all(self, session_id: str, subscriptions: list[Subscription]) -> None:
        for subscription in subscriptions:
            try:
                await self.attach(session_id, subscription.subscriber, subscription.cursor)
            except BridgeError as exc:
                log.warning("session %s: a host could not follow on (%s)", session_id, exc)

    def _follow(self, session_id: str, subscription: Subscription) -> None:
        """Follow a session open in another fleet member for ``subscription``'s host
        (once per host and session), when the history can say when it commits."""
        key = (session_id, subscription.subscriber)
        if self._tg is None or key in self._remote or not isinstance(self.history, Followable):
            return
        scope = self._remote[key] = anyio.CancelScope()
        self._remote_subs[key] = subscription
        self._hosts_changed()

        async def follow() -> None:
            try:
                with scope:
                    await follow_remote(self.history, session_id, subscription)
            finally:
                if self._remote.get(key) is scope:
                    del self._remote[key]
                    self._hosts_changed()

        self._tg.start_soon(follow)

    async def _replay_open(
        self, session: Session, subscription: Subscription, after: int
    ) -> SessionAttachResult:
        """Replay what is committed of an open session to a subscription that is holding
        its live events, then release them."""
        try:
            if self.history.health == "ok":  # failing: what is committed, without waiting
                await self.flush()
            last = session.stream.committed_sequence()
            replayed = await replay(self.history, session.id, after, last, subscription)
        finally:
            if session.stream.end_replay(subscription):
                await subscription.subscriber.drained()
        session.reoffer(subscription.subscriber)
        return SessionAttachResult(session.info(), replayed, last)

    async def export_session(self, session_id: str) -> RecoveryRecord:
        """Return the recovery record of a session, open here or stored.  Raises
        ``session_not_found``, ``unsupported`` when the provider cannot resume, and
        ``recovery_invalid`` when there is no record."""
        session = self.sessions.get(session_id)
        if session is None:
            stored = await self._stored(session_id)
            descriptor = self.registry.get(stored.provider_id).describe()
            if not descriptor.capabilities.recovery.resume:
                raise BridgeError("unsupported")
            if stored.recovery is None:
                raise BridgeError("recovery_invalid")
            return RecoveryRecord(
                stored.provider_id, stored.provider_version, WIRE_VERSION, stored.recovery
            )
        if not session.descriptor.capabilities.recovery.resume:
            raise BridgeError("unsupported")
        opaque = session.export_opaque()
        if opaque is None:
            raise BridgeError("recovery_invalid")
        return RecoveryRecord(session.provider.id, session.descriptor.version, WIRE_VERSION, opaque)

    async def list_sessions(
        self,
        provider: str | None = None,
        limit: int = 100,
        *,
        workspace: str | None = None,
        cursor: str | None = None,
    ) -> tuple[list[SessionInfo], str | None]:
        """Return sessions newest first (those of ``provider`` in ``workspace`` only, when
        given) from history, and the cursor of the next page.  A ``cursor`` no page gave
        (every journal's is a decimal position) is ``invalid_params``: read as the end of
        the list it would be an empty page, and the host would take it for the last.  A
        relative ``workspace`` or one with a NUL is ``workspace_invalid``."""
        if cursor is not None and not (cursor.isascii() and cursor.isdigit()):
            raise BridgeError(
                "invalid_params",
                details={
                    "field": "cursor",
                    "reason": "not a cursor this bridge gave: pass a page's nextCursor",
                },
            )
        workspace = workspace_filter(workspace)  # one that does not exist: as given
        if self._hosts is not None:  # this member's own count is current in the list
            with contextlib.suppress(JournalError):
                await self._hosts.sync()
        records, next_cursor = await guard(
            self.history.list_sessions(provider, workspace, cursor, limit)
        )
        out = [
            self._listed(self.sessions[r.session_id], r)
            if r.session_id in self.sessions
            else record_info(r)
            for r in records
        ]
        return out, next_cursor

    @staticmethod
    def _listed(session: Session, record: SessionRecord) -> SessionInfo:
        """An open session as ``session/list`` shows it: its own counts, the fleet's
        attached hosts where the history counts them across members."""
        info = session.info(counts=True, node=record.node)
        if record.attached_hosts is None or session.state == "closed":
            return info
        return msgspec.structs.replace(info, attached_hosts=record.attached_hosts)

    def retitle_session(self, session_id: str, title: str | None) -> SessionInfo:
        """Give an open session of this process a new ``title`` (``None``: none); it is
        recorded with the next commit.  Returns the session.  Raises
        ``session_not_found`` for a session this process does not hold, ``session_closed``
        for a closed one and ``journal_failing`` while the journal cannot commit."""
        session = self.sessions.get(session_id)
        if session is None:
            raise BridgeError("session_not_found")
        if session.state != "active":
            raise BridgeError("session_closed")
        self.services.check_writable()
        session.title = title
        self.history.update_session(session_id, title=title)
        return session.info()

    async def reconfigure_session(self, session_id: str, options: dict[str, Any]) -> SessionInfo:
        """Give an open session new session ``options`` (all of them) between runs: the
        provider session is stopped (its recovery record saved) and the next run resumes
        it with them.  Returns the session; its options are :meth:`session_options`.

        Raises ``session_not_found`` / ``session_closed`` / ``session_in_use``,
        ``run_active`` while a run is active, ``invalid_option`` for an option or value
        the provider does not declare, and ``unsupported`` when the provider cannot
        resume a session (so cannot restart with other options).
        """
        session = await self._open_here(session_id)
        if session.state != "active":
            raise BridgeError("session_closed")
        if session.active_runs:
            raise BridgeError("run_active")
        self.services.check_writable()
        resolved = resolve_options(session.descriptor.options, options, "session")
        if resolved == session.options:
            return session.info()
        if not session.descriptor.capabilities.recovery.resume:
            raise BridgeError("unsupported")
        await session.dispose_provider()
        session.options = resolved
        self.history.update_session(session_id, options=self._storable(session_id, resolved))
        await self.flush()
        return session.info()

    def _storable(self, session_id: str, options: dict[str, Any]) -> dict[str, Any]:
        """What of a session's ``options`` the journal may keep (no credential values);
        what it may not is remembered here, for a reopen in this process."""
        stored = storable_options(options)
        if stored != options:
            self._withheld[session_id] = dict(options)
        else:
            self._withheld.pop(session_id, None)
        return stored

    def session_options(self, session_id: str) -> dict[str, Any]:
        """The options of a session open here (``{}`` when it is not)."""
        session = self.sessions.get(session_id)
        return dict(session.options) if session is not None else {}

    async def close_session(self, session_id: str, reason: str = "closed") -> SessionInfo:
        """Interrupt the active run, dispose the provider session, publish
        ``session.closed``; return once that is durable.  Closing a closed session
        returns it unchanged; a session open in another bridge process is
        ``session_in_use``.  While the journal is failing an open session is not closed:
        ``journal_failing`` (retryable) at once; if it begins to fail during the close,
        ``journal_failing`` after :data:`~agent_bridge.runtime.services.FAILING_REPLY_WAIT`
        (the close is then recorded once it recovers; a retry answers the closed session).
        A close that comes while the session is being reopened here waits for the reopen
        and closes what it opened (answering "closed" at once would be undone by it).
        """
        await self._reopened_here(session_id)
        session = self.sessions.get(session_id)
        if session is None:
            record = await self._stored(session_id)
            if record.state != "closed":
                raise BridgeError("session_in_use")
            return record_info(record)
        if session.state == "active":
            self.services.check_writable()
        await session.close(reason)
        self._hosts_changed()
        await self.services.durable()
        return session.info()

    async def delete_session(self, session_id: str) -> SessionDeleteResult:
        """Close the session if it is open here, then delete its history, receipts and
        recovery record.  Raises ``session_not_found``, ``session_in_use`` (open in
        another live bridge), ``history_unavailable``, or ``journal_failing`` while the
        journal cannot commit."""
        self.services.check_writable()
        await self._reopened_here(session_id)
        session = self.sessions.get(session_id)
        if session is not None and await guard(self.history.has_forks(session_id)):
            raise _has_forks()  # refused before anything is closed
        if session is not None and session.state != "closed":
            await self.close_session(session_id)
        status = await guard(self.history.delete(session_id))
        if status == "in_use":
            raise BridgeError("session_in_use")
        if status == "has_forks":
            raise _has_forks()
        if status == "not_found" and session is None:
            raise BridgeError("session_not_found")
        if session is not None:
            session.stream.forget_held()
        self.sessions.pop(session_id, None)
        for run_id in [r for r, run in self.runs.items() if run.session.id == session_id]:
            del self.runs[run_id]
        self._receipts.forget_session(session_id)
        return SessionDeleteResult(session_id, deleted=True)

    def hurry(self) -> None:
        """From now on, an interrupt or a close gives providers no grace: a run still
        going is ended as interrupted (forced) at once.  For a command told to stop now
        (a second Ctrl-C, a closed stdout)."""
        self.services.interrupt_grace = 0.0

    async def shutdown(self) -> None:
        """Close every active session (concurrently, bounded)."""
        active = [s for s in self.sessions.values() if s.state == "active"]
        if not active:
            return
        services = self.services
        with (
            anyio.CancelScope(shield=True),
            anyio.move_on_after(services.interrupt_grace + services.dispose_timeout + 5),
        ):
            async with anyio.create_task_group() as tg:
                for session in active:
                    tg.start_soon(session.close, "shutdown")
            # what a failing journal cannot commit now, its close gives a bounded chance
            if self.history.health == "ok":
                await self.flush()

    # ------------------------------------------------------------------ runs

    async def start_run(self, params: RunStartParams) -> RunStartResult:
        """Start a run and return at once with its id (once the start is durable);
        events follow.

        Raises ``session_not_found``, ``session_closed``, ``session_in_use``,
        ``run_active``, ``invalid_option``, ``command_conflict``, and the refusals of a
        bad input (:func:`agent_bridge.runtime.inputs.prepare_input`: ``invalid_params``,
        ``unsupported``, ``workspace_invalid``, naming the block), before anything is
        started or recorded.  A provider that fails to
        start the run produces a ``run.failed`` event, not an error reply.  The same
        ``commandId`` with the same payload returns the first receipt (``duplicate``),
        also after a restart of the bridge.
        """
        result = await self._start_run(params)
        await self.flush()
        return result

    async def _start_run(self, params: RunStartParams) -> RunStartResult:
        require_unicode("input", params.input)
        require_unicode("options", params.options)
        receipts = self._receipts
        command_id = params.command_id
        key = b""
        if command_id is not None:
            key = receipts.key(params.session_id, params.input, params.options)
            first = await receipts.find(command_id, key)
            if first is not None:
                return RunStartResult(first.run_id, first.session_id, duplicate=True)
        session = await self._open_here(params.session_id)
        if session.state != "active":
            raise BridgeError("session_closed")
        self.services.check_writable()
        limit = session.descriptor.capabilities.run.max_concurrent_runs
        if len(session.active_runs) >= limit:
            raise BridgeError("run_active")
        options = resolve_options(session.descriptor.options, params.options, "run")
        capabilities = session.input_capabilities()
        prepared = await prepare(
            params.input, capabilities, session.workspace, session.command_names()
        )
        if command_id is not None:  # a retry may have started it while the input was read
            first = receipts.reserved(command_id, key)
            if first is not None:
                return RunStartResult(first.run_id, first.session_id, duplicate=True)
        if session.state != "active":
            raise BridgeError("session_closed")
        if len(session.active_runs) >= limit:
            raise BridgeError("run_active")
        run_id = self.services.ids.new("run")
        result = RunStartResult(run_id, session.id)
        if command_id is not None:
            # reserved now, so a retry racing this start is answered as a duplicate
            receipts.reserve(command_id, key, result)
        if session.provider_session is None:
            try:
                await session.revive()
            except BaseException:
                if command_id is not None:
                    receipts.release(command_id)
                raise
        run = Run(run_id, session, prepared)
        self.runs[run.id] = run
        session.add_run(run)
        if command_id is not None:
            receipts.save(command_id, session.id, key, result, self.services.clock.now_iso())
        await run.start(options)
        return result

    def interrupt_run(self, run_id: str, reason: str = "user") -> RunInterruptResult:
        """Accept an interrupt; the terminal event follows (see :meth:`Run.interrupt`).
        Raises ``run_not_found``, ``run_not_active`` or ``unsupported``."""
        return self._run(run_id).interrupt(reason)

    async def steer_run(self, run_id: str, input: RunInput) -> None:
        """Give an active run more input (see :meth:`Run.steer`); raises
        ``invalid_params`` for text that is not Unicode."""
        require_unicode("input", input)
        await self._run(run_id).steer(input)

    # ------------------------------------------------------------------ interactions

    async def answer(self, interaction_id: str, answer: Any) -> Literal["applied", "duplicate"]:
        """:meth:`respond`, except that an interaction not known here while sessions are
        being reopened here is looked for again once they are (a run they continue
        makes its pending interactions answerable under their ids: an answer routed
        here in between is applied, not refused)."""
        while self._reopening and interaction_id not in self.services.interactions:
            with anyio.move_on_after(30):
                for done in list(self._reopening.values()):
                    await done.wait()
                continue
            break
        return self.respond(interaction_id, answer)

    def respond(self, interaction_id: str, answer: Any) -> Literal["applied", "duplicate"]:
        """Settle an interaction with a client's answer (``interaction/respond``); the
        settlement is durable once :meth:`durable` returns.  Raises
        ``interaction_not_found``, ``invalid_answer``, ``interaction_already_settled``,
        and ``journal_failing`` (retryable; nothing is settled) while the journal cannot
        commit."""
        interaction = self.services.interactions.get(interaction_id)
        if interaction is None:
            raise BridgeError("interaction_not_found")
        self.services.check_writable()
        return interaction.respond(answer)

    async def session_commands(self, session_id: str) -> SessionCommandsResult:
        """The commands the session's provider offers now (``ProviderSession.commands``).
        Raises ``session_not_found``, ``session_closed`` or ``session_in_use``."""
        session = await self._live(session_id)
        assert session.provider_session is not None
        commands = session.provider_session.commands()
        return SessionCommandsResult(commands or (), commands is not None)

    async def _live(self, session_id: str) -> Session:
        """The session, open here and active (else the refusal ``_open_here`` gives, or
        ``session_closed``)."""
        session = await self._open_here(session_id)
        if session.state != "active" or session.provider_session is None:
            raise BridgeError("session_closed")
        return session

    async def session_settings(self, session_id: str) -> SessionSettings:
        """The session's model and mode (``ProviderSession.settings``).  Raises
        ``session_not_found``, ``session_closed`` or ``session_in_use``."""
        session = await self._live(session_id)
        assert session.provider_session is not None
        return session.provider_session.model_and_mode() or SessionSettings()

    async def session_state(self, session_id: str) -> SessionState:
        """What a front-end shows of a session open here to a host on another fleet
        member (``session/state``, routed): its provider's descriptor, its options as
        the journal keeps them, its model and mode, its commands and title.  Raises
        ``session_not_found``, ``session_closed`` or ``session_in_use``."""
        session = await self._open_here(session_id)
        if session.state != "active":
            raise BridgeError("session_closed")
        # between a change of options and the next run it has no provider session:
        # then no model, mode or commands, as a front-end here shows it
        provider_session = session.provider_session
        commands = provider_session.commands() if provider_session is not None else None
        return SessionState(
            session.descriptor,
            storable_options(session.options),
            provider_session.model_and_mode() if provider_session is not None else None,
            SessionCommandsResult(commands or (), commands is not None),
            session.title,
        )

    async def change_options(
        self, session_id: str, set: dict[str, Any], unset: tuple[str, ...]
    ) -> SessionState:
        """Give a session open here the options ``set`` and drop those in ``unset``, the
        rest kept as they are (``session/reconfigure``, routed from a front-end on
        another member that has only the journal's copy of them: :meth:`reconfigure_session`,
        which says what it raises); return its :meth:`session_state`."""
        session = await self._open_here(session_id)
        options = {k: v for k, v in session.options.items() if k not in unset}
        await self.reconfigure_session(session_id, {**options, **set})
        return await self.session_state(session_id)

    def title_if_untitled(self, session_id: str, title: str) -> str | None:
        """Title a session open here ``title`` when it has none (``session/retitle``,
        routed: a front-end titling a session from its first prompt); return the
        title given, ``None`` when it had one.  Raises what :meth:`retitle_session`
        raises."""
        session = self.sessions.get(session_id)
        if session is not None and session.title is not None:
            return None
        self.retitle_session(session_id, title)
        return title

    async def configure_session(self, params: SessionConfigureParams) -> SessionSettings:
        """Switch the session's model and/or mode between runs, then tell every attached
        host (``settings.updated``).  Raises ``invalid_params`` (neither given),
        ``run_active`` (a run is going), ``session_*`` refusals, and the provider's
        ``unsupported`` / ``invalid_params`` / classified failure."""
        session = await self._live(params.session_id)
        if params.model is None and params.mode is None:
            reason = "give a model or a mode"
            raise BridgeError("invalid_params", details={"field": "model", "reason": reason})
        if session.active_runs:
            raise BridgeError("run_active")
        provider_session = session.provider_session
        assert provider_session is not None
        self.services.check_writable()
        await provider_session.configure(params.model, params.mode)
        model, mode = session.chosen
        session.chosen = (
            params.model if params.model is not None else model,
            params.mode if params.mode is not None else mode,
        )
        # kept with the session: a reopen in a later bridge switches to them again
        self.history.update_session(session.id, policy=session.policy())
        settings = provider_session.model_and_mode() or SessionSettings()
        current = SettingsUpdated(
            model=settings.model.current if settings.model is not None else None,
            mode=settings.mode.current if settings.mode is not None else None,
        )
        session.stream.publish(None, current)
        await self.flush()
        return settings

    async def read_blob(self, params: BlobReadParams) -> BlobReadResult:
        """Return a piece of the bytes the journal keeps for ``params.sha256`` (see
        ``BlobReadParams``).  Raises ``blob_not_found`` (none kept: never sent, gone with
        the last session that sent it, or a journal in memory), ``invalid_params`` for an
        ``offset`` past the end, ``history_unavailable`` when the journal cannot be read."""
        data = await self.history.read_blob(params.sha256)
        if data is None:
            raise BridgeError("blob_not_found")
        if params.offset > len(data):
            reason = f"offset is past the end ({len(data)} bytes)"
            raise BridgeError("invalid_params", details={"field": "offset", "reason": reason})
        length = min(params.length or BLOB_READ_MAX, BLOB_READ_MAX)
        piece = data[params.offset : params.offset + length]
        encoded = await anyio.to_thread.run_sync(base64.b64encode, piece)
        return BlobReadResult(
            params.sha256, image_type(data), len(data), params.offset, encoded.decode("ascii")
        )

    async def read_events(self, params: EventsReadParams) -> msgspec.Raw:
        """Return a page of a session's events as an encoded ``EventsReadResult``.

        Raises ``session_not_found``, ``invalid_params`` (a settled raw view) and
        ``history_unavailable`` (the journal cannot be read now).
        """
        check_page(params)
        session = self.sessions.get(params.session_id)
        if session is not None and session.state != "closed":
            if self.history.health == "ok":  # failing: what is committed, without waiting
                await self.flush()
            last = session.stream.committed_sequence()
        else:  # closed here (and committed), or not open in this process
            last = (await self._stored(params.session_id)).last_sequence
        return await read_page(self.history, params, last)
