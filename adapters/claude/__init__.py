"""The Claude Code provider (id ``claude-code``): the ``claude`` CLI as a resident child per
session, driven in bidirectional stream-json mode.

* :mod:`adapters.claude.config` — options, environment passthrough, executable discovery,
  argv;
* :mod:`adapters.claude.protocol` — the frames and their mapping (pure functions);
* :mod:`adapters.claude.session` — the session (child process, reader, control-request
  ledger, permission interactions) and its runs;
* :mod:`adapters.claude.probe` — ``providers/list`` discovery.

See ``docs/providers/claude-code.md`` ("Adapter") for the options, the mapping and the
limits.
"""

from __future__ import annotations

import os
from typing import Any, Final

from agent_bridge.adapters.claude.config import OPTIONS, launch_config, valid_session_id
from agent_bridge.adapters.claude.probe import probe_cli
from agent_bridge.adapters.claude.session import ClaudeRun, ClaudeSession
from agent_bridge.errors import BridgeError
from agent_bridge.spi import AgentProvider, ProviderSession, SessionContext
from agent_bridge.wire.providers import (
    ApprovalCapability,
    Availability,
    Capabilities,
    InteractionCapabilities,
    ProviderDescriptor,
    QuestionCapability,
    RecoveryCapability,
    RunCapabilities,
)

__all__ = ["ClaudeCodeProvider", "ClaudeRun", "ClaudeSession"]

VERSION: Final = "1.0.0"


class ClaudeCodeProvider(AgentProvider):
    """Claude Code through its CLI (``claude``)."""

    id = "claude-code"

    def describe(self) -> ProviderDescriptor:
        return ProviderDescriptor(
            id=self.id,
            display_name="Claude Code",
            version=VERSION,
            maturity="verified",
            capabilities=Capabilities(
                run=RunCapabilities(interrupt="cooperative", steer=False, max_concurrent_runs=1),
                interactions=InteractionCapabilities(
                    approval=ApprovalCapability(supported=True, modes=("once", "session")),
                    question=QuestionCapability(supported=True, question_set=True),
                ),
                recovery=RecoveryCapability(resume=True),
            ),
            options=OPTIONS,
        )

    async def probe(self) -> Availability:
        return await probe_cli()

    async def create_session(self, ctx: SessionContext) -> ProviderSession:
        config = launch_config(ctx.options, ctx.workspace)
        session = ClaudeSession(ctx, config)
        await session.start()
        return session

    async def resume_session(self, ctx: SessionContext, opaque: Any) -> ProviderSession:
        if not isinstance(opaque, dict) or opaque.get("v") != 1:
            raise BridgeError("recovery_invalid")
        session_id = opaque.get("sessionId")
        cwd = opaque.get("cwd")
        config_dir = opaque.get("configDir")
        usage = opaque.get("usage")
        if (
            (session_id is not None and not valid_session_id(session_id))
            or not isinstance(cwd, str)
            or (config_dir is not None and not isinstance(config_dir, str))
            or (usage is not None and not isinstance(usage, dict))
        ):
            raise BridgeError("recovery_invalid")
        workspace = ctx.workspace
        if workspace is None:
            # The CLI keeps transcripts per working directory: resume where it ran.
            if not os.path.isdir(cwd):
                raise BridgeError("recovery_invalid")
            workspace = cwd
        config = launch_config(ctx.options, workspace, recorded_config_dir=config_dir)
        session = ClaudeSession(ctx, config, cli_session_id=session_id, usage=usage)
        await session.start(resume=session_id)
        return session
