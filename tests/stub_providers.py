"""What the tests' in-process stub providers describe themselves as."""

from __future__ import annotations

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
