"""The tests' in-process stub providers: what they describe themselves as
(:func:`stub_descriptor`), and one whose every run is a body the test writes
(:class:`BodyProvider`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from agent_bridge.spi import (
    AgentProvider,
    ProviderRun,
    ProviderSession,
    RunContext,
    RunOutcome,
    SessionContext,
)
from agent_bridge.wire.methods import RunInput
from agent_bridge.wire.providers import (
    ApprovalCapability,
    Capabilities,
    InteractionCapabilities,
    NativeSessionsCapability,
    ProviderDescriptor,
    QuestionCapability,
    RecoveryCapability,
    RunCapabilities,
)


def stub_descriptor(provider_id: str, display_name: str) -> ProviderDescriptor:
    """Return the descriptor of a ``stub`` provider with no interrupt, no interactions and
    no recovery (the runtime's defaults are what such a test exercises)."""
    return ProviderDescriptor(
        id=provider_id,
        display_name=display_name,
        version="0",
        maturity="stub",
        capabilities=Capabilities(
            run=RunCapabilities(interrupt="unsupported"),
            interactions=InteractionCapabilities(
                approval=ApprovalCapability(supported=False),
                question=QuestionCapability(supported=False),
            ),
            recovery=RecoveryCapability(resume=False),
            native_sessions=NativeSessionsCapability.unsupported(),
        ),
    )


#: a stub run's body: what it does with its context (the run then completes)
RunBody = Callable[[RunContext], Awaitable[Any]]


class _BodyRun(ProviderRun):
    def __init__(self, ctx: RunContext, body: RunBody) -> None:
        self.ctx = ctx
        self.body = body

    async def wait(self) -> RunOutcome:
        await self.body(self.ctx)
        return RunOutcome.completed()

    async def interrupt(self, reason: str) -> None:
        return None


class _BodySession(ProviderSession):
    def __init__(self, provider: BodyProvider) -> None:
        self.provider = provider

    async def start_run(self, input: RunInput, options: Any, ctx: RunContext) -> ProviderRun:
        self.provider.contexts.append(ctx)
        return _BodyRun(ctx, self.provider.body)

    def export_recovery_record(self) -> Any:
        return None

    async def dispose(self) -> None:
        return None


class BodyProvider(AgentProvider):
    """A stub provider (:func:`stub_descriptor`) whose every run awaits ``body(ctx)`` and
    then completes; :attr:`contexts` keeps each run's context, in order."""

    def __init__(self, body: RunBody, provider_id: str = "body", display_name: str = "Body"):
        self.id = provider_id
        self.display_name = display_name
        self.body = body
        self.contexts: list[RunContext] = []

    def describe(self) -> ProviderDescriptor:
        return stub_descriptor(self.id, self.display_name)

    async def create_session(self, ctx: SessionContext) -> ProviderSession:
        return _BodySession(self)
