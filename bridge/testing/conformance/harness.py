"""The bench the checks run on: the real runtime, in process, with history in memory, a
recording host (a runtime :class:`~agent_bridge.runtime.stream.Subscriber`) and the
adapter's provider seen through thin wrappers that record what crosses the SPI.

Nothing here stands in for the runtime: runs, interrupts, settlement and the contract
diagnostics are the runtime's own, exactly as a bridge serves them.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final, get_args

import anyio
import msgspec

from agent_bridge.registry import ProviderRegistry
from agent_bridge.runtime import Interaction, Released, Runtime
from agent_bridge.spi import (
    AgentProvider,
    InteractionHandle,
    InteractionOutcome,
    ProviderRun,
    ProviderSession,
    RunContext,
    RunOutcome,
    SessionContext,
)
from agent_bridge.testing.conformance.adapter import AdapterUnderTest, RunSpec
from agent_bridge.wire.events import (
    Diagnostic,
    EventEnvelope,
    EventPayload,
    ProviderPayload,
    TextDelta,
)
from agent_bridge.wire.interactions import Answer, InteractionRequest
from agent_bridge.wire.methods import RunInput, RunStartParams
from agent_bridge.wire.providers import Availability, ProviderDescriptor

__all__ = ["Bench", "ConformanceFailure", "Host", "RunRecord", "bench", "child_pids", "kind"]

_decode_envelope: Final = msgspec.json.Decoder(EventEnvelope).decode
SEMANTIC: Final = frozenset(get_args(ProviderPayload))
_TAGS: Final[dict[type, str]] = {t: str(t.__struct_config__.tag) for t in get_args(EventPayload)}
TERMINAL: Final = frozenset({"run.completed", "run.failed", "run.interrupted"})


class ConformanceFailure(AssertionError):
    """The adapter broke an item of the contract (the message says which and how)."""


def kind(event: EventEnvelope) -> str:
    """Return the ``type`` of ``event``'s payload (its tag, e.g. ``text.delta``)."""
    return _TAGS[type(event.payload)]


def fail(item: str, message: str) -> ConformanceFailure:
    """Return the failure of contract item ``item``."""
    return ConformanceFailure(f"[{item}] {message}")


def child_pids() -> set[int] | None:
    """The ids of this process's living, unreaped child processes (Linux ``/proc``), or
    ``None`` where they cannot be listed."""
    me = os.getpid()
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    children: set[int] = set()
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces, so split after its ")"
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == me:
            children.add(int(name))
    return children


async def maybe_await(value: Any) -> Any:
    """Return ``value``, awaited if it is awaitable (hooks may be sync or async)."""
    if inspect.isawaitable(value):
        return await value
    return value


# ---------------------------------------------------------------------- the SPI, watched


class _Ctx:
    """The runtime's run context, passed through, recording what the provider emits and
    the interactions it raises (and what each settled as, as the provider saw it)."""

    def __init__(self, inner: RunContext, record: SpiRecord) -> None:
        self._inner = inner
        self._record = record

    @property
    def run_id(self) -> str:
        return self._inner.run_id

    @property
    def interrupt_requested(self) -> bool:
        return self._inner.interrupt_requested

    def _seen(self, payloads: Sequence[Any]) -> None:
        for payload in payloads:
            self._record.emitted.append((self._inner.run_id, payload))

    async def emit(self, payload: ProviderPayload, raw: Any = None) -> None:
        self._seen([payload])
        await self._inner.emit(payload, raw)

    def emit_nowait(self, payload: ProviderPayload, raw: Any = None) -> None:
        self._seen([payload])
        self._inner.emit_nowait(payload, raw)

    async def emit_many(self, payloads: Sequence[ProviderPayload], raw: Any = None) -> None:
        self._seen(payloads)
        await self._inner.emit_many(payloads, raw)

    def emit_nowait_many(self, payloads: Sequence[ProviderPayload], raw: Any = None) -> None:
        self._seen(payloads)
        self._inner.emit_nowait_many(payloads, raw)

    def checkpoint(self, position: Any) -> None:
        self._inner.checkpoint(position)

    def open_interaction(self, request: InteractionRequest) -> InteractionHandle:
        handle = self._inner.open_interaction(request)
        self._record.opened.append((self._inner.run_id, handle, self._inner.interrupt_requested))
        return handle

    async def ask(self, request: InteractionRequest) -> InteractionOutcome:
        return await self.open_interaction(request).wait()


class _Run(ProviderRun):
    def __init__(self, inner: ProviderRun, record: SpiRecord) -> None:
        self.inner = inner
        self._record = record

    async def wait(self) -> RunOutcome:
        return await self.inner.wait()

    async def interrupt(self, reason: str) -> None:
        self._record.interrupts += 1
        await self.inner.interrupt(reason)

    async def steer(self, input: RunInput) -> None:
        await self.inner.steer(input)


class _Session(ProviderSession):
    def __init__(self, inner: ProviderSession, record: SpiRecord) -> None:
        self.inner = inner
        self._record = record

    async def start_run(
        self, input: RunInput, options: Mapping[str, Any], ctx: RunContext
    ) -> ProviderRun:
        self._record.runs_started += 1
        return _Run(
            await self.inner.start_run(input, options, _Ctx(ctx, self._record)), self._record
        )

    def export_recovery_record(self) -> Any:
        return self.inner.export_recovery_record()

    async def dispose(self) -> None:
        self._record.disposes_by_runtime += 1
        await self.inner.dispose()


class _Provider(AgentProvider):
    def __init__(self, inner: AgentProvider, record: SpiRecord) -> None:
        self.inner = inner
        self.id = inner.id
        self._record = record

    def describe(self) -> ProviderDescriptor:
        return self.inner.describe()

    async def probe(self) -> Availability:
        return await self.inner.probe()

    async def create_session(self, ctx: SessionContext) -> ProviderSession:
        session = _Session(await self.inner.create_session(ctx), self._record)
        self._record.sessions.append(session)
        return session

    async def resume_session(self, ctx: SessionContext, opaque: Any) -> ProviderSession:
        session = _Session(await self.inner.resume_session(ctx, opaque), self._record)
        self._record.sessions.append(session)
        self._record.resumes += 1
        return session


@dataclass
class SpiRecord:
    """What crossed the SPI: payloads as emitted (by run id), interactions as opened
    (with whether the run's interrupt had begun), sessions made, runs, interrupts and
    the runtime's dispose calls."""

    emitted: list[tuple[str, Any]] = field(default_factory=list)
    opened: list[tuple[str, InteractionHandle, bool]] = field(default_factory=list)
    sessions: list[_Session] = field(default_factory=list)
    runs_started: int = 0
    interrupts: int = 0
    resumes: int = 0
    disposes_by_runtime: int = 0


# ---------------------------------------------------------------------- the host


#: ``policy(interaction) -> answer | None``: how the host answers (``None``: not at all);
#: may be async (to answer late).
Policy = Callable[[Interaction], Awaitable[Answer | None] | Answer | None]


class Host:
    """A host attached to every session of the bench: decodes every event strictly (the
    wire schema's :class:`EventEnvelope`) and answers interactions by ``policy``."""

    congested = False

    def __init__(self) -> None:
        self.events: list[EventEnvelope] = []
        self.undecodable: list[str] = []
        self.asked: list[Interaction] = []
        self.policy: Policy = lambda _interaction: None
        self.runtime: Runtime | None = None
        self.changed = anyio.Event()

    def publish(self, events: Released) -> bool:
        for envelope in events.bodies:
            try:
                self.events.append(_decode_envelope(envelope))
            except msgspec.ValidationError as exc:
                self.undecodable.append(str(exc))
        self._poke()
        return False

    def _poke(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    async def drained(self) -> None:
        return None

    def can_answer(self, kind: str) -> bool:
        return True

    async def ask(self, interaction: Interaction) -> None:
        self.asked.append(interaction)
        self._poke()
        answer = await maybe_await(self.policy(interaction))
        if answer is not None and interaction.pending and self.runtime is not None:
            self.runtime.respond(interaction.interaction_id, answer)

    def of_run(self, run_id: str) -> list[EventEnvelope]:
        """The events of run ``run_id``, in order."""
        return [e for e in self.events if e.run_id == run_id]

    async def until(self, predicate: Callable[[], bool], timeout: float, what: str) -> None:
        """Wait until ``predicate()``; raise :class:`ConformanceFailure` after ``timeout``."""
        with anyio.move_on_after(timeout):
            while not predicate():
                await self.changed.wait()
            return
        raise ConformanceFailure(f"timed out after {timeout:g}s waiting for {what}")


@dataclass
class RunRecord:
    """One run as the host saw it."""

    run_id: str
    events: list[EventEnvelope]

    @property
    def types(self) -> list[str]:
        return [kind(e) for e in self.events]

    @property
    def terminals(self) -> list[EventEnvelope]:
        return [e for e in self.events if kind(e) in TERMINAL]

    @property
    def text(self) -> str:
        return "".join(e.payload.text for e in self.events if isinstance(e.payload, TextDelta))


class Bench:
    """A runtime serving one adapter, its host, and the record of its SPI traffic."""

    def __init__(self, adapter: AdapterUnderTest, runtime: Runtime, host: Host, record: SpiRecord):
        self.adapter = adapter
        self.runtime = runtime
        self.host = host
        self.spi = record
        self.provider_id = adapter.provider.id
        self.children_before: set[int] | None = None

    async def children_left(self, grace: float = 2.0) -> set[int]:
        """The child processes started since the session was created that are still
        there (not exited, or exited and not reaped) after ``grace`` seconds; empty
        where processes cannot be listed."""
        before = self.children_before
        left: set[int] = set()
        with anyio.move_on_after(grace):
            while True:
                now = child_pids()
                if now is None or before is None:
                    return set()
                left = now - before
                if not left:
                    return left
                await anyio.sleep(0.05)
        return left

    async def create_session(self) -> str:
        """Create a session of the adapter's provider; return its id.  The child processes
        this process had before are remembered (see :meth:`children_left`)."""
        self.children_before = child_pids()
        info = await self.runtime.create_session(
            self.provider_id,
            workspace=self.adapter.workspace,
            options=dict(self.adapter.session_options),
            subscriber=self.host,
        )
        return info.session_id

    async def start(self, session_id: str, spec: RunSpec) -> str:
        """Start a run of ``spec``; return its id."""
        result = await self.runtime.start_run(
            RunStartParams(session_id, RunInput(spec.text), dict(spec.options))
        )
        return result.run_id

    def terminal_of(self, run_id: str) -> EventEnvelope | None:
        for event in self.host.events:
            if event.run_id == run_id and kind(event) in TERMINAL:
                return event
        return None

    async def finished(self, run_id: str) -> RunRecord:
        """Wait for the run's terminal event; return the run as the host saw it."""
        await self.host.until(
            lambda: self.terminal_of(run_id) is not None,
            self.adapter.timeout,
            f"the terminal event of {run_id}",
        )
        await anyio.sleep(0)
        return RunRecord(run_id, self.host.of_run(run_id))

    async def run(self, session_id: str, spec: RunSpec) -> RunRecord:
        """Start a run of ``spec`` and wait for its end."""
        return await self.finished(await self.start(session_id, spec))

    async def started(self, run_id: str, content: bool) -> None:
        """Wait until the run is under way: its first content event (``content``) or an
        interaction offered to the host, else its ``run.started``."""

        def ready() -> bool:
            if self.terminal_of(run_id) is not None:
                return True
            if any(i.run_id == run_id for i in self.host.asked):
                return True
            types = {kind(e) for e in self.host.of_run(run_id)}
            return bool(types - {"run.started"}) if content else "run.started" in types

        await self.host.until(ready, self.adapter.timeout, f"{run_id} to be under way")

    def contract_diagnostics(self) -> list[EventEnvelope]:
        """Every ``provider_contract`` diagnostic the runtime published."""
        return [
            e
            for e in self.host.events
            if isinstance(e.payload, Diagnostic) and e.payload.code == "provider_contract"
        ]

    def provider_session(self, index: int = 0) -> ProviderSession:
        """The adapter's own session object number ``index`` (unwrapped)."""
        return self.spi.sessions[index].inner


@asynccontextmanager
async def bench(adapter: AdapterUnderTest) -> AsyncIterator[Bench]:
    """A :class:`Bench` for ``adapter``; every session is closed at the end."""
    record = SpiRecord()
    registry = ProviderRegistry([_Provider(adapter.provider, record)], load_entry_points=False)
    host = Host()
    async with Runtime(
        registry,
        interrupt_grace=adapter.interrupt_grace,
        dispose_timeout=adapter.timeout,
    ) as runtime:
        host.runtime = runtime
        yield Bench(adapter, runtime, host, record)
